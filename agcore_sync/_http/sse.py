"""Server-Sent Events parsing, shared by both providers and the MCP HTTP transport.

Follows the WHATWG "event stream interpretation" rules over raw byte chunks
as they come off the socket:

- UTF-8 is decoded incrementally, so a character split across two network
  reads is whole; a leading BOM is dropped; invalid bytes become U+FFFD.
- Lines end at CRLF, LF or CR (a CR at the end of one chunk and an LF at the
  start of the next are one line end). A CR ends its line at once: an event
  whose last CR ends a chunk is returned by that very ``feed``.
- ``data:`` lines are joined with a newline; ``event:``, ``id:`` (ignored if it
  contains NUL) and ``retry:`` (digits only) are kept; lines starting with
  ``:`` are comments; a blank line dispatches the event, unless it has no
  data; a single space after the colon is removed.

One documented difference: at the end of input, a pending event that has
data is dispatched instead of discarded (a last line without a line end
counts as a line), because a server that closes right after its last
``data:`` line still meant it. A caller that must tell a cut stream from a
finished one checks the data (the providers wait for their end marker).

Memory is bounded: a parser keeps at most ``max_event_size`` characters of
one event (its unfinished line plus its data lines so far) and raises
:class:`EventTooLarge` past that, so a broken or hostile server that sends
one endless line, or data lines without the blank line that ends the event,
costs about that much memory, not the size of what it sends. Each caller
turns the error into its own typed one.

This module does no I/O.
"""

from __future__ import annotations

import codecs
from typing import Iterable, Iterator, List, Optional

import attrs

from agcore_sync._values import value_methods

__all__ = ["DEFAULT_MAX_EVENT_SIZE", "EventTooLarge", "SseEvent", "SseParser", "iter_sse_events"]

#: The most characters one event may hold (its data lines and unfinished
#: line together) unless the parser is given another limit: far above any
#: LLM stream chunk or MCP message, far below what exhausts a machine.
DEFAULT_MAX_EVENT_SIZE = 32 * 1024 * 1024


class EventTooLarge(ValueError):
    """An event grew past the parser's limit; the stream cannot go on.

    Attributes:
        limit: the limit in characters.
    """

    def __init__(self, limit: int) -> None:
        super().__init__(f"an SSE event is larger than the limit of {limit} characters")
        self.limit = limit


@attrs.frozen
@value_methods
class SseEvent:
    """One dispatched event.

    Attributes:
        event: the event type, ``"message"`` when the stream gave none.
        data: the data lines joined with a newline.
        id: the last event id seen so far in the stream (it persists).
        retry: the reconnection time in milliseconds, if this event set one.
    """

    event: str
    data: str
    id: str = ""
    retry: Optional[int] = None


