"""RedisEventRelay: a turn's stream events through a Redis stream, to any process.

Import it from :mod:`agcore_sync.contrib.redis`. A turn's events are one
stream, ``<prefix>turn:{<turn_id>}``: an entry per event (field ``event``,
the event's JSON, and field ``seq``, the publish's sequence) and a last
entry marking the end (field ``end``). Appends are a Lua script that
refuses to add after the end mark and that appends a publish once even when
redis-py sends it twice (a reply lost to a dropped connection): the second
run finds its sequence in the newest entry and returns that entry's id.

Two marks serve the job workers that run turns
(:mod:`agcore_sync.contrib.jobs`); they share the stream's hash tag:

- ``<prefix>turn-alive:{<turn_id>}``: the worker's liveness, the server
  time (ms) until which the worker is known alive (:meth:`RedisEventRelay.keep_alive`).
  A reader blocked without events checks it; once it has lapsed, a Lua
  script appends an ``Error`` event (its error a :class:`WorkerLostError`)
  and the end mark, atomically and once however many readers race, so
  every reader sees the same end. A turn without the mark (not started
  yet, or not run by a job worker) is never declared dead.
- ``<prefix>turn-cancel:{<turn_id>}``: set by :meth:`RedisEventRelay.cancel`
  (the web side), read by the worker's watcher
  (:meth:`RedisEventRelay.cancel_requested`).

:meth:`RedisEventRelay.finish` deletes both marks. Beside them,
``<prefix>turn-claim:{<turn_id>}`` records that a worker took the turn
(:meth:`RedisEventRelay.claim`), so that a job delivered twice runs once; it
lives as long as the stream. The Lua scripts are in
``agcore_sync/contrib/_relay_scripts.py``.
"""

from __future__ import annotations

import itertools
import json
import re
import secrets
import time
from typing import Any, Iterator, Mapping, Optional, Tuple

from agcore_sync.agent._store_support import check_ttl
from agcore_sync.contrib._redis_support import as_text, check_client, check_prefix, ms, redis
from agcore_sync.contrib._relay_scripts import APPEND, CLAIM, END_IF_LAPSED, FINISH, KEEP_ALIVE
from agcore_sync.errors import AgcoreError
from agcore_sync.llm.events import Error, StreamEvent

__all__ = ["RedisEventRelay", "RelayError", "WorkerLostError", "READ_BLOCK_SLICE", "READ_BATCH", "CANCEL_MARK_TTL"]

#: The longest single XREAD BLOCK of :meth:`RedisEventRelay.read`, in
#: seconds. Reading blocks in the server in slices this long (shorter near
#: a timeout, and below the client's socket timeout), so a read never
#: busy-loops and never outlives its timeout by more than a slice.
READ_BLOCK_SLICE = 1.0

#: How many stream entries one XREAD returns at most.
READ_BATCH = 100

#: How long a cancel mark lives when the relay's ``ttl`` is None (seconds).
CANCEL_MARK_TTL = 3600.0

#: A stream entry id: ``<ms>-<seq>``, ASCII digits, each part below 2**64 (as Redis has them).
_STREAM_ID = re.compile(r"([0-9]{1,20})-([0-9]{1,20})", re.ASCII)


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


