"""RedisEventRelay: a turn's stream events through a Redis stream, to any process.

Import it from :mod:`agcore_sync.contrib.redis`. A turn's events are one
stream, ``<prefix>turn:{<turn_id>}``: an entry per event (field ``event``,
the event's JSON) and a last entry marking the end (field ``end``). Appends
are a Lua script that refuses to add after the end mark.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any, Iterator, Mapping, Optional, Tuple

from agcore_sync.agent._store_support import check_ttl
from agcore_sync.contrib._redis_support import as_text, check_client, check_prefix, ms, redis
from agcore_sync.errors import AgcoreError
from agcore_sync.llm.events import StreamEvent

__all__ = ["RedisEventRelay", "RelayError", "READ_BLOCK_SLICE", "READ_BATCH"]

#: The longest single XREAD BLOCK of :meth:`RedisEventRelay.read`, in
#: seconds. Reading blocks in the server in slices this long (shorter near
#: a timeout, and below the client's socket timeout), so a read never
#: busy-loops and never outlives its timeout by more than a slice.
READ_BLOCK_SLICE = 1.0

#: How many stream entries one XREAD returns at most.
READ_BATCH = 100

# KEYS: the turn's stream. ARGV: field ('event' or 'end'), value, ttl in ms ('' = none).
# Appends unless the stream already ends; returns {1, id} or {0, id of the end mark}.
_APPEND = """
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
if last and last[2][1] == 'end' then return {0, last[1]} end
local id = redis.call('XADD', KEYS[1], '*', ARGV[1], ARGV[2])
if ARGV[3] ~= '' then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return {1, id}
"""

_STREAM_ID = re.compile(r"^(\d+)(?:-(\d+))?$")


class RelayError(AgcoreError):
    """The relay could not publish or read: Redis failed, or a stream entry is corrupt.

    Args:
        message: what failed, on which turn.
        turn_id: the turn.
    """

    def __init__(self, message: str, *, turn_id: Optional[str] = None) -> None:
        super().__init__(message)
        #: The turn whose stream failed.
        self.turn_id = turn_id


class RedisEventRelay:
    """Relay a turn's stream events through a Redis stream to any process.

    The producer (a job worker running the turn) calls :meth:`publish` for
    every event, then :meth:`finish`. Consumers (web processes) call
    :meth:`read` or :meth:`sse`, from the start or after an entry id, as
    often as they like: the stream keeps every event until ``ttl`` seconds
    after the last one was published. Readers block in the server (``XREAD
    BLOCK``), in slices of at most :data:`READ_BLOCK_SLICE` seconds.

    Args:
        client: a ``redis.Redis``; the relay uses it and never closes it.
            Its ``socket_timeout``, if set, should exceed the read slice
            (a shorter one shortens the slices).
        prefix: the start of every key.
        ttl: seconds a turn's stream lives after its last append; None
            keeps it until it is deleted.

    Raises:
        TypeError: ``client`` is not a ``redis.Redis``.
        ValueError: ``ttl`` is not a positive number.
    """

    def __init__(self, client: redis.Redis, *, prefix: str = "agcore:", ttl: Optional[float] = 3600.0) -> None:
        #: The Redis client (not owned: the caller closes it).
        self.client = check_client(client)
        #: The start of every key.
        self.prefix = check_prefix(prefix)
        #: Seconds a turn's stream lives after its last append (None: forever).
        self.ttl = check_ttl(ttl, "ttl", optional=True)
        self._append = client.register_script(_APPEND)
        socket_timeout = client.connection_pool.connection_kwargs.get("socket_timeout")
        self._slice = READ_BLOCK_SLICE if not socket_timeout else min(READ_BLOCK_SLICE, socket_timeout / 2)

    def __repr__(self) -> str:
        return f"RedisEventRelay(prefix={self.prefix!r})"

    def _key(self, turn_id: str) -> str:
        return f"{self.prefix}turn:{{{turn_id}}}"

    def _failed(self, what: str, turn_id: str, exc: Exception) -> RelayError:
        return RelayError(f"{self!r}: cannot {what} turn {turn_id!r}: {exc}", turn_id=turn_id)

    def _add(self, turn_id: str, field: str, value: str) -> Tuple[bool, str]:
        ttl = "" if self.ttl is None else str(ms(self.ttl))
        try:
            status, entry_id = self._append(keys=[self._key(turn_id)], args=[field, value, ttl])
        except redis.RedisError as exc:
            raise self._failed("append to", turn_id, exc) from exc
        return bool(status), as_text(entry_id)

    def publish(self, turn_id: str, event: StreamEvent) -> str:
        """Append ``event.to_dict()`` (as JSON) to the turn's stream; return its entry id.

        Raises:
            RelayError: the turn was finished already, or Redis failed.
            TypeError: ``event`` is not a :class:`StreamEvent`.
        """
        _check_turn_id(turn_id)
        if not isinstance(event, StreamEvent):
            raise TypeError(f"event must be a StreamEvent, not {type(event).__name__}")
        payload = json.dumps(event.to_dict(), ensure_ascii=False, separators=(",", ":"))
        added, entry_id = self._add(turn_id, "event", payload)
        if not added:
            raise RelayError(f"turn {turn_id!r} was finished (end mark {entry_id}); an event published after "
                             "finish() would never be read", turn_id=turn_id)
        return entry_id

    def finish(self, turn_id: str) -> str:
        """Mark the end of the turn's stream, after its last event; return the mark's entry id.

        Readers end when they reach the mark. Finishing a finished turn
        does nothing and returns the existing mark's id.
        """
        _check_turn_id(turn_id)
        return self._add(turn_id, "end", "1")[1]

    def read(self, turn_id: str, after: Optional[str] = None, *,
             timeout: Optional[float] = None) -> Iterator[Tuple[str, StreamEvent]]:
        """Yield ``(entry_id, event)`` after the entry id ``after``, then live ones, until the end mark.

        Args:
            turn_id: the turn.
            after: an entry id this reader already has (None: from the start).
            timeout: seconds to wait for each next event; None waits as
                long as it takes.

        Raises:
            TimeoutError: ``timeout`` seconds passed without an event (from the iterator).
            RelayError: Redis failed, or an entry is corrupt (from the iterator).
            ValueError: ``after`` is not a stream entry id, or ``timeout`` not positive.
        """
        _check_turn_id(turn_id)
        start = _check_entry_id(after, "after")
        timeout = check_ttl(timeout, "timeout", optional=True)
        return ((entry_id, event) for entry_id, event, _ in self._entries(turn_id, start, timeout))

    def sse(self, turn_id: str, last_event_id: Optional[str] = None, *,
            timeout: Optional[float] = None) -> Iterator[bytes]:
        """Yield the turn's events as Server-Sent Events, ready for a streaming HTTP response.

        Each event is ``id: <entry id>``, ``data: <event JSON>`` and a blank
        line. After the last event comes ``event: end`` with ``data: {}``
        (and no id), so that a browser's ``EventSource`` can close instead
        of reconnecting; a reconnect after the end gets that frame only.

        Args:
            turn_id: the turn.
            last_event_id: the ``Last-Event-ID`` request header of a client
                that reconnects (None or "": from the start); it gets each
                event it missed, once.
            timeout: seconds to wait for each next event (None: no limit).

        Raises:
            TimeoutError: ``timeout`` seconds passed without an event (from the iterator).
            RelayError: Redis failed, or an entry is corrupt (from the iterator).
            ValueError: ``last_event_id`` is not a stream entry id (answer 400).
        """
        _check_turn_id(turn_id)
        start = _check_entry_id(last_event_id or None, "last_event_id")
        timeout = check_ttl(timeout, "timeout", optional=True)
        return self._sse(turn_id, start, timeout)

    def _sse(self, turn_id: str, start: Optional[str], timeout: Optional[float]) -> Iterator[bytes]:
        for entry_id, _, payload in self._entries(turn_id, start, timeout):
            yield f"id: {entry_id}\ndata: {payload}\n\n".encode()
        yield b"event: end\ndata: {}\n\n"

    def _entries(self, turn_id: str, after: Optional[str],
                 timeout: Optional[float]) -> Iterator[Tuple[str, StreamEvent, str]]:
        """Yield ``(entry_id, event, payload)`` until the end mark; the one reading loop."""
        key = self._key(turn_id)
        if after is not None and self._ended_by(key, turn_id, after):
            return
        last = after or "0-0"
        last_event_at = time.monotonic()
        while True:
            block = self._slice
            if timeout is not None:
                remaining = last_event_at + timeout - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"no event of turn {turn_id!r} for {timeout:g} s (after entry {last})")
                block = min(block, remaining)
            try:
                response = self.client.xread({key: last}, count=READ_BATCH, block=ms(block))
            except redis.RedisError as exc:
                raise self._failed("read", turn_id, exc) from exc
            # RESP2 answers [[key, entries]], RESP3 {key: entries}.
            batches = response.values() if isinstance(response, dict) else [entries for _, entries in response or ()]
            for entries in batches:
                for raw_id, fields in entries:
                    last = as_text(raw_id)
                    fields = {as_text(k): as_text(v) for k, v in fields.items()}
                    if "end" in fields:
                        return
                    yield last, self._event(turn_id, last, fields), fields["event"]
                last_event_at = time.monotonic()

    def _ended_by(self, key: str, turn_id: str, after: str) -> bool:
        """Say whether the stream's end mark is at or before ``after`` (nothing more will come)."""
        try:
            newest = self.client.xrevrange(key, count=1)
        except redis.RedisError as exc:
            raise self._failed("read", turn_id, exc) from exc
        if not newest:
            return False
        raw_id, fields = newest[0]
        ended = any(as_text(k) == "end" for k in fields)
        return ended and _id_key(as_text(raw_id)) <= _id_key(after)

    def _event(self, turn_id: str, entry_id: str, fields: Mapping[str, str]) -> StreamEvent:
        try:
            return StreamEvent.from_dict(json.loads(fields["event"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise RelayError(f"entry {entry_id} of turn {turn_id!r} in {self!r} is not a stream event ({exc}); "
                             "is another program writing to this key?", turn_id=turn_id) from exc


def _check_turn_id(turn_id: Any) -> str:
    if not isinstance(turn_id, str):
        raise TypeError(f"turn_id must be a str, not {type(turn_id).__name__}")
    if not turn_id:
        raise ValueError("turn_id must not be empty")
    return turn_id


def _check_entry_id(entry_id: Any, name: str) -> Optional[str]:
    if entry_id is None:
        return None
    if isinstance(entry_id, bytes):
        entry_id = entry_id.decode("ascii", "replace")
    if not isinstance(entry_id, str) or not _STREAM_ID.match(entry_id.strip()):
        raise ValueError(f"{name} must be a Redis stream entry id such as '1700000000000-0', not {entry_id!r}")
    entry_id = entry_id.strip()
    return entry_id if "-" in entry_id else f"{entry_id}-0"


def _id_key(entry_id: str) -> Tuple[int, int]:
    millis, _, seq = entry_id.partition("-")
    return int(millis), int(seq or 0)
