"""The part both UI adapters share: a closable iterator of SSE frames made from events.

Each adapter is a :class:`FrameStream` subclass that turns one library
event into zero or more JSON objects (``translate``) and says what ends the
stream (``finish``). The base class frames them as ``data: <json>`` plus a blank line,
and its ``close()`` closes the events it reads, so a browser that leaves
(the WSGI server closes the response iterator) ends the turn.
"""

from __future__ import annotations

import abc
import collections
import json
from typing import Any, Callable, Deque, Dict, Iterable, Iterator, List, Optional

from agcore_sync import _instrument

_log = _instrument.get_logger("agcore_sync.ui")

#: The JSON encoder of every frame: compact, and UTF-8 kept as it is.
_dumps: Callable[[Any], str] = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def frame(chunk: Dict[str, Any]) -> bytes:
    """Return one SSE ``data:`` frame holding ``chunk`` as JSON."""
    return b"data: " + _dumps(chunk).encode("utf-8") + b"\n\n"


class FrameStream(abc.ABC):
    """Iterate the SSE frames of an event iterable; closing it closes the events.

    Subclasses implement :meth:`translate` (one event to its chunks) and
    :meth:`finish` (the chunks that end the stream, given the error that
    ended it, if any).
    """

    __slots__ = ("_events", "_source", "_pending", "_done")

    def __init__(self, events: Iterable[Any]) -> None:
        self._source = events
        self._events: Optional[Iterator[Any]] = None
        self._pending: Deque[bytes] = collections.deque()
        self._done = False

    def __iter__(self) -> FrameStream:
        return self

    def __next__(self) -> bytes:
        while not self._pending:
            if self._done:
                raise StopIteration
            self._fill()
        return self._pending.popleft()

    def _fill(self) -> None:
        if self._events is None:
            self._events = iter(self._source)
            self._pending.extend(frame(chunk) for chunk in self.begin())
            return
        try:
            event = next(self._events)
        except StopIteration:
            self._end(None)
            return
        except Exception as exc:  # the events failed: log it, tell the UI, then end validly
            _log.warning("the events of a UI stream failed: %s", exc, exc_info=True)
            self._end(exc)
            return
        for chunk in self.translate(event):
            self._pending.append(frame(chunk))

    def _end(self, error: Optional[BaseException]) -> None:
        self._done = True
        self._pending.extend(frame(chunk) for chunk in self.finish(error))
        self._pending.extend(self.trailer())

    def close(self) -> None:
        """Stop: close the events (a turn stream ends its turn); idempotent."""
        self._done = True
        self._pending.clear()
        close = getattr(self._source, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> FrameStream:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    # -- what a protocol defines ------------------------------------------------

    def begin(self) -> List[Dict[str, Any]]:
        """Return the chunks that open the stream."""
        return []

    @abc.abstractmethod
    def translate(self, event: Any) -> List[Dict[str, Any]]:
        """Return the chunks of one event (none for an event the protocol has no use for)."""

    def finish(self, error: Optional[BaseException]) -> List[Dict[str, Any]]:
        """Return the chunks that end the stream; ``error`` is what broke the events, if anything."""
        return []

    def trailer(self) -> List[bytes]:
        """Return the raw frames after the last chunk."""
        return []
