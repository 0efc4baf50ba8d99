"""Driving a turn's steps, with each round's tool run in the driving thread.

A :class:`~agcore_sync.loop.tool_loop.ToolLoop` turn is a generator: it
yields a :class:`ToolBatch` whenever a round's calls must run and gets their
results back. A :class:`Drive` runs that generator. Handing each tool to a
pool thread and waiting for it costs two thread wake-ups per round, most of
a round's time; here a lone call with a timeout runs in the thread that
drives the turn instead (``ToolRegistry.invoke_here``), while the loop
layer's deadline thread for that registry watches it.
Should the tool overstay its timeout, the call is settled with
``ToolTimeoutError`` and a new thread goes on with the turn from there: a
generator can be resumed by any thread. The stuck thread is abandoned, as a
stuck pool worker is: it leaves when the tool returns.

Who drives:

- a stream's worker thread drives its whole turn (``hand_off=False``);
- a sync caller drives until the first call with a timeout, then hands the
  turn to one of the registry's turn threads (``agcore-loop-<n>``, owned by
  :class:`~agcore_sync.loop._turn_threads.TurnThreads`, kept
  ``TURN_THREAD_IDLE_SECS`` for a next turn) and waits for the end: two
  hand-offs per turn instead of two per round. The caller must not run such
  a tool itself, since it could not leave it at the deadline.

Context: the generator always runs in the Drive's own copy of the
``contextvars`` context of the thread that made it, whichever thread sends
to it; each batch runs in a copy of that copy (a stuck tool never holds the
context the next thread needs to enter).
"""

from __future__ import annotations

import contextvars
import functools
import itertools
import threading
from typing import Any, Callable, Generator, List, NamedTuple, Optional, Tuple

from agcore_sync.loop._turn_threads import TurnThreads
from agcore_sync.tools.error import ToolError
from agcore_sync.tools.invocation import CompletionCallback, ToolCall, ToolInvocation
from agcore_sync.tools.registry import ToolRegistry

__all__ = ["Drive", "Finish", "ToolBatch"]

_numbers = itertools.count(1)

#: Called once when the steps end: ``finish(result, error)``, in the thread that ended them.
Finish = Callable[[Any, Optional[BaseException]], None]


class ToolBatch(NamedTuple):
    """What a turn yields: one round's calls to run, their timeout, and who hears of each result.

    ``registry`` runs the calls instead of the Drive's own (a turn handed off to another agent's tools).
    Immutable; a NamedTuple rather than an attrs class because one is made every round.
    """

    calls: List[ToolCall]
    timeout: Optional[float]
    on_complete: Optional[CompletionCallback]
    registry: Optional[ToolRegistry] = None


Steps = Generator[ToolBatch, List[ToolInvocation], Any]