class WorkerLostError(RelayError):
    """The job worker running a turn stopped before ending it (its liveness mark lapsed).

    It is the error of the ``Error`` event a reader appends for such a
    turn; in a stream read back it shows as ``{"class": "WorkerLostError"}``.

    .. versionadded:: 0.2
    """


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
        self._append = client.register_script(APPEND)
        # Every publish of this object gets the next number of this random
        # publisher id: the sequence that makes a publish sent twice by
        # redis-py's retries append once.
        self._publisher = secrets.token_hex(8)
        self._sequence = itertools.count(1)
        self._finish = client.register_script(FINISH)
        self._keep_alive = client.register_script(KEEP_ALIVE)
        self._end_if_lapsed = client.register_script(END_IF_LAPSED)
        self._claim = client.register_script(CLAIM)
        socket_timeout = client.connection_pool.connection_kwargs.get("socket_timeout")
        self._slice = READ_BLOCK_SLICE if not socket_timeout else min(READ_BLOCK_SLICE, socket_timeout / 2)

    def __repr__(self) -> str:
        return f"RedisEventRelay(prefix={self.prefix!r})"

    def _key(self, turn_id: str, kind: str = "turn") -> str:
        return f"{self.prefix}{kind}:{{{turn_id}}}"

    def _stream_ttl_ms(self) -> str:
        return "" if self.ttl is None else str(ms(self.ttl))

    def _failed(self, what: str, turn_id: str, exc: Exception) -> RelayError:
        return RelayError(f"{self!r}: cannot {what} turn {turn_id!r}: {exc}", turn_id=turn_id)

    def _add(self, turn_id: str, payload: str) -> Tuple[bool, str]:
        sequence = f"{self._publisher}-{next(self._sequence)}"
        try:
            status, entry_id = self._append(keys=[self._key(turn_id)], args=[payload, self._stream_ttl_ms(), sequence])
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
        added, entry_id = self._add(turn_id, payload)
        if not added:
            raise RelayError(f"turn {turn_id!r} was finished (end mark {entry_id}); an event published after "
                             "finish() would never be read", turn_id=turn_id)
        return entry_id

    def finish(self, turn_id: str) -> str:
        """Mark the end of the turn's stream, after its last event; return the mark's entry id.

        Readers end when they reach the mark. Finishing a finished turn
        does nothing and returns the existing mark's id. The turn's
        liveness and cancel marks are deleted.

        Raises:
            RelayError: Redis failed.
        """
        _check_turn_id(turn_id)
        keys = [self._key(turn_id), self._key(turn_id, "turn-alive"), self._key(turn_id, "turn-cancel"),
                self._key(turn_id, "turn-claim")]
        try:
            _, entry_id = self._finish(keys=keys, args=["1", self._stream_ttl_ms()])
        except redis.RedisError as exc:
            raise self._failed("finish", turn_id, exc) from exc
        return as_text(entry_id)

    def finished(self, turn_id: str) -> bool:
        """Say whether the turn's stream has its end mark (nothing more can be published).

        Raises:
            RelayError: Redis failed.
        """
        _check_turn_id(turn_id)
        try:
            newest = self.client.xrevrange(self._key(turn_id), count=1)
        except redis.RedisError as exc:
            raise self._failed("read", turn_id, exc) from exc
        return bool(newest) and any(as_text(k) == "end" for k in newest[0][1])

    # -- job workers: liveness and cancel marks -------------------------------

    def claim(self, turn_id: str) -> bool:
        """Claim the turn for the caller, once per turn id: True for the first claim, False ever after.

        A job worker claims a turn before it publishes anything
        (:class:`~agcore_sync.contrib.jobs.TurnRunner` does), so that a job
        delivered twice (a retry, a redelivery) runs its turn once: the
        second delivery finds the claim taken and leaves the stream alone.
        The claim lives as long as the turn's stream (the relay's ``ttl``
        after the end; forever when ``ttl`` is None). A claim whose reply
        was lost and that redis-py sent again still counts as this call's.

        Raises:
            RelayError: Redis failed.
        """
        _check_turn_id(turn_id)
        lifetime = "" if self.ttl is None else str(ms(self.ttl))
        try:
            return bool(self._claim(keys=[self._key(turn_id, "turn-claim")], args=[secrets.token_hex(16), lifetime]))
        except redis.RedisError as exc:
            raise self._failed("claim", turn_id, exc) from exc

    def keep_alive(self, turn_id: str, ttl: float) -> None:
        """Mark the turn's worker alive for ``ttl`` more seconds (the server's clock).

        A job worker calls it when it starts the turn and then regularly
        (:class:`~agcore_sync.contrib.jobs.TurnRunner` does). Once a mark
        has lapsed, the next reader blocked without events ends the turn
        with an ``Error`` event (a :class:`WorkerLostError`) and the end
        mark. The mark itself lives as long as the stream (``ttl`` of the
        relay, plus ``ttl``); :meth:`finish` deletes it.

        Raises:
            RelayError: Redis failed.
            ValueError: ``ttl`` is not a positive number.
        """
        _check_turn_id(turn_id)
        ttl = check_ttl(ttl, "ttl")
        lifetime = "" if self.ttl is None else str(ms(self.ttl + ttl))
        try:
            self._keep_alive(keys=[self._key(turn_id, "turn-alive"), self._key(turn_id, "turn-claim")],
                             args=[ms(ttl), lifetime])
        except redis.RedisError as exc:
            raise self._failed("mark alive", turn_id, exc) from exc

    def cancel(self, turn_id: str) -> None:
        """Ask the worker running the turn to stop it (safe from any process, idempotent).

        Sets the turn's cancel mark; the worker's watcher sees it within
        its poll interval and closes the turn's stream (a job not started
        yet sees it when it starts, and does not run the turn). Cancelling
        a finished turn does nothing visible. The mark lives as long as
        the stream (:data:`CANCEL_MARK_TTL` when the relay's ``ttl`` is None).

        Raises:
            RelayError: Redis failed.
        """
        _check_turn_id(turn_id)
        try:
            self.client.set(self._key(turn_id, "turn-cancel"), "1", px=ms(self.ttl or CANCEL_MARK_TTL))
        except redis.RedisError as exc:
            raise self._failed("cancel", turn_id, exc) from exc

    def cancel_requested(self, turn_id: str) -> bool:
        """Say whether :meth:`cancel` was called for the turn (and it has not finished since).

        Raises:
            RelayError: Redis failed.
        """
        _check_turn_id(turn_id)
        try:
            return bool(self.client.exists(self._key(turn_id, "turn-cancel")))
        except redis.RedisError as exc:
            raise self._failed("read the cancel mark of", turn_id, exc) from exc

    def _end_if_worker_lost(self, key: str, turn_id: str) -> None:
        """End the turn with a WorkerLostError event if its liveness mark lapsed (atomic, once)."""
        error = WorkerLostError(f"the worker running turn {turn_id!r} stopped before the turn ended (its "
                                "liveness mark lapsed); the session keeps its last saved state", turn_id=turn_id)
        payload = json.dumps(Error(str(error), error).to_dict(), ensure_ascii=False, separators=(",", ":"))
        try:
            self._end_if_lapsed(keys=[key, self._key(turn_id, "turn-alive")], args=[payload, self._stream_ttl_ms()])
        except redis.RedisError as exc:
            raise self._failed("check the worker of", turn_id, exc) from exc

    def read(self, turn_id: str, after: Optional[str] = None, *,
             timeout: Optional[float] = None) -> Iterator[Tuple[str, StreamEvent]]:
        """Yield ``(entry_id, event)`` after the entry id ``after``, then live ones, until the end mark.

        ``after`` is checked at the call, before any event: it must be an
        entry of this turn's stream (an id this or another reader got from
        it); an id at or after the stream's end mark yields nothing, at once.

        Args:
            turn_id: the turn.
            after: an entry id this reader already has (None: from the start),
                ASCII digits ``<ms>-<seq>``.
            timeout: seconds to wait for each next event; None waits as
                long as it takes.

        Raises:
            ValueError: at the call: ``after`` is not an entry id
                (``<ms>-<seq>``), or not an entry of this turn's stream (of
                another turn, from the future, of a turn that never
                existed or expired), or ``timeout`` is not positive.
            RelayError: Redis failed (at the call when ``after`` is given,
                else from the iterator), or an entry is corrupt (from the iterator).
            TimeoutError: ``timeout`` seconds passed without an event (from the iterator).
        """
        _check_turn_id(turn_id)
        start = _check_entry_id(after, "after")
        timeout = check_ttl(timeout, "timeout", optional=True)
        ended = start is not None and self._resumes_at_end(turn_id, start, "after")
        return ((entry_id, event) for entry_id, event, _ in self._entries(turn_id, start, timeout, ended))

    def sse(self, turn_id: str, last_event_id: Optional[str] = None, *,
            timeout: Optional[float] = None) -> Iterator[bytes]:
        """Yield the turn's events as Server-Sent Events, ready for a streaming HTTP response.

        Each event is ``id: <entry id>``, ``data: <event JSON>`` and a blank
        line. After the last event comes ``event: end`` with ``data: {}``
        (and no id), so that a browser's ``EventSource`` can close instead
        of reconnecting; a reconnect after the end gets that frame only.

        ``last_event_id`` is checked at the call, before the response
        starts, so a web app can answer 400 to a ``ValueError`` (see
        :meth:`read` for the rules).

        Args:
            turn_id: the turn.
            last_event_id: the ``Last-Event-ID`` request header of a client
                that reconnects (None or "": from the start); it gets each
                event it missed, once.
            timeout: seconds to wait for each next event (None: no limit).

        Raises:
            ValueError: at the call: ``last_event_id`` is not an entry id
                (``<ms>-<seq>``, ASCII digits) or not an entry of this
                turn's stream (answer 400).
            RelayError: Redis failed, or an entry is corrupt.
            TimeoutError: ``timeout`` seconds passed without an event (from the iterator).
        """
        _check_turn_id(turn_id)
        start = _check_entry_id(last_event_id or None, "last_event_id")
        timeout = check_ttl(timeout, "timeout", optional=True)
        ended = start is not None and self._resumes_at_end(turn_id, start, "last_event_id")
        return self._sse(turn_id, start, timeout, ended)

    def _sse(self, turn_id: str, start: Optional[str], timeout: Optional[float], ended: bool) -> Iterator[bytes]:
        for entry_id, _, payload in self._entries(turn_id, start, timeout, ended):
            yield f"id: {entry_id}\ndata: {payload}\n\n".encode()
        yield b"event: end\ndata: {}\n\n"

    def _entries(self, turn_id: str, after: Optional[str], timeout: Optional[float],
                 ended: bool) -> Iterator[Tuple[str, StreamEvent, str]]:
        """Yield ``(entry_id, event, payload)`` until the end mark; the one reading loop."""
        if ended:
            return
        key = self._key(turn_id)
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
            if not response:
                # Blocked a whole slice without an event: is the worker still there?
                self._end_if_worker_lost(key, turn_id)
                continue
            # RESP2 answers [[key, entries]], RESP3 {key: entries}.
            batches = response.values() if isinstance(response, dict) else [entries for _, entries in response]
            for entries in batches:
                for raw_id, fields in entries:
                    last = as_text(raw_id)
                    fields = {as_text(k): as_text(v) for k, v in fields.items()}
                    if "end" in fields:
                        return
                    yield last, self._event(turn_id, last, fields), fields["event"]
                last_event_at = time.monotonic()

    def _resumes_at_end(self, turn_id: str, after: str, name: str) -> bool:
        """Check that ``after`` is an entry of the turn's stream; say whether the stream ends at or before it.

        An id at or after the end mark is accepted (nothing more will
        come); any other id that is not an entry raises ValueError, so that
        a reader never waits for an entry that can never come.
        """
        key = self._key(turn_id)
        try:
            with self.client.pipeline(transaction=False) as pipe:
                pipe.xrange(key, min=after, max=after, count=1)
                pipe.xrevrange(key, count=1)
                found, newest = pipe.execute()
        except redis.RedisError as exc:
            raise self._failed("read", turn_id, exc) from exc
        end_id = None
        if newest and any(as_text(k) == "end" for k in newest[0][1]):
            end_id = as_text(newest[0][0])
        if end_id is not None and _id_key(after) >= _id_key(end_id):
            return True
        if found:
            return False
        raise ValueError(f"{name} {after!r} is not an entry of turn {turn_id!r} (an id of another turn, an id "
                         "that was never sent, or a turn that expired or never existed); read it from the start")

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
    """Return ``entry_id`` if it is None or a stream entry id ``<ms>-<seq>`` (ASCII digits); else ValueError."""
    if entry_id is None:
        return None
    if isinstance(entry_id, (bytes, bytearray)):
        entry_id = bytes(entry_id).decode("ascii", "replace")
    match = _STREAM_ID.fullmatch(entry_id) if isinstance(entry_id, str) else None
    if match is None or any(int(part) >= 2 ** 64 for part in match.groups()):
        shown = entry_id if not isinstance(entry_id, str) or len(entry_id) <= 60 else entry_id[:60] + "..."
        raise ValueError(f"{name} must be a Redis stream entry id such as '1700000000000-0' (ASCII digits "
                         f"<ms>-<seq>), not {shown!r}")
    return entry_id


def _id_key(entry_id: str) -> Tuple[int, int]:
    millis, _, seq = entry_id.partition("-")
    return int(millis), int(seq or 0)
