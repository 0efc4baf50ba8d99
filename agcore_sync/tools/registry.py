"""ToolRegistry: register tools, then invoke them by name.

Inside :meth:`ToolRegistry.invoke` a call goes through, in this order: look
up the tool, check its permissions, validate the arguments against its JSON
Schema, run it, check that its result is JSON-serialisable. A call that is
denied or has invalid arguments never reaches ``execute``.

This module does no I/O. The registry owns one thread pool (its tools'),
created on first need; see :class:`ToolRegistry` for its lifecycle. The
threads that drive sync tool-loop turns and watch their deadlines belong to
the loop layer (``loop/_turn_threads.py``), which keeps them per registry
through :meth:`ToolRegistry.attached` so that :meth:`ToolRegistry.close`
stops them too. The record of a call,
:class:`~agcore_sync.tools.invocation.ToolInvocation`, lives in
:mod:`agcore_sync.tools.invocation`; how a batch's calls are settled, in
``tools/_batch.py``.

Every tool runs in a copy of the ``contextvars`` context of the thread that
called ``invoke`` / ``invoke_all``, taken at the call: a ``ContextVar`` set by
the caller (a web request's id, a tracing span) is visible inside the tool,
and a tool that sets one changes only its copy.
"""

from __future__ import annotations

import contextvars
import os
import threading
from time import perf_counter
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Tuple

from agcore_sync import _check, _instrument
from agcore_sync.llm.types import ToolDef
from agcore_sync.tools import _validation
from agcore_sync.tools._batch import Batch, Call, collect, overdue_error
from agcore_sync.tools._entry import Entry, closed_error
from agcore_sync.tools.base import BaseTool
from agcore_sync.tools.error import ToolError, ToolExecutionError, ToolNotFoundError
from agcore_sync.tools.invocation import CompletionCallback, ToolCall, ToolCallLike, ToolInvocation
from agcore_sync.tools.permission import PermissionChecker
from agcore_sync.tools.result_json import result_text

if TYPE_CHECKING:  # the pools (and concurrent.futures) load when first needed
    from concurrent.futures import Future

    from agcore_sync._pool import DaemonPool

__all__ = ["ToolInvocation", "ToolRegistry", "ToolCall", "ToolCallLike", "CompletionCallback",
           "CLOSE_TIMEOUT_SECS", "DEFAULT_MAX_WORKERS", "TURN_THREAD_IDLE_SECS"]

logger = _instrument.get_logger(__name__)

#: How long :meth:`ToolRegistry.close` waits for running tools before it
#: abandons them (seconds). A thread cannot be killed; a stuck tool keeps its
#: worker until it returns, and close() must not hang on it.
CLOSE_TIMEOUT_SECS = 2.0

#: Seconds an idle turn thread (``agcore-loop-<n>``) waits for a turn before it exits. The turn
#: threads belong to the loop layer, which reads this when it starts a registry's pool of them.
TURN_THREAD_IDLE_SECS = 60.0

#: Workers in a registry's pool when ``max_workers`` is None. Tools mostly
#: wait on I/O, so more workers than cores pay off; the cap bounds the threads.
DEFAULT_MAX_WORKERS = min(32, max(8, 4 * (os.cpu_count() or 1)))


