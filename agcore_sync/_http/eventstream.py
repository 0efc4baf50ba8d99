"""AWS event-stream decoding (``application/vnd.amazon.eventstream``), incremental and bounded.

The binary framing Amazon Bedrock's ``ConverseStream`` answers with: each
message is

- a 12-byte prelude: the total length and the headers length (big-endian
  unsigned 32-bit) and the CRC-32 of those 8 bytes;
- the headers: a 1-byte name length, the name (UTF-8), a 1-byte value type
  and the value (bool true/false, byte, short, int, long, byte array and
  string with a 2-byte length, timestamp in milliseconds, UUID);
- the payload;
- the CRC-32 of everything before it.

:class:`EventStreamDecoder` takes the body's bytes as they come off the
socket, in chunks of any size (a message split at any byte is whole once
its last byte arrives), checks both CRCs with :func:`zlib.crc32` and returns
the complete messages. Memory is bounded like the SSE parser's: a message
whose prelude announces more than ``max_event_size`` bytes raises
:class:`EventStreamTooLarge` before any of it is buffered. A corrupt frame
(a CRC that does not match, a length or a header that does not fit) raises
:class:`EventStreamError`; :meth:`EventStreamDecoder.close` raises it for a
body that ends inside a frame. Callers turn both into their own typed error.

This module does no I/O.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from typing import Any, Dict, List, NamedTuple

__all__ = [
    "DEFAULT_MAX_EVENT_SIZE",
    "EventStreamError",
    "EventStreamTooLarge",
    "EventStreamMessage",
    "EventStreamDecoder",
]

#: The most bytes one message may hold unless the decoder is given another
#: limit; the same figure as the SSE parser's bound.
DEFAULT_MAX_EVENT_SIZE = 32 * 1024 * 1024

_PRELUDE = struct.Struct(">III")
_PRELUDE_SIZE = 12
_CRC_SIZE = 4
_MIN_SIZE = _PRELUDE_SIZE + _CRC_SIZE
_U32 = struct.Struct(">I")
# The most distinct header blocks a decoder keeps parsed.
_PARSED_LIMIT = 64
_U16 = struct.Struct(">H")
_FIXED = {2: struct.Struct(">b"), 3: struct.Struct(">h"), 4: struct.Struct(">i"), 5: struct.Struct(">q"),
          8: struct.Struct(">q")}


class EventStreamError(ValueError):
    """A frame is corrupt or cut: the stream cannot be read further."""


class EventStreamTooLarge(EventStreamError):
    """A message announced more bytes than the decoder's limit.

    Attributes:
        limit: the limit in bytes.
    """

    def __init__(self, limit: int) -> None:
        super().__init__(f"an event-stream message is larger than the limit of {limit} bytes")
        self.limit = limit


class EventStreamMessage(NamedTuple):
    """One decoded message.

    ``headers`` maps each header name (``:message-type``, ``:event-type``...)
    to its value (str, bytes, bool, int or :class:`uuid.UUID`); ``payload``
    is the payload bytes (JSON for Bedrock).
    """

    headers: Dict[str, Any]
    payload: bytes


def _headers(data: bytes, start: int, end: int) -> Dict[str, Any]:
    headers: Dict[str, Any] = {}
    try:
        while start < end:
            size = data[start]
            start += 1
            name = data[start:start + size].decode("utf-8")
            start += size
            kind = data[start]
            start += 1
            value: Any
            if kind == 7 or kind == 6:
                (length,) = _U16.unpack_from(data, start)
                start += 2
                value = data[start:start + length]
                start += length
                if kind == 7:
                    value = value.decode("utf-8")
            elif kind == 0:
                value = True
            elif kind == 1:
                value = False
            elif kind == 9:
                value = uuid.UUID(bytes=data[start:start + 16])
                start += 16
            else:
                fixed = _FIXED.get(kind)
                if fixed is None:
                    raise EventStreamError(f"an event-stream header has the unknown value type {kind}")
                (value,) = fixed.unpack_from(data, start)
                start += fixed.size
            headers[name] = value
    except (IndexError, struct.error, UnicodeDecodeError, ValueError) as exc:
        if isinstance(exc, EventStreamError):
            raise
        raise EventStreamError("an event-stream message has malformed headers") from None
    if start != end:
        raise EventStreamError("an event-stream message's headers overrun their length")
    return headers


class EventStreamDecoder:
    """Incremental event-stream decoder: ``feed(chunk)`` bytes in, messages out.

    One decoder per stream; not thread-safe. After it raised, it is unusable.

    Args:
        max_event_size: the most bytes one message may announce (see the
            module docstring).
    """

    __slots__ = ("_limit", "_pending", "_parsed")

    def __init__(self, max_event_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        self._limit = max_event_size
        # Bytes of a message not complete yet (empty between messages).
        self._pending = bytearray()
        # Header blocks seen -> their parsed dict. The messages of a stream
        # repeat a handful of header blocks (one per event type), so each
        # is parsed once; bounded, so varied headers cost no memory.
        self._parsed: Dict[bytes, Dict[str, Any]] = {}

    def feed(self, chunk: bytes) -> List[EventStreamMessage]:
        """Decode one chunk of bytes; return the messages it completed.

        Raises:
            EventStreamError: a CRC that does not match, or lengths or
                headers that do not fit.
            EventStreamTooLarge: a message longer than the limit.
        """
        pending = self._pending
        if pending:
            pending += chunk
            if len(pending) < _PRELUDE_SIZE:
                return []
            total = self._check_prelude(pending)
            if len(pending) < total:
                # Still inside one message: no copy, so a long message read
                # in many chunks costs linear time.
                return []
            data: bytes = bytes(pending)
        else:
            data = chunk
        messages: List[EventStreamMessage] = []
        offset = 0
        available = len(data)
        limit = self._limit
        crc32 = zlib.crc32
        parsed = self._parsed
        view = memoryview(data)
        while available - offset >= _PRELUDE_SIZE:
            total, header_size, prelude_crc = _PRELUDE.unpack_from(data, offset)
            if crc32(view[offset:offset + 8]) != prelude_crc:
                raise EventStreamError("an event-stream prelude failed its CRC check")
            if total < _MIN_SIZE or header_size > total - _MIN_SIZE:
                raise EventStreamError(f"an event-stream prelude announces impossible lengths ({total}, {header_size})")
            if total > limit:
                raise EventStreamTooLarge(limit)
            end = offset + total
            if end > available:
                break
            (message_crc,) = _U32.unpack_from(data, end - _CRC_SIZE)
            if crc32(view[offset:end - _CRC_SIZE]) != message_crc:
                raise EventStreamError("an event-stream message failed its CRC check")
            header_start = offset + _PRELUDE_SIZE
            payload_start = header_start + header_size
            block = data[header_start:payload_start]
            headers = parsed.get(block)
            if headers is None:
                headers = _headers(block, 0, header_size)
                if len(parsed) < _PARSED_LIMIT:
                    parsed[block] = headers
            messages.append(EventStreamMessage(dict(headers), data[payload_start:end - _CRC_SIZE]))
            offset = end
        view.release()
        if offset == available:
            pending.clear()
        elif pending:
            del pending[:offset]
        else:
            pending += data[offset:]
        return messages

    def _check_prelude(self, data: bytearray) -> int:
        total, header_size, prelude_crc = _PRELUDE.unpack_from(data, 0)
        if zlib.crc32(data[:8]) != prelude_crc:
            raise EventStreamError("an event-stream prelude failed its CRC check")
        if total < _MIN_SIZE or header_size > total - _MIN_SIZE:
            raise EventStreamError(f"an event-stream prelude announces impossible lengths ({total}, {header_size})")
        if total > self._limit:
            raise EventStreamTooLarge(self._limit)
        return total

    @property
    def buffered(self) -> int:
        """Bytes held of a message not complete yet."""
        return len(self._pending)

    def close(self) -> None:
        """End the input.

        Raises:
            EventStreamError: the input ended inside a message (a cut frame).
        """
        if self._pending:
            size = len(self._pending)
            self._pending.clear()
            raise EventStreamError(f"the event stream ended inside a message ({size} bytes of it)")
