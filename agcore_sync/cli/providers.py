"""The providers the command line offers with ``--provider``: the one list its messages are written from.

A provider added to :data:`PROVIDERS` is a choice of ``--provider`` and
appears in every message that names the choices (the usage errors, the
demo model's help text).
"""

from __future__ import annotations

from typing import Tuple

__all__ = ["PROVIDERS", "provider_options"]

#: The values of ``--provider``, in the order the help and the messages list them.
PROVIDERS: Tuple[str, ...] = ("openai", "openai-responses", "anthropic", "gemini", "vertex", "bedrock")

#: The providers that speak the OpenAI wire format (their servers' API root ends in ``/v1``).
OPENAI_COMPATIBLE: Tuple[str, ...] = ("openai", "openai-responses")


def provider_options(providers: Tuple[str, ...] = PROVIDERS) -> str:
    """Return the choices as a reader is told them: ``--provider a, --provider b or --provider c``.

    Args:
        providers: the choices (default: :data:`PROVIDERS`).
    """
    options = [f"--provider {name}" for name in providers]
    if len(options) < 2:
        return "".join(options)
    return f"{', '.join(options[:-1])} or {options[-1]}"
