"""ToolRegistry: register tools, then invoke them by name; ToolInvocation: one call's record.

Inside :meth:`ToolRegistry.invoke` a call goes through, in this order: look
up the tool, check its permissions, validate the arguments against its JSON
Schema, run it, check that its result is JSON-serialisable. A call that is
denied or has invalid arguments never reaches ``execute``.

This module does no I/O. The registry owns one thread pool, created on first
need; see :class:`ToolRegistry` for its lifecycle.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from concurrent.futures import CancelledError, Future, wait
from concurrent.futures import TimeoutError as FuturesTimeoutError
from time import perf_counter
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import attrs

from agcore_sync.llm.types import ToolDef
from agcore_sync.tools import _validation
from agcore_sync.tools._pool import DaemonPool
from agcore_sync.tools.base import BaseTool
from agcore_sync.tools.error import (
    ToolError,
    ToolExecutionError,
    ToolNotFoundError,
    ToolTimeoutError,
)
from agcore_sync.tools.permission import Permission, PermissionChecker

__all__ = [
    "ToolInvocation",
    "ToolRegistry",
    "ToolCall",
    "CompletionCallback",
    "CLOSE_TIMEOUT_SECS",
    "DEFAULT_MAX_WORKERS",
]

logger = logging.getLogger(__name__)

#: How long :meth:`ToolRegistry.close` waits for running tools before it
#: abandons them (seconds). A thread cannot be killed; a stuck tool keeps its
#: worker until it returns, and close() must not hang on it.
CLOSE_TIMEOUT_SECS = 2.0

#: Workers in a registry's pool when ``max_workers`` is None. Tools mostly
#: wait on I/O, so more workers than cores pay off; the cap bounds the threads.
DEFAULT_MAX_WORKERS = min(32, max(8, 4 * (os.cpu_count() or 1)))

#: A call for :meth:`ToolRegistry.invoke_all`: ``(name, args)`` or ``(tool_call_id, name, args)``.
ToolCall = Union[Tuple[str, Any], Tuple[Optional[str], str, Any]]


@attrs.frozen
class ToolInvocation:
    """The record of one tool call: what was asked and what came of it.

    Exactly one of ``output`` and ``error`` is meaningful: ``error`` is None
    when the call succeeded.

    Args:
        tool_name: the tool that was called.
        input: the arguments as given (not necessarily a dict).
        output: the tool's result; None on error.
        error: the :class:`~agcore_sync.tools.error.ToolError` (or other
            exception) the call ended with, or None.
        tool_call_id: the model's id for the call, if any.
        duration_s: how long validation and execution took, in seconds; for
            a call that timed out, how long it was waited for.
    """

    tool_name: str
    input: Any
    output: Any = None
    error: Optional[BaseException] = None
    tool_call_id: Optional[str] = None
    duration_s: float = 0.0
    _text: Optional[str] = attrs.field(default=None, init=False, eq=False, repr=False)

    @property
    def ok(self) -> bool:
        """True if the call succeeded."""
        return self.error is None

    def result(self) -> Any:
        """Return the output.

        Raises:
            BaseException: the call's ``error``, if it failed.
        """
        if self.error is not None:
            raise self.error
        return self.output

    def content(self) -> str:
        """Return the text sent back to the model.

        A str result is itself; any other result is its JSON
        (``ensure_ascii=False``); an error is ``Error in tool "<name>": <error>``.

        Raises:
            ToolExecutionError: the result is not JSON-serialisable (bytes,
                arbitrary objects...). Invocations made by a registry never
                raise here: the registry has already turned such a result into
                an error.
        """
        if self._text is None:
            if self.error is not None:
                text = f'Error in tool "{self.tool_name}": {self.error}'
            else:
                text = _result_text(self.tool_name, self.output)
            # Frozen, so cache through object.__setattr__; racing threads compute the same text.
            object.__setattr__(self, "_text", text)
        return self._text


def _result_text(tool_name: str, output: Any) -> str:
    if isinstance(output, str):
        return output
    try:
        return json.dumps(output, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as exc:
        err = ToolExecutionError(
            f'the result of tool "{tool_name}" is not JSON-serialisable ({exc}); '
            "a tool must return str, int, float, bool, None, or lists and dicts of them",
            tool_name=tool_name,
        )
        raise err from exc


class _Entry:
    """A registered tool with what the registry derives from it once."""

    __slots__ = ("tool", "permissions", "validator")

    def __init__(self, tool: BaseTool) -> None:
        if not isinstance(tool, BaseTool):
            raise TypeError(f"expected a BaseTool, got {type(tool).__name__}")
        if not isinstance(tool.name, str):
            raise TypeError(f"a tool's name must be a str, got {type(tool.name).__name__}")
        if not tool.name:
            raise ValueError("a tool's name must not be empty")
        self.tool = tool
        self.permissions = tuple(Permission.of(p) for p in tool.required_permissions)
        #: Compiled on first use; dropped with the entry on unregister.
        self.validator: Optional[_validation.ArgumentValidator] = None


#: A call ready to run: its position in the batch, the entry looked up, the
#: name, the arguments, the call id.
_Call = Tuple[int, _Entry, str, Any, Optional[str]]

#: ``on_complete(position, invocation)`` for :meth:`ToolRegistry.invoke_all`.
CompletionCallback = Callable[[int, ToolInvocation], None]


class _Batch:
    """The results of one batch of calls; each call's result is settled once.

    A worker settles its call when the tool returns; the caller settles the
    calls still unfinished at the deadline. Whichever comes first wins, so a
    call is reported to ``on_complete`` exactly once.
    """

    __slots__ = ("results", "on_complete", "lock")

    def __init__(self, size: int, on_complete: Optional[CompletionCallback]) -> None:
        self.results: List[Optional[ToolInvocation]] = [None] * size
        self.on_complete = on_complete
        self.lock = threading.Lock()

    def settle(self, position: int, invocation: ToolInvocation) -> None:
        with self.lock:
            if self.results[position] is not None:
                return
            self.results[position] = invocation
        if self.on_complete is not None:
            try:
                self.on_complete(position, invocation)
            except Exception:
                logger.exception("on_complete callback raised for tool %r; ignored", invocation.tool_name)


def _closed_error() -> ToolError:
    return ToolError("the tool registry is closed; create a new ToolRegistry", recoverable=False)


def _unpack(call: Sequence[Any]) -> Tuple[Optional[str], str, Any]:
    if len(call) == 2:
        return None, call[0], call[1]
    if len(call) == 3:
        return call[0], call[1], call[2]
    raise ValueError(f"a tool call is (name, args) or (tool_call_id, name, args), got {len(call)} items")


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
    from exiting.

    Args:
        permission_checker: checks every call's permissions; None means no
            checks. Pass ``PermissionChecker(PermissionConfig())`` for the
            seed's defaults.
        max_workers: the pool's size; None means :data:`DEFAULT_MAX_WORKERS`.
    """

    __slots__ = ("_checker", "_max_workers", "_lock", "_tools", "_executor", "_running", "_closed")

    def __init__(
        self, permission_checker: Optional[PermissionChecker] = None, max_workers: Optional[int] = None
    ) -> None:
        if max_workers is not None and (not isinstance(max_workers, int) or max_workers < 1):
            raise ValueError(f"max_workers must be a positive int or None, got {max_workers!r}")
        self._checker = permission_checker
        self._max_workers = max_workers or DEFAULT_MAX_WORKERS
        # Guards _tools, _executor, _closed and additions to _running.
        self._lock = threading.Lock()
        self._tools: Dict[str, _Entry] = {}
        self._executor: Optional[DaemonPool] = None
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
        entries = [_Entry(tool) for tool in tools]
        with self._lock:
            if self._closed:
                raise _closed_error()
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
            return self._run(entry, name, args, tool_call_id)
        batch = _Batch(1, None)
        self._collect(batch, self._submit(batch, [(0, entry, name, args, tool_call_id)]), deadline, timeout)
        return batch.results[0]  # type: ignore[return-value]

    def invoke_all(
        self,
        calls: Iterable[ToolCall],
        timeout: Optional[float] = None,
        *,
        on_complete: Optional[CompletionCallback] = None,
    ) -> List[ToolInvocation]:
        """Run several tool calls in parallel; return their results in call order.

        Unknown tools and denied calls are not raised: they are results with
        ``ToolNotFoundError`` / ``PermissionDeniedError`` in ``.error``, like
        every other failure.

        Args:
            calls: ``(name, args)`` or ``(tool_call_id, name, args)`` tuples.
            timeout: one deadline for the whole batch, in seconds from this
                call; every call unfinished by then, queued ones included,
                gets ``ToolTimeoutError``. None means no limit.
            on_complete: called as ``on_complete(position, invocation)``
                exactly once per call, as soon as its result is known
                (``position`` indexes ``calls``), before this method returns.
                It runs in whichever thread settled the call (a pool worker or
                the caller), so it must be thread-safe; what it raises is
                logged and ignored.

        Raises:
            ToolError: the registry is closed (``recoverable=False``).
            ValueError: a call is not a 2- or 3-tuple.
        """
        deadline = None if timeout is None else perf_counter() + timeout
        if self._closed:
            raise _closed_error()
        unpacked = [_unpack(call) for call in calls]
        batch = _Batch(len(unpacked), on_complete)
        runnable: List[_Call] = []
        for position, (call_id, name, args) in enumerate(unpacked):
            try:
                entry = self._authorised(name)
            except ToolError as exc:
                batch.settle(position, ToolInvocation(name, args, error=exc, tool_call_id=call_id))
                continue
            runnable.append((position, entry, name, args, call_id))
        if deadline is None and runnable:
            # No deadline to watch, so the caller runs the first call itself:
            # one thread handoff fewer, and none at all for a lone call.
            pending = self._submit(batch, runnable[1:])
            position, entry, name, args, call_id = runnable[0]
            batch.settle(position, self._run(entry, name, args, call_id))
            self._collect(batch, pending, None, None)
        else:
            self._collect(batch, self._submit(batch, runnable), deadline, timeout)
        return batch.results  # type: ignore[return-value]

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
            running = dict(self._running)
        if executor is None:
            return
        executor.shutdown(wait=False, cancel_futures=True)
        _, stuck = wait(running, timeout=CLOSE_TIMEOUT_SECS)
        if stuck:
            logger.warning(
                "ToolRegistry.close(): %d tool call(s) still running after %.1f s, abandoned: %s",
                len(stuck),
                CLOSE_TIMEOUT_SECS,
                ", ".join(sorted(running[f] for f in stuck)),
            )
            return
        executor.shutdown(wait=True, timeout=CLOSE_TIMEOUT_SECS)  # nothing runs: the workers are only exiting

    def __enter__(self) -> ToolRegistry:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- internals --------------------------------------------------------

    def _authorised(self, name: str) -> _Entry:
        """Look the tool up and check its permissions (steps 1 and 2)."""
        with self._lock:
            if self._closed:
                raise _closed_error()
            entry = self._tools.get(name)
        if entry is None:
            raise ToolNotFoundError(f'no tool named "{name}" is registered; use one of the tools offered', name)
        checker = self._checker
        if checker is not None:
            checker.check(name, entry.permissions)
        return entry

    def _run(self, entry: _Entry, name: str, args: Any, tool_call_id: Optional[str]) -> ToolInvocation:
        """Validate, execute and serialise (steps 3 to 5); raise no Exception."""
        start = perf_counter()
        try:
            validator = entry.validator
            if validator is None:
                # Two threads may both compile on a first call; either result is fine.
                validator = entry.validator = _validation.compile_validator(name, entry.tool.parameters)
            validator.validate(args)
            output = entry.tool.execute(args)
            invocation = ToolInvocation(name, args, output, None, tool_call_id, perf_counter() - start)
            invocation.content()  # fails here, not in the loop, if the result cannot go to the model
            return invocation
        except ToolError as exc:
            if exc.tool_name is None:
                exc.tool_name = name
            error: ToolError = exc
        except Exception as exc:
            error = ToolExecutionError(f'tool "{name}" raised {type(exc).__name__}: {exc}', name)
            error.__cause__ = exc
        return ToolInvocation(name, args, None, error, tool_call_id, perf_counter() - start)

    def _run_in_batch(self, batch: _Batch, position: int, entry: _Entry, name: str, args: Any, call_id: Any) -> None:
        batch.settle(position, self._run(entry, name, args, call_id))

    def _submit(self, batch: _Batch, calls: List[_Call]) -> List[Tuple[_Call, Future]]:
        if not calls:
            return []
        pending = []
        with self._lock:
            if self._closed:
                raise _closed_error()
            if self._executor is None:
                self._executor = DaemonPool(self._max_workers)
            for call in calls:
                future = self._executor.submit(self._run_in_batch, batch, *call)
                self._running[future] = call[2]
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

    def _collect(
        self, batch: _Batch, pending: List[Tuple[_Call, Future]], deadline: Optional[float], timeout: Optional[float]
    ) -> None:
        """Wait for submitted calls until ``deadline``; settle the unfinished ones as timed out."""
        if not pending:
            return
        for _, future in pending:
            # One future at a time: cheaper than concurrent.futures.wait, same deadline.
            try:
                future.exception(None if deadline is None else max(0.0, deadline - perf_counter()))
            except FuturesTimeoutError:
                break  # the deadline has passed: every unfinished call is timed out below
            except CancelledError:
                continue
        for (position, _, name, args, call_id), future in pending:
            if batch.results[position] is not None:
                if not future.done():
                    # Its worker has settled it and is still in on_complete: let
                    # that finish, so every report comes before we return.
                    future.exception()
                continue
            error: ToolError
            if future.cancelled():
                error = ToolError(f'tool "{name}" did not run: the registry was closed', name, recoverable=False)
            elif future.done():
                # Only a BaseException that is not an Exception gets out of _run.
                exc = future.exception()
                error = ToolExecutionError(f'tool "{name}" was interrupted by {type(exc).__name__}', name)
                error.__cause__ = exc
            elif future.cancel():
                error = ToolTimeoutError(
                    f'tool "{name}" could not start within its {timeout:g} s timeout: every worker was busy', name
                )
            else:
                error = ToolTimeoutError(
                    f'tool "{name}" did not finish within its {timeout:g} s timeout; '
                    "it was abandoned and may still be running",
                    name,
                )
            # A timed-out call lasted from the start of the batch to now.
            elapsed = 0.0 if deadline is None or timeout is None else perf_counter() - (deadline - timeout)
            batch.settle(position, ToolInvocation(name, args, None, error, call_id, elapsed))
