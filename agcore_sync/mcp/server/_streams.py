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

from agcore_sync.tools.mcp import jsonrpc

__all__ = ["EventStream", "KEEPALIVE_SECS", "RETRY_MS", "MAX_EVENTS", "parse_event_id", "SSE_OPEN"]

#: Idle seconds after which a reader sends a comment (finds clients gone).
KEEPALIVE_SECS = 15.0
#: The reconnection delay the priming event asks of clients (milliseconds).
RETRY_MS = 1000
#: Events kept per stream for resumption; older ones are dropped.
MAX_EVENTS = 10000
#: The comment every SSE answer starts with, so the WSGI server sends its headers at once.
SSE_OPEN = b": agcore-mcp\n\n"


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

    def push(self, message: Dict[str, Any]) -> None:
        """Append one JSON-RPC message as an event and wake the readers."""
        try:
            data = jsonrpc.encode(message)
        except (TypeError, ValueError) as exc:
            data = jsonrpc.encode(jsonrpc.error_response(message.get("id"), jsonrpc.INTERNAL_ERROR,
                                                         f"the answer has no JSON form: {exc}"))
        with self._cond:
            number = self._dropped + len(self._events) + 1
            self._events.append(b"id: %s_%d\nevent: message\ndata: %s\n" % (self.id.encode(), number, data))
            if len(self._events) > MAX_EVENTS:
                del self._events[0]
                self._dropped += 1
            self._cond.notify_all()

    def priming(self) -> bytes:
        """Return the priming event: the stream's first id, a retry delay, and empty data."""
        return b"id: %s_0\nretry: %d\ndata: \n\n" % (self.id.encode(), RETRY_MS)

    def finish(self) -> None:
        """No more events will come; readers end after the last one."""
        with self._cond:
            self._finished = True
            self._cond.notify_all()

    def cut(self) -> None:
        """End the readers now (they leave after the events so far); the stream itself goes on."""
        with self._cond:
            self._cuts += 1
            self._cond.notify_all()

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