class ToolRegistry:
    """Tools by name, and the thread pool that runs them in parallel.

    Every method may be called from any thread; ``register`` and
    ``unregister`` may race with invocations (a call uses the tool it looked
    up).

    Threads: the registry owns a pool of worker threads (named
    ``agcore-tool-<n>``), created on the first call that needs
    it: ``invoke`` with a timeout, or ``invoke_all`` with a timeout or several
    calls. Without a timeout a lone call runs inline, in the caller's thread,
    and so does the first call of a batch. :meth:`close` (or leaving the
    ``with`` block) cancels queued calls, waits at most
    :data:`CLOSE_TIMEOUT_SECS` for running ones, logs those still running and
    returns, and joins the workers when none is stuck. A timed-out tool is
    abandoned, not killed: it keeps its worker until it returns. The workers
    are daemons, so a tool that never returns cannot keep the interpreter
    from exiting. Each call runs in a copy of the caller's ``contextvars``
    context taken when it was submitted, inline or on the pool.

    The tool loop runs a round's lone call with a timeout in the thread
    driving the turn, not on the pool (:meth:`invoke_here`): for a sync
    turn, one of the loop layer's turn threads for this registry
    (``agcore-loop-<n>``, one per turn running at once, kept
    :data:`TURN_THREAD_IDLE_SECS` for a next turn). One more thread,
    ``agcore-deadlines-<n>`` (started with the first such call), watches
    those calls' deadlines. The loop layer owns both and attaches them here
    (:meth:`attached`); :meth:`close` stops them too, waiting at most
    :data:`CLOSE_TIMEOUT_SECS` in all for a turn still running (it ends at
    its next tool call); while a watched call still runs, its deadline
    fires first.

    Args:
        permission_checker: checks every call's permissions; None means no
            checks. Pass ``PermissionChecker(PermissionConfig())`` for the
            seed's defaults.
        max_workers: the pool's size; None means :data:`DEFAULT_MAX_WORKERS`.
    """

    __slots__ = ("_checker", "_max_workers", "_lock", "_tools", "_executor", "_attached", "_running", "_closed")

    def __init__(
        self, permission_checker: Optional[PermissionChecker] = None, max_workers: Optional[int] = None
    ) -> None:
        _check.optional_instance("ToolRegistry", "permission_checker", permission_checker, PermissionChecker,
                                 "a PermissionChecker, e.g. PermissionChecker(PermissionConfig())")
        _check.positive_int("ToolRegistry", "max_workers", max_workers, allow_none=True)
        self._checker = permission_checker
        self._max_workers = max_workers or DEFAULT_MAX_WORKERS
        # Guards _tools, _executor, _closed and additions to _running.
        self._lock = threading.Lock()
        self._tools: Dict[str, Entry] = {}
        self._executor: Optional[DaemonPool] = None
        # What other layers keep per registry (see attached()), closed by close().
        self._attached: Dict[Any, Any] = {}
        # Submitted calls not finished yet, with their tool's name (for close()).
        self._running: Dict[Future, str] = {}
        self._closed = False

    @property
    def permission_checker(self) -> Optional[PermissionChecker]:
        """The checker every call goes through, or None for no checks."""
        return self._checker

    def with_permission_checker(self, checker: Optional[PermissionChecker]) -> ToolRegistry:
        """Set the permission checker and return the registry (for chaining)."""
        self._checker = checker
        return self

    # -- registration -----------------------------------------------------

    def register(self, tool: BaseTool) -> None:
        """Add ``tool`` under its name.

        Its ``required_permissions`` are read once, here.

        Raises:
            ToolError: a tool of that name is already registered, or the
                registry is closed.
            TypeError: ``tool`` is not a BaseTool, or declares something that
                is not a permission.
            ValueError: its name or a permission name is empty.
        """
        self.register_all([tool])

    def register_all(self, tools: Iterable[BaseTool]) -> None:
        """Add several tools, all or none.

        Raises:
            ToolError: a name is taken (or repeated among ``tools``), or the
                registry is closed; nothing is registered then.
            TypeError: an item is not a BaseTool, or declares something that
                is not a permission.
            ValueError: a tool's name or a permission name is empty.
        """
        entries = [Entry(tool) for tool in tools]
        with self._lock:
            if self._closed:
                raise closed_error()
            names = set(self._tools)
            for entry in entries:
                name = entry.tool.name
                if name in names:
                    raise ToolError(
                        f'a tool named "{name}" is already registered; unregister it first or rename one',
                        tool_name=name,
                        recoverable=False,
                    )
                names.add(name)
            for entry in entries:
                self._tools[entry.tool.name] = entry

    def unregister(self, name: str) -> Optional[BaseTool]:
        """Remove the tool called ``name`` and return it (None if there is none).

        Calls already running keep using it. Its compiled validator goes
        with it.
        """
        with self._lock:
            entry = self._tools.pop(name, None)
        return None if entry is None else entry.tool

    def get(self, name: str) -> Optional[BaseTool]:
        """Return the tool called ``name``, or None."""
        with self._lock:
            entry = self._tools.get(name)
        return None if entry is None else entry.tool

    def list_tools(self) -> List[str]:
        """Return the registered names, in registration order."""
        with self._lock:
            return list(self._tools)

    def definitions(self) -> List[ToolDef]:
        """Return every tool's :class:`~agcore_sync.llm.types.ToolDef`, for a request."""
        with self._lock:
            tools = [entry.tool for entry in self._tools.values()]
        return [tool.definition() for tool in tools]

    # -- invocation -------------------------------------------------------

    def invoke(
        self, name: str, args: Any, *, tool_call_id: Optional[str] = None, timeout: Optional[float] = None
    ) -> ToolInvocation:
        """Run one tool call.

        With ``timeout=None`` the tool runs in the calling thread; otherwise on
        the pool, and a call still running after ``timeout`` seconds is
        abandoned with ``ToolTimeoutError`` in ``.error``.

        Args:
            name: the tool's name.
            args: the arguments; anything but a dict is invalid (never coerced).
            tool_call_id: the model's id for the call, copied to the result.
            timeout: seconds to wait for the tool, or None for no limit.

        Returns:
            The invocation; invalid arguments, failures, unserialisable
            results and timeouts are in its ``error``.

        Raises:
            ToolNotFoundError: no tool is called ``name``.
            PermissionDeniedError: the permission checker refused the call.
            ToolError: the registry is closed (``recoverable=False``).
        """
        deadline = None if timeout is None else perf_counter() + timeout
        entry = self._authorised(name)
        if deadline is None:
            # Inline, in a copy of the caller's context: a tool that sets a
            # ContextVar must not change the caller's value.
            return contextvars.copy_context().run(self._run, entry, name, args, tool_call_id)
        batch = Batch(1, None)
        collect(batch, self._submit(batch, [Call(0, entry, ToolCall(name, args, tool_call_id))]), deadline, timeout)
        return batch.results[0]  # type: ignore[return-value]

    def invoke_all(
        self,
        calls: Iterable[ToolCallLike],
        timeout: Optional[float] = None,
        *,
        on_complete: Optional[CompletionCallback] = None,
    ) -> List[ToolInvocation]:
        """Run several tool calls in parallel; return their results in call order.

        Unknown tools and denied calls are not raised: they are results with
        ``ToolNotFoundError`` / ``PermissionDeniedError`` in ``.error``, like
        every other failure.

        Args:
            calls: :class:`~agcore_sync.tools.invocation.ToolCall` values, or
                ``(name, args)`` / ``(tool_call_id, name, args)`` tuples.
            timeout: one deadline for the whole batch, in seconds from this
                call; every call unfinished by then, queued ones included,
                gets ``ToolTimeoutError``. None means no limit.
            on_complete: called as ``on_complete(position, invocation)``
                exactly once per call, as soon as its result is known
                (``position`` indexes ``calls``), before this method returns.
                It runs in whichever thread settled the call (a pool worker,
                in the copy of the caller's ``contextvars`` context its tool
                ran in, or the caller), so it must be thread-safe; what it
                raises is logged and ignored.

        Raises:
            ToolError: the registry is closed (``recoverable=False``).
            ValueError: a call is neither a ToolCall nor a 2- or 3-tuple.
        """
        deadline = None if timeout is None else perf_counter() + timeout
        batch, runnable = self._batch(calls, on_complete)
        if deadline is None and runnable:
            # No deadline to watch, so the caller runs the first call itself:
            # one thread handoff fewer, and none at all for a lone call.
            pending = self._submit(batch, runnable[1:])
            contextvars.copy_context().run(self._run_in_batch, batch, runnable[0])
            collect(batch, pending, None, None)
        else:
            collect(batch, self._submit(batch, runnable), deadline, timeout)
        return batch.results  # type: ignore[return-value]

    def invoke_here(
        self,
        calls: Iterable[ToolCallLike],
        timeout: float,
        *,
        on_complete: Optional[CompletionCallback],
        watch: Callable[[float, Callable[[], List[ToolInvocation]]], Callable[[], bool]],
    ) -> Optional[List[ToolInvocation]]:
        """Like :meth:`invoke_all`, but a lone call runs in the calling thread, under a watched deadline.

        Package-internal (not public API): the tool loop's driver
        (``agcore_sync.loop``) calls it to save a round's two thread hand-offs.

        For a lone call, ``watch(deadline, settle)`` is called first
        (``deadline`` a ``perf_counter()`` time) and returns ``disarm``, then
        the tool runs here, then ``disarm()`` is called. ``watch`` arranges
        that, should the deadline come first, another thread calls
        ``settle()``: that settles the call with ``ToolTimeoutError`` (unless
        it has just returned) and returns the results; ``disarm()`` then
        returns False and this method returns None once the tool does
        return; otherwise it returns the results. Several calls run on the pool.

        Raises:
            ToolError: the registry is closed (``recoverable=False``), or
                what ``watch`` raises.
            ValueError: a call is neither a ToolCall nor a 2- or 3-tuple.
        """
        deadline = perf_counter() + timeout
        batch, runnable = self._batch(calls, on_complete)
        if len(runnable) != 1:
            collect(batch, self._submit(batch, runnable), deadline, timeout)
            return batch.results  # type: ignore[return-value]
        runnable_call = runnable[0]
        call = runnable_call.call

        def settle() -> List[ToolInvocation]:
            batch.settle(runnable_call.position, ToolInvocation(
                call.name, call.arguments, None, overdue_error(call.name, timeout), call.id, timeout))
            return batch.results  # type: ignore[return-value]

        disarm = watch(deadline, settle)
        contextvars.copy_context().run(self._run_in_batch, batch, runnable_call)
        if disarm():
            return batch.results  # type: ignore[return-value]
        return None

    def attached(self, key: Any, make: Callable[[], Any]) -> Any:
        """Return what is kept under ``key`` for this registry, made by ``make()`` on the first call.

        Package-internal: the close hook through which another layer of the
        package (the loop layer's turn threads and deadline watcher) keeps a
        thread owner per registry; not part of the public API. The object
        must have ``close(timeout)``: :meth:`close` calls it once, with the
        seconds left of :data:`CLOSE_TIMEOUT_SECS`, after the pool is stopped;
        it must stop and join its threads within that time.

        Raises:
            ToolError: the registry is closed (``recoverable=False``).
        """
        with self._lock:
            if self._closed:
                raise closed_error()
            kept = self._attached.get(key)
            if kept is None:
                kept = self._attached[key] = make()
            return kept

    def _batch(self, calls: Iterable[ToolCallLike],
               on_complete: Optional[CompletionCallback]) -> Tuple[Batch, List[Call]]:
        """Look up and authorise every call: the batch (refusals settled) and the calls to run."""
        if self._closed:
            raise closed_error()
        of = ToolCall.of
        unpacked = [of(call) for call in calls]
        batch = Batch(len(unpacked), on_complete)
        runnable: List[Call] = []
        for position, call in enumerate(unpacked):
            try:
                entry = self._authorised(call.name)
            except ToolError as exc:
                batch.settle(position, ToolInvocation(call.name, call.arguments, error=exc, tool_call_id=call.id))
                continue
            runnable.append(Call(position, entry, call))
        return batch, runnable

    def close(self) -> None:
        """Stop the pool; later registrations and calls raise ``ToolError``.

        Queued calls are cancelled; running ones get :data:`CLOSE_TIMEOUT_SECS`
        to finish, then are abandoned (logged, never waited for). Calling it
        again does nothing.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            executor, self._executor = self._executor, None
            attached = list(self._attached.values())
            running = dict(self._running)
        end = perf_counter() + CLOSE_TIMEOUT_SECS  # one bound for every wait below
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
        stuck: Any = ()
        if running:
            from concurrent.futures import wait  # loaded with the pool

            _, stuck = wait(running, timeout=CLOSE_TIMEOUT_SECS)
        if stuck:
            logger.warning(
                "ToolRegistry.close(): %d tool call(s) still running after %.1f s, abandoned: %s",
                len(stuck),
                CLOSE_TIMEOUT_SECS,
                ", ".join(sorted(running[f] for f in stuck)),
            )
        elif executor is not None:
            executor.shutdown(wait=True, timeout=max(0.0, end - perf_counter()))  # the workers are only exiting
        for kept in attached:
            # The loop's turn threads: a turn still running ends at its next tool call (the
            # registry is closed); a watched tool still running gets its deadline first.
            kept.close(max(0.0, end - perf_counter()))

    def __enter__(self) -> ToolRegistry:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- internals --------------------------------------------------------

    def _authorised(self, name: str) -> Entry:
        """Look the tool up and check its permissions (steps 1 and 2)."""
        with self._lock:
            if self._closed:
                raise closed_error()
            entry = self._tools.get(name)
        if entry is None:
            raise ToolNotFoundError(f'no tool named "{name}" is registered; use one of the tools offered', name)
        checker = self._checker
        if checker is not None:
            checker.check(name, entry.permissions)
        return entry

    def _run(self, entry: Entry, name: str, args: Any, tool_call_id: Optional[str]) -> ToolInvocation:
        """Run one call under its tool-call id (and ``execute_tool`` span, when traced).

        Always called in a context copy of its own (see :meth:`invoke`,
        :meth:`invoke_all`, the pool), which ``_instrument.tool_call`` relies on.
        """
        with _instrument.tool_call(name, tool_call_id, args, entry.tool) as span:
            invocation = self._execute(entry, name, args, tool_call_id)
            if span.recording:
                span.record(invocation)
            return invocation

    def _execute(self, entry: Entry, name: str, args: Any, tool_call_id: Optional[str]) -> ToolInvocation:
        """Validate, execute and serialise (steps 3 to 5); raise no Exception."""
        start = perf_counter()
        try:
            validator = entry.validator
            if validator is None:
                # Two threads may both compile on a first call; either result is fine.
                validator = entry.validator = _validation.compile_validator(name, entry.tool.parameters)
            validator.validate(args)
            output = entry.tool.execute(args)
        except ToolError as exc:
            # On purpose (a tool that says what went wrong) or invalid arguments.
            logger.debug('tool "%s" failed: %s', name, exc, exc_info=True)
            if exc.tool_name is None:
                exc.tool_name = name
            error: ToolError = exc
        except Exception as exc:
            logger.warning('tool "%s" raised %s: %s', name, type(exc).__name__, exc, exc_info=True)
            error = ToolExecutionError(f"{type(exc).__name__}: {exc}", name)
            error.__cause__ = exc
        else:
            try:
                # Fails here, not in the loop, if the result cannot go to the model.
                text = result_text(output)
            except ToolExecutionError as exc:
                logger.warning('tool "%s" returned a result the model cannot get: %s', name, exc)
                exc.tool_name = name
                error = exc
            else:
                return ToolInvocation(name, args, output, None, tool_call_id, perf_counter() - start, text=text)
        return ToolInvocation(name, args, None, error, tool_call_id, perf_counter() - start)

    def _run_in_batch(self, batch: Batch, runnable: Call) -> None:
        call = runnable.call
        batch.settle(runnable.position, self._run(runnable.entry, call.name, call.arguments, call.id))

    def _submit(self, batch: Batch, calls: List[Call]) -> List[Tuple[Call, Future]]:
        if not calls:
            return []
        pending = []
        with self._lock:
            if self._closed:
                raise closed_error()
            if self._executor is None:
                from agcore_sync._pool import DaemonPool

                self._executor = DaemonPool(self._max_workers)
            for call in calls:
                future = self._executor.submit(self._run_in_batch, batch, call)
                self._running[future] = call.call.name
                pending.append((call, future))
        for _, future in pending:
            # Outside the lock: on a future already done the callback runs here, at once.
            future.add_done_callback(self._forget)
        return pending

    def _forget(self, future: Future) -> None:
        # No lock: a single dict.pop is atomic, and taking _lock here, in the
        # worker right after it wakes the caller, would make the caller's next
        # call wait for it.
        self._running.pop(future, None)
