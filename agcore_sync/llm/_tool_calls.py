"""Tool-call ids and argument text as the providers read them off the wire.

Two repairs made once, where a response is parsed, so that every event and
block after it carries the repaired value:

- An id. Some OpenAI-compatible servers send a tool call without an id, or
  with ``""``; two such calls would go back with the same empty
  ``tool_call_id`` and the model could not tell their results apart. A call
  whose id is missing, blank, or already taken by an earlier call of the same
  response gets a new unique one (:func:`new_tool_call_id`).
- Empty arguments. A call with no arguments (Anthropic ``input: {}`` with no
  or empty ``input_json_delta``, OpenAI ``""``) has the arguments ``"{}"``,
  so ``json.loads`` works on every ``ToolCallEnd.arguments``.

:func:`parse_tool_arguments` turns that text into the arguments of a
``ToolUseBlock``; it lives here, not beside the stream accumulator that also
uses it, so a provider's plain ``chat`` does not load the stream events.
"""

from __future__ import annotations

import os
import re
from typing import Any, Set

from agcore_sync._http import peer_json

__all__ = ["new_tool_call_id", "ToolCallIds", "arguments_text", "parse_tool_arguments", "wire_tool_id"]

# Anthropic's rule for tool_use ids; OpenAI's ids (call_..., fc_...) keep to it.
_SAFE_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def new_tool_call_id(prefix: str = "call_") -> str:
    """Return a new tool-call id: ``prefix`` and 24 random hex digits."""
    return prefix + os.urandom(12).hex()  # what secrets.token_hex(12) returns, without loading secrets


def wire_tool_id(tool_id: str) -> str:
    """Return ``tool_id`` as an API that allows only ``[A-Za-z0-9_-]{1,64}`` takes it.

    Ids that keep the rule (Anthropic's ``toolu_...``, OpenAI's ``call_...``)
    are unchanged; any other (an OpenAI-compatible server's ``"functions.add:0"``)
    maps to the same safe id every time, so a call and its result stay
    paired when a session moves between providers.
    """
    if _SAFE_ID.match(tool_id):
        return tool_id
    import hashlib  # only for such an id: loading it brings in OpenSSL (3.6 MB) in a program without requests

    digest = hashlib.sha256(tool_id.encode("utf-8")).hexdigest()[:16]
    return (re.sub(r"[^A-Za-z0-9_-]", "_", tool_id)[:40] + "_" + digest).lstrip("_") or digest


def arguments_text(text: str) -> str:
    """Return a tool call's JSON argument text, ``"{}"`` when it is empty or blank."""
    return text if text.strip() else "{}"


def parse_tool_arguments(arguments: str) -> Any:
    """Parse a tool call's JSON argument string.

    An empty string is ``{}``; text that is not valid JSON, holds ``NaN`` or
    ``Infinity``, or nests deeper than
    :data:`~agcore_sync._http.peer_json.MAX_DEPTH` is returned as it is, so
    the registry refuses it as invalid arguments (the tool never runs).
    """
    if not arguments.strip():
        return {}
    try:
        return peer_json.loads(arguments)
    except ValueError:
        return arguments


class ToolCallIds:
    """Gives the tool calls of one response unique, non-empty ids.

    One per response being parsed; not thread-safe (a response is parsed by
    one thread).

    Args:
        prefix: the prefix of generated ids (``call_`` as OpenAI's,
            ``toolu_`` as Anthropic's).
    """

    __slots__ = ("_prefix", "_taken")

    def __init__(self, prefix: str = "call_") -> None:
        self._prefix = prefix
        self._taken: Set[str] = set()

    def take(self, wire_id: Any) -> str:
        """Return the id for the next call: the server's if usable, else a new one.

        Args:
            wire_id: the id the server sent (None, ``""``, a string, or
                another scalar, which is used as its string form).
        """
        if isinstance(wire_id, bool) or wire_id is None:
            text = ""
        else:
            text = wire_id if isinstance(wire_id, str) else str(wire_id)
        if not text.strip() or text in self._taken:
            text = new_tool_call_id(self._prefix)
        self._taken.add(text)
        return text
