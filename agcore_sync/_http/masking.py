"""Keeping a secret out of text and parsed JSON: the one masking rule.

A server may echo the credential it was sent (an API key in an error body, a
malformed chunk, a proxy's error page). Whatever a client puts in an
exception, a log line or an error's ``body`` goes through a :class:`Masker`
first, which replaces every occurrence of the secret with :data:`MASK`.
"""

from __future__ import annotations

from typing import Any, Optional

__all__ = ["MASK", "Masker", "mask"]

#: Placeholder that replaces a secret wherever it would appear.
MASK = "***"


def mask(text: str, secret: Optional[str]) -> str:
    """Return ``text`` with every occurrence of ``secret`` replaced by :data:`MASK`."""
    if secret and secret in text:
        return text.replace(secret, MASK)
    return text


class Masker:
    """Masks one secret (or none) in text and in parsed JSON values.

    Its ``repr`` never shows the secret, so a masker can sit in any object.

    Args:
        secret: the value to hide; None or ``""`` masks nothing.
    """

    __slots__ = ("_secret",)

    def __init__(self, secret: Optional[str]) -> None:
        self._secret = secret or None

    def __repr__(self) -> str:
        return f"Masker({MASK if self._secret else None})"

    def text(self, text: str) -> str:
        """Return ``text`` with the secret replaced by :data:`MASK`."""
        return mask(text, self._secret)

    def json(self, value: Any) -> Any:
        """Return a copy of ``value`` (parsed JSON) with the secret masked in every string, keys too."""
        secret = self._secret
        if not secret:
            return value
        if isinstance(value, str):
            return mask(value, secret)
        if isinstance(value, dict):
            return {mask(str(k), secret): self.json(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.json(v) for v in value]
        return value
