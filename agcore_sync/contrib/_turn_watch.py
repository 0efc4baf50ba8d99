"""The watcher of a running background turn: liveness renewals and cancel polling, on a thread it owns.

Used by :class:`~agcore_sync.contrib.jobs.TurnRunner`; see
:mod:`agcore_sync.contrib.jobs` for the protocol.
"""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any, Optional

from agcore_sync import _instrument
from agcore_sync.agent.turn_stream import TurnStream
from agcore_sync.contrib.redis import RedisEventRelay

__all__ = ["TurnWatch", "CANCEL_POLL_INTERVAL", "WATCH_JOIN_TIMEOUT"]

logger = _instrument.get_logger("agcore_sync.jobs")

#: How often a running turn's watcher looks for the cancel mark (seconds):
#: the longest a cancel waits to be seen. One ``EXISTS`` per poll.
CANCEL_POLL_INTERVAL = 0.2

#: How long the end of a job waits for its watcher thread, which is woken at
#: once and may only be inside one Redis call (bounded by the client's timeouts).
WATCH_JOIN_TIMEOUT = 5.0

_numbers = itertools.count(1)


class TurnWatch:
    """One turn's liveness renewals and cancel polling, on a thread it owns.

    Entering marks the turn alive (raising if Redis is unreachable) and
    starts ``agcore-turnwatch-<n>``; leaving stops and joins it. The thread
    catches every failure (logged; the next poll tries again).
    """

    def __init__(self, relay: RedisEventRelay, turn_id: str, alive_ttl: float) -> None:
        self._relay = relay
        self._turn_id = turn_id
        self._alive_ttl = alive_ttl
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._stream: Optional[TurnStream] = None
        self._thread: Optional[threading.Thread] = None
        #: True once the cancel mark closed the turn's stream before it ended.
        self.cancelled = False
        self._seen = False

    def __enter__(self) -> TurnWatch:
        self._relay.keep_alive(self._turn_id, self._alive_ttl)
        self._thread = threading.Thread(target=self._run, name=f"agcore-turnwatch-{next(_numbers)}", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(WATCH_JOIN_TIMEOUT)
            if self._thread.is_alive():
                logger.warning("%s of turn %r is still inside a Redis call; it ends when that call returns",
                               self._thread.name, self._turn_id)

    def watch(self, stream: TurnStream) -> None:
        """Close ``stream`` when the cancel mark appears (at once if it already has)."""
        with self._lock:
            self._stream = stream
            seen = self._seen
        if seen:
            self._close(stream)

    def _close(self, stream: TurnStream) -> None:
        if not stream.closed:
            self.cancelled = True
            stream.close()

    def _run(self) -> None:
        renew_every = self._alive_ttl / 3
        next_renewal = time.monotonic() + renew_every
        while not self._stop.wait(CANCEL_POLL_INTERVAL):
            try:
                if not self._seen and self._relay.cancel_requested(self._turn_id):
                    with self._lock:
                        self._seen = True
                        stream = self._stream
                    if stream is not None:
                        self._close(stream)
                if time.monotonic() >= next_renewal:
                    self._relay.keep_alive(self._turn_id, self._alive_ttl)
                    next_renewal = time.monotonic() + renew_every
            except Exception:  # noqa: BLE001 - logged; the next poll tries again
                logger.warning("watcher of turn %r: Redis call failed; trying again", self._turn_id, exc_info=True)
