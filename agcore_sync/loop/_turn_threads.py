"""TurnThreads: the loop layer's threads for one ToolRegistry, and their owner.

Two kinds of thread serve the tool loop's driver (``loop/_driver.py``) for
each registry it runs calls with:

- the turn threads, ``agcore-loop-<n>``: a sync caller's turn goes on in one
  of them from its first call with a timeout (and a turn whose watched tool
  overstayed goes on in another). No size limit: each drives one turn at a
  time, and a turn must never wait for another's to start. An idle one exits
  after ``TURN_THREAD_IDLE_SECS`` (read from ``agcore_sync.tools.registry``
  when the pool starts);
- the deadline watcher, ``agcore-deadlines-<n>``
  (:class:`~agcore_sync.loop._deadlines.Deadlines`): it watches the lone
  calls that run in the driving thread.

Both start on first need. The registry keeps one :class:`TurnThreads` per
registry through its package-internal close hook,
:meth:`ToolRegistry.attached <agcore_sync.tools.registry.ToolRegistry.attached>`,
so ``ToolRegistry.close()`` stops and joins them within its
``CLOSE_TIMEOUT_SECS``. ``tools/`` never imports this module: the loop layer
sits above the tools.
"""

from __future__ import annotations

import threading
from time import perf_counter
from typing import TYPE_CHECKING, Callable, List, Optional

from agcore_sync.loop._deadlines import Deadlines
from agcore_sync.tools import registry as registry_module
from agcore_sync.tools.error import ToolError
from agcore_sync.tools.invocation import ToolInvocation
from agcore_sync.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from agcore_sync._pool import DaemonPool

__all__ = ["TurnThreads"]

#: Settles an overstaying call and returns the batch's results (see ``ToolRegistry.invoke_here``).
Settle = Callable[[], List[ToolInvocation]]


def _closed() -> ToolError:
    return ToolError("the tool registry is closed; create a new ToolRegistry", recoverable=False)


class TurnThreads:
    """The turn threads and the deadline watcher the loop layer keeps for one registry.

    Get it with :meth:`of`; the registry's ``close()`` calls :meth:`close`.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool: Optional[DaemonPool] = None
        self._deadlines: Optional[Deadlines] = None
        self._closed = False

    @classmethod
    def of(cls, registry: ToolRegistry) -> TurnThreads:
        """Return ``registry``'s TurnThreads, made on first use.

        Raises:
            ToolError: the registry is closed (``recoverable=False``).
        """
        return registry.attached(cls, cls)

    def hand_over(self, work: Callable[[], None], on_dropped: Callable[[], None]) -> None:
        """Run ``work()`` on a turn thread; ``on_dropped()`` instead if :meth:`close` cancels it first.

        Raises:
            ToolError: closed (the registry is) (``recoverable=False``).
            RuntimeError: no thread could be started.
        """
        with self._lock:
            if self._closed:
                raise _closed()
            if self._pool is None:
                import sys

                from agcore_sync._pool import DaemonPool

                self._pool = DaemonPool(sys.maxsize, name="agcore-loop",
                                        idle_timeout=registry_module.TURN_THREAD_IDLE_SECS)
            future = self._pool.submit(work)
        future.add_done_callback(lambda done: on_dropped() if done.cancelled() else None)

    def watch(self, deadline: float, settle: Settle, on_overdue: Callable[[Settle], None]) -> Callable[[], bool]:
        """Arm ``deadline`` (a ``perf_counter()`` time); return ``disarm``, False once the deadline came first.

        At the deadline ``on_overdue(settle)`` runs on the deadline thread (it
        must not block: it hands ``settle`` to another thread). The shape
        ``ToolRegistry.invoke_here`` takes as ``watch``, once ``on_overdue``
        is bound.

        Raises:
            ToolError: closed (the registry is) (``recoverable=False``).
        """
        with self._lock:
            if self._closed:
                raise _closed()
            if self._deadlines is None:
                self._deadlines = Deadlines()
            deadlines = self._deadlines
            # Under the lock: close() cannot stop the watcher between the check and the arming.
            entry = deadlines.arm(deadline, lambda: on_overdue(settle))
        return lambda: deadlines.disarm(entry)

    def close(self, timeout: float) -> None:
        """Stop both, joining their threads for at most ``timeout`` seconds in all.

        Queued turns are dropped (their ``on_dropped`` runs); a turn still
        running ends at its next tool call (its registry is closed); a
        watched tool still running gets its deadline first. Again: nothing.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            pool, deadlines = self._pool, self._deadlines
        end = perf_counter() + timeout
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True, timeout=timeout)
        if deadlines is not None:
            # Returns at once unless a watched tool runs: its deadline still fires.
            deadlines.stop(max(0.0, end - perf_counter()))
