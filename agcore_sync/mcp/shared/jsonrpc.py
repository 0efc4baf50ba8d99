"""JSON-RPC 2.0 messages as MCP uses them: building, encoding, parsing.

Messages are plain dicts (the shape on the wire); nothing here does I/O.
:func:`parse_line` turns one line a server wrote into a message and never
raises, whatever the line holds: a line that is not a JSON-RPC message comes
back as a :class:`ParseFailure` for the transport to log and skip.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Union

import attrs

__all__ = [
    "JSONRPC_VERSION",
    "PARSE_ERROR",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "INVALID_PARAMS",
    "INTERNAL_ERROR",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "Message",
    "ParseFailure",
    "request",
    "notification",
    "result_response",
    "error_response",
    "encode",
    "parse_line",
    "is_request",
    "is_notification",
    "is_response",
]

#: The ``jsonrpc`` member of every message.
JSONRPC_VERSION = "2.0"

#: Invalid JSON was received.
PARSE_ERROR = -32700
#: The JSON sent is not a valid request object.
INVALID_REQUEST = -32600
#: The method does not exist or is not available.
METHOD_NOT_FOUND = -32601
#: Invalid method parameters.
INVALID_PARAMS = -32602
#: Internal JSON-RPC error.
INTERNAL_ERROR = -32603
#: MCP 2026-07-28: the server does not speak the requested protocol version
#: (``data`` holds ``supported`` and ``requested``).
UNSUPPORTED_PROTOCOL_VERSION = -32022

#: One decoded JSON-RPC message.
Message = Dict[str, Any]

# Built once: json.dumps with arguments builds a new encoder per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))

# json.loads uses an equal decoder; raw_decode is its part that parses.
_DECODER = json.JSONDecoder()
# What may follow the object on a line for the fast path of parse_line.
_LINE_ENDS = ("\n", "\r\n", "")
# How much of a bad line a ParseFailure keeps, so a 10 MB line of garbage
# does not end up whole in a log record.
_PREVIEW_CHARS = 200


@attrs.frozen
class ParseFailure:
    """A line that is not a JSON-RPC message, returned instead of raising.

    Attributes:
        reason: why the line was rejected.
        preview: the start of the line (at most 200 characters), for logs.
    """

    reason: str
    preview: str


def request(id: int, method: str, params: Optional[Dict[str, Any]] = None) -> Message:  # noqa: A002 - the wire name
    """Build a request; ``params`` is left out when None."""
    message: Message = {"jsonrpc": JSONRPC_VERSION, "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def notification(method: str, params: Optional[Dict[str, Any]] = None) -> Message:
    """Build a notification (a request without an id); ``params`` is left out when None."""
    message: Message = {"jsonrpc": JSONRPC_VERSION, "method": method}
    if params is not None:
        message["params"] = params
    return message


def result_response(id: Any, result: Dict[str, Any]) -> Message:  # noqa: A002 - the wire name
    """Build a successful response to the request ``id``."""
    return {"jsonrpc": JSONRPC_VERSION, "id": id, "result": result}


def error_response(id: Any, code: int, message: str, data: Any = None) -> Message:  # noqa: A002 - the wire name
    """Build an error response to the request ``id``; ``data`` is left out when None."""
    error: Dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": JSONRPC_VERSION, "id": id, "error": error}


def encode(message: Message) -> bytes:
    """Serialise one message as a single UTF-8 line ending in a newline.

    JSON escapes every newline inside strings, so the line holds exactly one
    message, as the stdio transport requires.

    Raises:
        TypeError, ValueError: ``message`` holds something JSON cannot encode.
    """
    return _ENCODER.encode(message).encode("utf-8") + b"\n"


def parse_line(line: Union[bytes, str]) -> Union[Message, List[Message], ParseFailure]:
    """Decode one line into a message, never raising.

    Returns the message (a dict), a list of messages for a JSON-RPC batch
    (which protocol 2025-03-26 allowed), or a :class:`ParseFailure` for
    anything else: invalid UTF-8, invalid or truncated JSON, numbers too long
    to convert, nesting too deep for the parser, or JSON that is not an
    object with ``jsonrpc: "2.0"``.
    """
    try:
        text = line.decode("utf-8") if isinstance(line, (bytes, bytearray)) else line
    except UnicodeDecodeError as exc:
        return ParseFailure(f"invalid UTF-8: {exc.reason}", _preview(line))
    # Fast path for the usual line, one object and its line end: raw_decode
    # skips json.loads' checks and its two whitespace scans. Anything else
    # (leading blanks, trailing data, errors) takes the full path below.
    try:
        value, end = _DECODER.raw_decode(text)
    except Exception:  # noqa: BLE001 - the full path below says what is wrong
        pass
    else:
        if type(value) is dict and value.get("jsonrpc") == JSONRPC_VERSION and text[end:] in _LINE_ENDS:
            return value
    try:
        value = json.loads(text)
    except RecursionError:
        return ParseFailure("JSON nested too deeply", _preview(text))
    except (ValueError, OverflowError) as exc:
        # JSONDecodeError is a ValueError, and so is an integer with more digits
        # than int() accepts (sys.get_int_max_str_digits).
        return ParseFailure(f"not JSON: {exc}", _preview(text))
    if isinstance(value, list):
        if value and all(_is_message(item) for item in value):
            return value
        return ParseFailure("a JSON array that is not a batch of JSON-RPC messages", _preview(text))
    if not _is_message(value):
        return ParseFailure('not a JSON-RPC 2.0 message (expected an object with "jsonrpc": "2.0")', _preview(text))
    return value


def _is_message(value: Any) -> bool:
    return isinstance(value, dict) and value.get("jsonrpc") == JSONRPC_VERSION


def _preview(line: Union[bytes, bytearray, str]) -> str:
    head = line[: _PREVIEW_CHARS * 4]
    text = head.decode("utf-8", errors="replace") if isinstance(head, (bytes, bytearray)) else head
    text = text.rstrip("\r\n")
    return text if len(text) <= _PREVIEW_CHARS else text[:_PREVIEW_CHARS] + "..."


def is_request(message: Message) -> bool:
    """Return True for a request (a ``method`` and an ``id``)."""
    return "method" in message and "id" in message


def is_notification(message: Message) -> bool:
    """Return True for a notification (a ``method`` and no ``id``)."""
    return "method" in message and "id" not in message


def is_response(message: Message) -> bool:
    """Return True for a response (an ``id`` with ``result`` or ``error``, no ``method``)."""
    return "method" not in message and "id" in message and ("result" in message or "error" in message)