class SseParser:
    """Incremental SSE parser: ``feed(chunk)`` bytes in, events out.

    Call :meth:`close` at the end of input to get a final pending event.
    One parser per stream; not thread-safe.

    Args:
        max_event_size: the most characters one event may hold (see the
            module docstring); :meth:`feed` raises :class:`EventTooLarge`
            past it, and the parser is then unusable.
    """

    def __init__(self, max_event_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        self._limit = max_event_size
        # Characters held for the current event: its unfinished line and its
        # data lines so far (checked per chunk and per data line).
        self._held = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._decoder_holds_bytes = False
        # Text of the unfinished last line, kept as pieces: joining them only
        # when a line end arrives keeps a long line over many reads linear.
        self._pending: List[str] = []
        # True after a chunk that ended with CR: an LF opening the next chunk
        # belongs to that CRLF and is not a second line end.
        self._skip_lf = False
        self._started = False
        self._data: List[str] = []
        self._event = ""
        self._retry: Optional[int] = None
        #: The last event id buffer; survives dispatches as WHATWG says.
        self.last_event_id = ""
        #: The last ``retry:`` value in milliseconds (the reconnection time).
        self.reconnection_time: Optional[int] = None

    def feed(self, chunk: bytes) -> List[SseEvent]:
        """Parse one chunk of bytes; return the events it completed."""
        if not self._decoder_holds_bytes:
            try:
                # Fast path: a chunk of whole, valid characters (nearly all are).
                text = chunk.decode("utf-8")
            except UnicodeDecodeError:
                pass
            else:
                return self._feed_text(text)
        # A character cut at the end or invalid bytes: the incremental decoder
        # keeps the start of a cut character for the next chunk and replaces
        # invalid bytes; while it keeps bytes, every chunk goes through it.
        text = self._decoder.decode(chunk)
        self._decoder_holds_bytes = bool(self._decoder.getstate()[0])
        return self._feed_text(text)

    def close(self) -> List[SseEvent]:
        """End the input; return what the end completed (see module doc)."""
        events = self._feed_text(self._decoder.decode(b"", final=True))
        if self._pending:
            # The last line had no line end; take it as a line all the same
            # (it is not blank, so it cannot dispatch by itself).
            self._line("".join(self._pending))
            self._pending = []
        if self._data:
            events.append(self._dispatch())
        return events

    def _feed_text(self, text: str) -> List[SseEvent]:
        if text:
            if not self._started:
                self._started = True
                if text[0] == "\ufeff":
                    text = text[1:]
            elif self._skip_lf:
                if text[0] == "\n":
                    text = text[1:]
                self._skip_lf = False
        if "\r" in text:
            # A CR ends its line at once (no waiting for the next read to
            # see whether an LF follows); the LF, if it comes, is skipped.
            self._skip_lf = text[-1] == "\r"
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        if "\n" not in text:
            if text:
                self._pending.append(text)
                self._held += len(text)
                if self._held > self._limit:
                    raise EventTooLarge(self._limit)
            return []
        if self._pending:
            self._pending.append(text)
            text = "".join(self._pending)
            self._pending = []
        if len(text) > self._limit:
            # Many small events in one read are fine; one huge line is not.
            self._check_lines(text)
        lines = text.split("\n")
        rest = lines.pop()
        if rest:
            self._pending.append(rest)
        held = sum(map(len, self._data))
        limit = self._limit
        events: List[SseEvent] = []
        for line in lines:
            # Blank lines and "data:" lines are nearly every line of an LLM
            # stream; they are handled here without a call per line.
            if not line:
                if self._data:
                    events.append(SseEvent(self._event or "message", "\n".join(self._data),
                                           self.last_event_id, self._retry))
                    self._data = []
                    self._event = ""
                    self._retry = None
                    held = 0
                else:
                    self._event = ""
                    self._retry = None
            elif line.startswith("data:"):
                value = line[6:] if line.startswith(" ", 5) else line[5:]
                held += len(value)
                if held > limit:
                    raise EventTooLarge(limit)
                self._data.append(value)
            else:
                self._line(line)
        self._held = held + len(rest)
        return events

    def _check_lines(self, text: str) -> None:
        """Raise :class:`EventTooLarge` if one line of ``text`` is longer than the limit."""
        start = 0
        limit = self._limit
        while True:
            end = text.find("\n", start)
            if end < 0:
                end = len(text)
            if end - start > limit:
                raise EventTooLarge(limit)
            if end == len(text):
                return
            start = end + 1

    def _line(self, line: str) -> Optional[SseEvent]:
        if not line:
            if self._data:
                return self._dispatch()
            self._event = ""
            self._retry = None
            return None
        if line[0] == ":":
            return None
        name, sep, value = line.partition(":")
        if sep and value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self.last_event_id = value
        elif name == "retry":
            if value.isascii() and value.isdigit():
                self._retry = self.reconnection_time = int(value)
        return None

    def _dispatch(self) -> SseEvent:
        event = SseEvent(self._event or "message", "\n".join(self._data), self.last_event_id, self._retry)
        self._data = []
        self._event = ""
        self._retry = None
        return event


def iter_sse_events(chunks: Iterable[bytes]) -> Iterator[SseEvent]:
    """Yield the events of a stream given as an iterable of byte chunks."""
    parser = SseParser()
    for chunk in chunks:
        yield from parser.feed(chunk)
    yield from parser.close()
