"""A thread pool of daemon workers, for the packages' thread owners.

``concurrent.futures.ThreadPoolExecutor`` joins its (non-daemon) workers at
interpreter exit, so one tool that never returns would keep the process
alive forever. This pool hands out the same ``Future`` objects but its
workers are daemons, named ``<name>-<n>``: ``agcore-tool-<n>`` for a
``ToolRegistry``'s tools, ``agcore-loop-<n>`` for the sync turns the loop
layer drives (``loop/_turn_threads.py``). Their owners still stop and join
them (in ``ToolRegistry.close()``) when nothing is stuck, and a stuck one can
no longer block exit. Shared by ``tools/`` and ``loop/``, so it sits below both.

Each piece of work runs in a copy of the ``contextvars`` context of the
thread that submitted it, taken at ``submit``: a ``ContextVar`` the caller set
is visible in the work, and the work's own changes stay in its copy.

Idle workers: with ``idle_timeout`` set, a worker that has waited that long
for work exits, so a burst of work does not keep its threads for the pool's
life (the turn threads); the next work starts a new one.
"""

from __future__ import annotations

import contextvars
import itertools
import queue
import threading
from concurrent.futures import Future
from time import monotonic
from typing import Any, Callable, List, Optional, Tuple

__all__ = ["DaemonPool"]

_numbers = itertools.count(1)
_Work = Optional[Tuple[Future, contextvars.Context, Callable[..., Any], Tuple[Any, ...]]]


class DaemonPool:
    """At most ``max_workers`` daemon threads, started as work arrives.

    Args:
        max_workers: the most threads at once.
        name: the threads' name prefix.
        idle_timeout: seconds a worker waits for work before it exits; None
            keeps it until :meth:`shutdown`.
    """

    def __init__(self, max_workers: int, name: str = "agcore-tool", idle_timeout: Optional[float] = None) -> None:
        self._max_workers = max_workers
        self._name = name
        self._idle_timeout = idle_timeout
        self._work: queue.SimpleQueue[_Work] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._threads: List[threading.Thread] = []
        self._shutdown = False

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        """Queue ``fn(*args)``, to run in a copy of the caller's context; return its Future."""
        future: Future = Future()
        context = contextvars.copy_context()
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot submit to a pool that was shut down")
            self._work.put((future, context, fn, args))
            # An idle worker will take it; otherwise start one, up to the limit.
            if not self._idle.acquire(blocking=False) and len(self._threads) < self._max_workers:
                thread = threading.Thread(target=self._worker, name=f"{self._name}-{next(_numbers)}", daemon=True)
                self._threads.append(thread)
                thread.start()
        return future

    def _worker(self) -> None:
        while True:
            try:
                work = self._work.get(timeout=self._idle_timeout)
            except queue.Empty:
                if self._retire():
                    return
                continue
            if work is None:
                return
            future, context, fn, args = work
            if future.set_running_or_notify_cancel():
                try:
                    result = context.run(fn, *args)
                except BaseException as exc:  # noqa: BLE001 - delivered through the Future
                    future.set_exception(exc)
                else:
                    future.set_result(result)
            del work, future, context, fn, args
            self._idle.release()

    def _retire(self) -> bool:
        """Leave the pool if this idle worker is not needed; True if it left.

        Under the lock no work can be queued, so: an idle token of its own
        (the one it released after its last work, or any other idle
        worker's: tokens only count idle workers) and an empty queue mean
        every queued work has a worker. Once the pool is shut down a worker
        waits for its stop instead (shutdown counted it).
        """
        with self._lock:
            if self._shutdown or not self._work.empty() or not self._idle.acquire(blocking=False):
                return False
            self._threads.remove(threading.current_thread())
            return True

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False, timeout: Optional[float] = None) -> None:
        """Stop accepting work; optionally cancel queued work and join the workers.

        Args:
            wait: join every worker, for at most ``timeout`` seconds in all.
            cancel_futures: cancel work that has not started.
            timeout: the bound of the joins; None waits as long as it takes.
        """
        with self._lock:
            first = not self._shutdown
            self._shutdown = True
            threads = list(self._threads)
        stops = len(threads) if first else 0
        if cancel_futures:
            try:
                while True:
                    work = self._work.get_nowait()
                    if work is None:
                        stops += 1  # a stop put by an earlier call: put it back
                    else:
                        work[0].cancel()
            except queue.Empty:
                pass
        for _ in range(stops):
            self._work.put(None)
        if wait:
            deadline = None if timeout is None else monotonic() + timeout
            for thread in threads:
                if thread is not threading.current_thread():  # a worker may close its own pool
                    thread.join(None if deadline is None else max(0.0, deadline - monotonic()))
