"""The pending table: one slot per request in flight, and whether the server is lost.

:class:`PendingTable` is owned by :class:`~agcore_sync.mcp.client.session.McpClient`.
A caller opens a slot for its request id before sending
(:meth:`~PendingTable.open`) and waits on it; the transport's reader hands
each response to its slot (:meth:`~PendingTable.deliver`); a timed-out
caller cancels its slot, so a late answer is dropped
(:meth:`~PendingTable.cancel`); and when the server goes away,
:meth:`~PendingTable.lose` fails every slot at once and refuses new ones
until a restart ends the loss (:meth:`~PendingTable.recover`). One lock guards the slots
and the loss together, so a slot is either opened before a loss (and failed
by it) or refused after it: none is left waiting for an answer that never
comes.
"""

from __future__ import annotations

import threading
from typing import Any, Dict, Optional, Tuple

from agcore_sync.mcp.errors import McpConnectionError, McpError
from agcore_sync.mcp.shared import jsonrpc

__all__ = ["PendingTable", "Slot", "copy_lost", "result_of", "with_stderr", "HANDOFF_TIMEOUT"]

#: A slot taken from the table is released immediately after; this bounds
#: a caller's wait for that release all the same.
HANDOFF_TIMEOUT = 1.0
_allocate_lock = threading.Lock


class Slot:
    """Where the reader leaves the answer to one request.

    ``done`` is created held; whoever takes the slot out of the table (the
    reader with the response, or a failure) stores ``response`` and releases
    it, exactly once, and the caller waits by acquiring it. A bare lock is
    the cheapest handoff between threads (an Event wraps a Condition around
    one, and costs a second lock and a waiter list per wait).
    """

    __slots__ = ("done", "response")

    def __init__(self) -> None:
        self.done = _allocate_lock()
        self.done.acquire()
        #: The response message, or the McpConnectionError that ended the wait.
        self.response: Any = None


class PendingTable:
    """The requests of one client waiting for their answers; safe from any thread.

    Args:
        server_name: the server's name, for errors.
    """

    def __init__(self, server_name: str) -> None:
        self.server_name = server_name
        self._lock = threading.Lock()
        self._slots: Dict[Any, Slot] = {}
        # Set by lose(), cleared by recover(); while set, open() refuses.
        self._lost: Optional[McpConnectionError] = None
        self._losses = 0
        self._generation = 0

    @property
    def lost(self) -> Optional[McpConnectionError]:
        """Why the server is gone (None while it is there, or back after a restart)."""
        return self._lost

    @property
    def losses(self) -> int:
        """How many times the server went away (each :meth:`lose`)."""
        return self._losses

    @property
    def generation(self) -> int:
        """How many times the server came back (each successful :meth:`recover`)."""
        return self._generation

    def open(
        self, request_id: Any, *, epoch: Optional[int] = None, tool_name: Optional[str] = None
    ) -> Tuple[Slot, int, int]:
        """Open the slot of ``request_id``; return it with the generation and loss count it was opened in.

        ``epoch`` is set only for a restart's handshake: the slot is then
        opened although the server is lost, unless it was lost again since
        the restart began (the loss count moved past ``epoch``).

        Raises:
            McpConnectionError: the server is lost (a fresh copy of the loss).
        """
        slot = Slot()
        with self._lock:
            lost = self._lost
            if lost is not None and (epoch is None or self._losses != epoch):
                raise copy_lost(lost, tool_name=tool_name)
            self._slots[request_id] = slot
            return slot, self._generation, self._losses

    def deliver(self, request_id: Any, message: Dict[str, Any]) -> bool:
        """Hand ``message`` to the slot of ``request_id``; False if none waits (cancelled or unknown)."""
        with self._lock:
            slot = self._slots.pop(request_id, None)
        if slot is None:
            return False
        slot.response = message
        slot.done.release()
        return True

    def cancel(self, request_id: Any) -> bool:
        """Take the slot of ``request_id`` out unanswered; False if it was already taken."""
        with self._lock:
            return self._slots.pop(request_id, None) is not None

    def fail_all(self, error: McpConnectionError) -> None:
        """Fail every open slot with ``error`` (the client closing); later slots still open."""
        with self._lock:
            slots, self._slots = self._slots, {}
        _fail(slots, error)

    def lose(self, error: McpConnectionError) -> int:
        """Record that the server went away: fail every slot, refuse new ones; return the loss count."""
        with self._lock:
            self._losses += 1
            self._lost = error
            slots, self._slots = self._slots, {}
            losses = self._losses
        _fail(slots, error)
        return losses

    def give_up(self, error: McpConnectionError) -> None:
        """Make ``error`` the final loss (no restart will come); a no-op while the server is there."""
        with self._lock:
            if self._lost is not None:
                self._lost = error

    def recover(self, epoch: int) -> bool:
        """End the loss if none came after the ``epoch``-th; True if the server is back."""
        with self._lock:
            if self._losses != epoch:
                return False
            self._lost = None
            self._generation += 1
            return True


def _fail(slots: Dict[Any, Slot], error: McpConnectionError) -> None:
    for slot in slots.values():
        slot.response = error
        slot.done.release()


def with_stderr(message: str, stderr_tail: str) -> str:
    """Return ``message`` followed by the server's last stderr lines, if any and not already in it."""
    tail = stderr_tail.strip()
    if not tail or tail in message:
        return message
    return f"{message}\nlast lines of the server's stderr:\n{tail}"


def copy_lost(error: McpConnectionError, tool_name: Optional[str] = None) -> McpConnectionError:
    """Return a fresh copy of ``error`` for one raise.

    One exception object raised in many threads would share (and garble)
    its traceback.
    """
    return McpConnectionError(
        error.message,
        tool_name=tool_name or error.tool_name,
        exit_code=error.exit_code,
        stderr_tail=error.stderr_tail,
    )


def result_of(response: Any, server_name: str, method: str, tool_name: Optional[str]) -> Dict[str, Any]:
    """Return the ``result`` object of a response taken from a slot.

    Raises:
        McpConnectionError: the slot was failed (a fresh copy).
        McpError: the server answered with a JSON-RPC error (``.code``,
            ``.data``), or with a result that is not an object.
    """
    if isinstance(response, McpConnectionError):
        raise copy_lost(response, tool_name=tool_name)
    if not isinstance(response, dict):  # unreachable: a taken slot always gets its answer
        raise McpError(f"MCP server {server_name!r}: no answer recorded for {method}", tool_name=tool_name)
    error = response.get("error")
    if error is not None:
        code, message, data = _error_parts(error)
        raise McpError(
            f"MCP server {server_name!r} answered {method}"
            f"{f' for tool {tool_name!r}' if tool_name else ''} with error {code}: {message}",
            tool_name=tool_name,
            code=code,
            data=data,
        )
    result = response.get("result")
    if not isinstance(result, dict):
        raise McpError(
            f"MCP server {server_name!r} answered {method} with a result that is not an object",
            tool_name=tool_name,
            code=jsonrpc.INVALID_REQUEST,
        )
    return result


def _error_parts(error: Any) -> Tuple[Optional[int], str, Any]:
    if not isinstance(error, dict):
        return None, str(error), None
    code = error.get("code")
    return (code if isinstance(code, int) else None), str(error.get("message", "")), error.get("data")
