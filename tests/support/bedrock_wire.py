"""Bedrock Converse payloads and AWS event-stream frames, shaped as the service sends them.

The frame encoder is written from the framing's definition (prelude with
its CRC-32, typed headers, payload, message CRC-32), independently of the
decoder under test; botocore's own ``EventStreamBuffer`` reads what it
writes in the corpus tests, which checks the encoder too. Event payloads
carry the ``p`` padding field Bedrock adds to every event.
"""

from __future__ import annotations

import json
import struct
import zlib
from typing import Any, Dict, List, Mapping, Optional, Sequence

__all__ = [
    "encode_frame",
    "event",
    "exception_frame",
    "message_start",
    "text_delta",
    "reasoning_delta",
    "tool_start",
    "tool_delta",
    "block_stop",
    "message_stop",
    "metadata",
    "text_stream",
    "converse_response",
    "usage",
    "REQUEST_ID",
]

#: The request id the test servers answer with.
REQUEST_ID = "9a3b1c9e-52f0-4d8e-b5c8-1f3e0a6b7c2d"

_PAD = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def _header(name: str, value: Any) -> bytes:
    raw_name = name.encode("utf-8")
    head = struct.pack(">B", len(raw_name)) + raw_name
    if isinstance(value, bool):
        return head + (b"\x00" if value else b"\x01")
    if isinstance(value, int):
        return head + b"\x04" + struct.pack(">i", value)
    if isinstance(value, bytes):
        return head + b"\x06" + struct.pack(">H", len(value)) + value
    raw = str(value).encode("utf-8")
    return head + b"\x07" + struct.pack(">H", len(raw)) + raw


def encode_frame(headers: Mapping[str, Any], payload: bytes) -> bytes:
    """Return one event-stream message (str headers as strings, int as int32, bytes as byte arrays)."""
    header_bytes = b"".join(_header(k, v) for k, v in headers.items())
    total = 12 + len(header_bytes) + len(payload) + 4
    prelude = struct.pack(">II", total, len(header_bytes))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + header_bytes + payload
    return body + struct.pack(">I", zlib.crc32(body))


def event(event_type: str, payload: Dict[str, Any], *, pad: int = 8) -> bytes:
    """Return an ``event`` frame of ``event_type`` with a JSON payload (padded as Bedrock pads)."""
    data = dict(payload)
    if pad:
        data["p"] = _PAD[:pad]
    return encode_frame({":event-type": event_type, ":content-type": "application/json", ":message-type": "event"},
                        json.dumps(data, ensure_ascii=False).encode("utf-8"))


def exception_frame(exception_type: str, message: str) -> bytes:
    """Return an ``exception`` frame (``throttlingException``, ``modelStreamErrorException``...)."""
    return encode_frame({":exception-type": exception_type, ":content-type": "application/json",
                         ":message-type": "exception"}, json.dumps({"message": message}).encode("utf-8"))


def message_start() -> bytes:
    """Return ``messageStart``."""
    return event("messageStart", {"role": "assistant"})


def text_delta(index: int, text: str) -> bytes:
    """Return a text ``contentBlockDelta``."""
    return event("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": text}})


def reasoning_delta(index: int, *, text: Optional[str] = None, signature: Optional[str] = None,
                    redacted: Optional[str] = None) -> bytes:
    """Return a ``reasoningContent`` delta (text, signature or redactedContent as base64)."""
    delta: Dict[str, Any] = {}
    if text is not None:
        delta["text"] = text
    if signature is not None:
        delta["signature"] = signature
    if redacted is not None:
        delta["redactedContent"] = redacted
    return event("contentBlockDelta", {"contentBlockIndex": index, "delta": {"reasoningContent": delta}})


def tool_start(index: int, tool_use_id: str, name: str) -> bytes:
    """Return a ``contentBlockStart`` of a tool use."""
    return event("contentBlockStart", {"contentBlockIndex": index,
                                       "start": {"toolUse": {"toolUseId": tool_use_id, "name": name}}})


def tool_delta(index: int, piece: str) -> bytes:
    """Return a tool-input ``contentBlockDelta``."""
    return event("contentBlockDelta", {"contentBlockIndex": index, "delta": {"toolUse": {"input": piece}}})


def block_stop(index: int) -> bytes:
    """Return ``contentBlockStop``."""
    return event("contentBlockStop", {"contentBlockIndex": index})


def message_stop(reason: str = "end_turn") -> bytes:
    """Return ``messageStop``."""
    return event("messageStop", {"stopReason": reason})


def usage(input_tokens: int, output_tokens: int, cache_read: int = 0, cache_write: int = 0) -> Dict[str, Any]:
    """Return a ``usage`` object (totalTokens as Bedrock counts it)."""
    data: Dict[str, Any] = {"inputTokens": input_tokens, "outputTokens": output_tokens,
                            "totalTokens": input_tokens + output_tokens + cache_read + cache_write}
    if cache_read or cache_write:
        data["cacheReadInputTokens"] = cache_read
        data["cacheWriteInputTokens"] = cache_write
    return data


def metadata(input_tokens: int, output_tokens: int, cache_read: int = 0, cache_write: int = 0) -> bytes:
    """Return ``metadata`` with usage and metrics (the stream's last event)."""
    return event("metadata", {"usage": usage(input_tokens, output_tokens, cache_read, cache_write),
                              "metrics": {"latencyMs": 412}}, pad=0)


def text_stream(pieces: Sequence[str], tokens: Sequence[int] = (12, 5)) -> List[bytes]:
    """Return the frames of a plain text answer."""
    frames = [message_start()]
    frames += [text_delta(0, piece) for piece in pieces]
    frames += [block_stop(0), message_stop("end_turn"), metadata(tokens[0], tokens[1])]
    return frames


def converse_response(content: List[Dict[str, Any]], stop_reason: str = "end_turn",
                      tokens: Sequence[int] = (12, 5), **usage_extra: int) -> Dict[str, Any]:
    """Return a Converse answer body."""
    return {"output": {"message": {"role": "assistant", "content": content}}, "stopReason": stop_reason,
            "usage": usage(tokens[0], tokens[1], **usage_extra), "metrics": {"latencyMs": 380}}


#: The dummy credentials every Bedrock test signs with (AWS's documentation example).
ACCESS_KEY = "AKIDEXAMPLE"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
REGION = "us-east-1"


def isolate_aws(monkeypatch: Any, tmp_path: Any, *, credentials: bool = True, region: bool = True) -> None:
    """Point botocore at empty config files, no metadata service, and (optionally) the dummy credentials."""
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", raising=False)
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", raising=False)
    if credentials:
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    if region:
        monkeypatch.setenv("AWS_REGION", REGION)


#: Headers of a Converse answer.
JSON_HEADERS = {"Content-Type": "application/json", "x-amzn-RequestId": REQUEST_ID}
#: Headers of a ConverseStream answer.
STREAM_HEADERS = {"Content-Type": "application/vnd.amazon.eventstream", "x-amzn-RequestId": REQUEST_ID}


def json_body(data: Any) -> bytes:
    """Return ``data`` as a JSON body."""
    return json.dumps(data).encode("utf-8")
