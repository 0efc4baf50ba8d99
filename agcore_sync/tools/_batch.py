"""Settling a batch of tool calls: each call's result is decided exactly once.

:meth:`ToolRegistry.invoke_all <agcore_sync.tools.registry.ToolRegistry.invoke_all>`
(and ``invoke`` with a timeout) submit calls to the registry's pool and
then wait here for one deadline. A worker settles its call when the tool
returns; the caller settles every call still unfinished at the deadline
(timed out, cancelled by ``close()``, or interrupted). Whichever comes first
wins, so ``on_complete`` hears of each call once, before the batch returns.
"""

from __future__ import annotations

import threading
from time import perf_counter
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Tuple

from agcore_sync import _instrument
from agcore_sync.tools.error import ToolError, ToolExecutionError, ToolTimeoutError
from agcore_sync.tools.invocation import CompletionCallback, ToolCall, ToolInvocation

if TYPE_CHECKING:
    from concurrent.futures import Future

__all__ = ["Batch", "Call", "collect", "overdue_error"]

logger = _instrument.get_logger("agcore_sync.tools.registry")


class Call:
    """A call ready to run: its position in the batch, the registry's entry for its tool, the call."""

    __slots__ = ("position", "entry", "call")

    def __init__(self, position: int, entry: Any, call: ToolCall) -> None:
        self.position = position
        self.entry = entry
        self.call = call


class Batch:
    """The results of one batch of calls; each call's result is settled once."""

    __slots__ = ("results", "on_complete", "lock")

    def __init__(self, size: int, on_complete: Optional[CompletionCallback]) -> None:
        self.results: List[Optional[ToolInvocation]] = [None] * size
        self.on_complete = on_complete
        self.lock = threading.Lock()

    def settle(self, position: int, invocation: ToolInvocation) -> None:
        """Record ``invocation`` for ``position`` unless it is settled already; report it."""
        with self.lock:
            if self.results[position] is not None:
                return
            self.results[position] = invocation
        if self.on_complete is not None:
            try:
                self.on_complete(position, invocation)
            except Exception:
                logger.exception("on_complete callback raised for tool %r; ignored", invocation.tool_name)


def collect(batch: Batch, pending: Sequence[Tuple[Call, Future]], deadline: Optional[float],
            timeout: Optional[float]) -> None:
    """Wait for submitted calls until ``deadline``; settle the unfinished ones as failed.

    Args:
        batch: the batch the calls belong to.
        pending: each submitted call with its Future.
        deadline: a ``perf_counter()`` time, or None to wait for every call.
        timeout: the batch's timeout in seconds (for messages and durations).
    """
    if not pending:
        return
    # Loaded with the pool that made the futures: a lone inline call never needs it.
    from concurrent.futures import CancelledError
    from concurrent.futures import TimeoutError as FuturesTimeoutError

    for _, future in pending:
        # One future at a time: cheaper than concurrent.futures.wait, same deadline.
        try:
            future.exception(None if deadline is None else max(0.0, deadline - perf_counter()))
        except FuturesTimeoutError:
            break  # the deadline has passed: every unfinished call is timed out below
        except CancelledError:
            continue
    for runnable, future in pending:
        position, call = runnable.position, runnable.call
        if batch.results[position] is not None:
            if not future.done():
                # Its worker has settled it and is still in on_complete: let
                # that finish, so every report comes before we return.
                future.exception()
            continue
        error = _unfinished_error(future, call.name, timeout)
        # A timed-out call lasted from the start of the batch to now.
        elapsed = 0.0 if deadline is None or timeout is None else perf_counter() - (deadline - timeout)
        batch.settle(position, ToolInvocation(call.name, call.arguments, None, error, call.id, elapsed))


def _unfinished_error(future: Future, name: str, timeout: Optional[float]) -> ToolError:
    """Return the error of a call no worker settled: cancelled, interrupted or timed out."""
    if future.cancelled():
        return ToolError(f'tool "{name}" did not run: the registry was closed', name, recoverable=False)
    if future.done():
        # Only a BaseException that is not an Exception gets out of the registry's _run.
        exc = future.exception()
        error = ToolExecutionError(f'tool "{name}" was interrupted by {type(exc).__name__}', name)
        error.__cause__ = exc
        return error
    if future.cancel():
        return ToolTimeoutError(
            f'tool "{name}" could not start within its {timeout:g} s timeout: every worker was busy', name
        )
    return overdue_error(name, timeout)  # type: ignore[arg-type]


def overdue_error(name: str, timeout: float) -> ToolTimeoutError:
    """Return the error of a call still running at its deadline (abandoned, not killed)."""
    return ToolTimeoutError(
        f'tool "{name}" did not finish within its {timeout:g} s timeout; it was abandoned and may still be running',
        name,
    )
