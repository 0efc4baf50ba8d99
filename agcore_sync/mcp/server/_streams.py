"""SSE event streams of the Streamable HTTP app, kept so a client can resume them (``Last-Event-ID``).

An :class:`EventStream` is the answer to one POST (its notifications,
server-to-client requests and responses) or a session's GET stream. Events
are kept until the session ends (at most :data:`MAX_EVENTS` per stream), so
a client that lost the connection resumes with a GET naming the last event
id it saw. Readers follow a stream from a position, blocking in
``Condition.wait`` with a bound, and send a keep-alive comment while idle.
"""

from __future__ import annotations

import threading
from typing import Any, Dict, Iterator, List, Optional, Tuple

from agcore_sync.mcp.shared import jsonrpc

__all__ = ["EventStream", "KEEPALIVE_SECS", "RETRY_MS", "MAX_EVENTS", "parse_event_id", "SSE_OPEN"]

#: Idle seconds after which a reader sends a comment (finds clients gone).
KEEPALIVE_SECS = 15.0
#: The reconnection delay the priming event asks of clients (milliseconds).
RETRY_MS = 1000
#: Events kept per stream for resumption; older ones are dropped.
MAX_EVENTS = 10000
#: The comment every SSE answer starts with, so the WSGI server sends its headers at once.
SSE_OPEN = b": agcore-mcp\n\n"


def _encode(message: Dict[str, Any]) -> bytes:
    try:
        return jsonrpc.encode(message)
    except (TypeError, ValueError) as exc:
        return jsonrpc.encode(jsonrpc.error_response(message.get("id"), jsonrpc.INTERNAL_ERROR,
                                                     f"the answer has no JSON form: {exc}"))


def parse_event_id(value: str) -> Optional[Tuple[str, int]]:
    """Split an event id ``<stream>_<n>`` into ``(stream, n)``; None if it is not one of ours."""
    stream, sep, number = value.rpartition("_")
    if not sep or not number.isdigit():
        return None
    return stream, int(number)


class EventStream:
    """One SSE stream's events and whether it is finished (see the module docstring)."""

    def __init__(self, stream_id: str) -> None:
        self.id = stream_id
        self._cond = threading.Condition()
        self._events: List[bytes] = []
        self._dropped = 0
        self._finished = False
        self._cuts = 0
        # Set by the first push, finish or cut: the answer's form is then known.
        self._first = threading.Event()
        self._only: Optional[Dict[str, Any]] = None

    def push(self, message: Dict[str, Any]) -> None:
        """Append one JSON-RPC message as an event and wake the readers."""
        data = _encode(message)
        with self._cond:
            self._append(message, data)
        self._first.set()

    def _append(self, message: Dict[str, Any], data: bytes) -> None:
        number = self._dropped + len(self._events) + 1
        self._events.append(b"id: %s_%d\nevent: message\ndata: %s\n" % (self.id.encode(), number, data))
        if len(self._events) > MAX_EVENTS:
            del self._events[0]
            self._dropped += 1
        self._only = message if number == 1 else None
        self._cond.notify_all()

    def priming(self) -> bytes:
        """Return the priming event: the stream's first id, a retry delay, and empty data."""
        return b"id: %s_0\nretry: %d\ndata: \n\n" % (self.id.encode(), RETRY_MS)

    def finish(self, last: Optional[Dict[str, Any]] = None) -> None:
        """Append ``last`` (if given) and end the stream at once; readers end after the last event."""
        data = _encode(last) if last is not None else None
        with self._cond:
            if last is not None:
                self._append(last, data)  # type: ignore[arg-type]
            self._finished = True
            self._cond.notify_all()
        self._first.set()

    def cut(self) -> None:
        """End the readers now (they leave after the events so far); the stream itself goes on."""
        with self._cond:
            self._cuts += 1
            self._only = None
            self._cond.notify_all()
        self._first.set()

    def sole_answer(self) -> Optional[Dict[str, Any]]:
        """Wait for the stream's first event; return its message if it is the whole (finished, uncut) stream."""
        self._first.wait()
        with self._cond:
            if self._finished and not self._cuts and self._dropped + len(self._events) == 1:
                return self._only
        return None

    def follow(self, after: int, closed: threading.Event) -> Iterator[bytes]:
        """Yield the events numbered above ``after``, then new ones, until finished, cut or ``closed``."""
        position = max(after, 0)
        with self._cond:
            cuts = self._cuts
        while True:
            with self._cond:
                while True:
                    available = self._dropped + len(self._events)
                    if position < available or self._finished or self._cuts != cuts or closed.is_set():
                        break
                    if not self._cond.wait(KEEPALIVE_SECS):
                        break
                start = max(position - self._dropped, 0)
                chunk = self._events[start:]
                position = self._dropped + len(self._events)
                done = self._finished or self._cuts != cuts or closed.is_set()
            if chunk:
                yield b"".join(event + b"\n" for event in chunk)
            elif not done:
                yield b": keep-alive\n\n"
            if done:
                return
