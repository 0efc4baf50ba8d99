"""Deadlines: one thread that calls back when a deadline passes, owned by the loop layer.

A tool that runs in the thread driving a tool loop (no hand-off to the
pool) is watched here: :meth:`Deadlines.arm` before the tool,
:meth:`Deadlines.disarm` after it. Each ``ToolRegistry`` the loop uses has
one, kept by its :class:`~agcore_sync.loop._turn_threads.TurnThreads` and
stopped by the registry's ``close()``. Neither wakes the thread in the common
case: the thread sleeps until the earliest deadline it knows of, and a new
deadline later than that one (every round's ``now + tool_timeout``) waits its
turn in the heap. Disarmed entries stay in the heap until they come up or
until they are half of it (then it is rebuilt), so arming is O(log n) and
memory stays bounded however many rounds run.

Whoever wins the race between :meth:`disarm` and the deadline decides: a
disarm that returns False means the callback has run or is running.
"""

from __future__ import annotations

import heapq
import itertools
import math
import threading
from time import perf_counter
from typing import Callable, List, Optional, Tuple

from agcore_sync import _instrument

__all__ = ["Deadline", "Deadlines"]

logger = _instrument.get_logger(__name__)

#: Rebuild the heap once this many disarmed entries make up half of it.
_COMPACT_AT = 64

_numbers = itertools.count(1)


class Deadline:
    """One armed deadline: its callback, until it fires or is disarmed."""

    __slots__ = ("callback", "fired")

    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback: Optional[Callable[[], None]] = callback
        self.fired = False


class Deadlines:
    """A daemon thread, ``agcore-deadlines-<n>``, started on the first :meth:`arm`."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._heap: List[Tuple[float, int, Deadline]] = []
        self._order = itertools.count()
        self._disarmed = 0
        # When the thread will look at the heap again: +inf while it sleeps
        # with nothing to wait for, -inf while it is awake (it looks anyway).
        self._wakes_at = -math.inf
        self._thread: Optional[threading.Thread] = None
        self._stopping = False

    def arm(self, deadline: float, callback: Callable[[], None]) -> Deadline:
        """Call ``callback()`` on this object's thread at ``deadline`` (a ``perf_counter()`` time).

        Raises:
            RuntimeError: :meth:`stop` was called.
        """
        entry = Deadline(callback)
        with self._cond:
            if self._stopping:
                raise RuntimeError("cannot arm a deadline after stop()")
            heapq.heappush(self._heap, (deadline, next(self._order), entry))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=f"agcore-deadlines-{next(_numbers)}",
                                                daemon=True)
                self._thread.start()
            elif deadline < self._wakes_at:
                self._cond.notify()
        return entry

    def disarm(self, entry: Deadline) -> bool:
        """Cancel ``entry``; return False if its deadline came first (its callback runs or ran)."""
        with self._cond:
            if entry.fired:
                return False
            entry.callback = None
            self._disarmed += 1
            if self._stopping:
                self._cond.notify()  # the thread may be waiting for this one alone, to exit
            if self._disarmed >= _COMPACT_AT and 2 * self._disarmed >= len(self._heap):
                self._heap = [item for item in self._heap if item[2].callback is not None]
                heapq.heapify(self._heap)
                self._disarmed = 0
        return True

    def stop(self, timeout: float) -> None:
        """Arm nothing more; let the thread exit once no armed deadline is left, joining it for ``timeout`` s.

        An armed deadline still fires when it comes (its tool is running):
        the thread outlives the join by at most that long.
        """
        with self._cond:
            self._stopping = True
            self._cond.notify()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _run(self) -> None:
        with self._cond:
            while True:
                heap = self._heap
                while heap and heap[0][2].callback is None:
                    heapq.heappop(heap)
                    self._disarmed -= 1
                if not heap and self._stopping:
                    return
                now = perf_counter()
                if heap and heap[0][0] <= now:
                    entry = heapq.heappop(heap)[2]
                    entry.fired = True
                    callback, entry.callback = entry.callback, None
                    self._cond.release()
                    try:
                        callback()  # type: ignore[misc]
                    except Exception:
                        logger.exception("a tool deadline's callback raised; ignored")
                    finally:
                        self._cond.acquire()
                    continue
                self._wakes_at = heap[0][0] if heap else math.inf
                self._cond.wait(None if not heap else heap[0][0] - now)
                self._wakes_at = -math.inf