class Drive:
    """Runs one turn's steps to their end, moving to another thread when it must.

    Args:
        steps: the turn's generator, not started.
        registry: runs the batches.
        finish: called once with the result or the error, in the thread
            that ended the steps (None: read :meth:`outcome` after
            :attr:`ended`).
        hand_off: the thread calling :meth:`go` waits for the end instead
            of running a watched tool (a sync caller, whose turn goes on in
            the loop layer's ``agcore-loop-<n>`` threads); False for a thread
            of the library's own (a stream's worker, ``agcore-stream-<n>``).

    Attributes:
        thread: the thread driving now, or the last one; None before any.
        ended: set once the steps have ended and ``finish`` has returned.
    """

    def __init__(self, steps: Steps, registry: ToolRegistry, *, finish: Optional[Finish] = None,
                 hand_off: bool = False) -> None:
        self._steps = steps
        self._registry = registry
        self._finish = finish
        # True while the driving thread is a sync caller (it must not run a watched tool).
        self._hand_off = hand_off
        # A sync turn: its threads come from the registry, kept for the next turn.
        self._pooled = hand_off
        self._name = "agcore-loop" if hand_off else "agcore-stream"
        self._context = contextvars.copy_context()
        self._result: Any = None
        self._error: Optional[BaseException] = None
        self.thread: Optional[threading.Thread] = None
        self.ended = threading.Event()
        # The last registry a watched call ran with, and the watch for it (made once per turn, not per round).
        self._watching: Optional[Tuple[ToolRegistry, Callable[..., Callable[[], bool]]]] = None

    def go(self, value: Any = None, error: Optional[BaseException] = None,
           batch: Optional[ToolBatch] = None) -> None:
        """Drive from this thread until the steps end or another thread takes them over.

        Sends ``value`` (or throws ``error``) into the steps, or first runs
        ``batch`` if given (the steps wait for its results).
        """
        steps, context = self._steps, self._context
        while True:
            if batch is None:
                try:
                    if error is None:
                        batch = context.run(steps.send, value)
                    else:
                        batch = context.run(steps.throw, error)
                except StopIteration as stop:
                    self._end(stop.value, None)
                    return
                except BaseException as exc:  # noqa: BLE001 - the turn's outcome, delivered by _end
                    self._end(None, exc)
                    return
                # Outside the try below: once a thread has the turn, nothing this
                # thread meets (a KeyboardInterrupt) may go into the steps.
                if batch.timeout is not None and self._hand_off and self._start(batch):
                    return
            value, error = None, None
            registry = self._registry if batch.registry is None else batch.registry
            try:
                if batch.timeout is None or self._hand_off:
                    # No timeout to watch (or no thread to be had: the pool runs the
                    # calls); no other thread can take over, so the context itself will do.
                    value = context.run(registry.invoke_all, batch.calls, batch.timeout,
                                        on_complete=batch.on_complete)
                else:
                    watch = self._watch_for(registry)
                    value = context.copy().run(registry.invoke_here, batch.calls, batch.timeout,
                                               on_complete=batch.on_complete, watch=watch)
                    if value is None:
                        return  # the tool overstayed: another thread took the turn over
            except BaseException as exc:  # noqa: BLE001 - goes into the turn, as if the call raised there
                error = exc
            batch = None

    def outcome(self) -> Any:
        """Return the steps' result or raise their error (once :attr:`ended` is set)."""
        if self._error is not None:
            raise self._error
        return self._result

    def start(self) -> None:
        """Drive from the beginning in a new thread (a stream's worker).

        Raises:
            RuntimeError: the thread could not start.
        """
        self._spawn(self.go)

    def _start(self, batch: ToolBatch) -> bool:
        """Hand the turn, at ``batch``, to another thread; False if no thread could start."""
        self._hand_off = False
        try:
            self._elsewhere(functools.partial(self._go_on, batch))
        except RuntimeError:  # "can't start new thread": this thread goes on, the pool runs the calls
            self._hand_off = True
            return False
        return True

    def _go_on(self, batch: ToolBatch) -> None:
        self.thread = threading.current_thread()
        self.go(batch=batch)

    def _watch_for(self, registry: ToolRegistry) -> Callable[..., Callable[[], bool]]:
        """Return the ``watch`` for ``registry.invoke_here``: its TurnThreads' deadline watcher, reporting to us.

        Raises:
            ToolError: the registry is closed.
        """
        watching = self._watching
        if watching is None or watching[0] is not registry:
            watching = self._watching = (registry, functools.partial(TurnThreads.of(registry).watch,
                                                                     on_overdue=self._overdue))
        return watching[1]

    def _overdue(self, settle: Callable[[], List[ToolInvocation]]) -> None:
        """On the deadline thread: a watched tool overstayed; another thread settles it and goes on."""
        try:
            self._elsewhere(functools.partial(self._go_after, settle))
        except RuntimeError as exc:
            self._end(None, exc)

    def _go_after(self, settle: Callable[[], List[ToolInvocation]]) -> None:
        # Reports the timeout (a stream's event may wait for room) here, not on the deadline thread.
        self.thread = threading.current_thread()
        self.go(self._context.copy().run(settle))

    def _elsewhere(self, work: Callable[[], None]) -> None:
        """Run ``work`` on another thread: a registry's turn thread for a sync turn, else a new one."""
        if self._pooled:
            try:
                TurnThreads.of(self._registry).hand_over(work, on_dropped=self._dropped)
                return
            except ToolError:
                pass  # the registry is closed: a thread of the turn's own ends it
        self._spawn(work)

    def _dropped(self) -> None:
        self._end(None, ToolError("the turn could not go on: its tool registry was closed", recoverable=False))

    def _spawn(self, target: Callable[..., None], *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, name=f"{self._name}-{next(_numbers)}", daemon=True)
        previous, self.thread = self.thread, thread
        try:
            thread.start()
        except RuntimeError:
            self.thread = previous
            raise

    def _end(self, result: Any, error: Optional[BaseException]) -> None:
        if self.ended.is_set():  # only one thread ever holds the steps; this is a safety net
            return
        self._result, self._error = result, error
        try:
            if self._finish is not None:
                self._context.run(self._finish, result, error)
        finally:
            self.ended.set()
