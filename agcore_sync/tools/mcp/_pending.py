"""The pending table: one slot per request in flight, and the one path every request takes.

:class:`_RequestMixin` is part of :class:`~agcore_sync.tools.mcp.client.McpClient`:
it sends a request, waits on its own slot, routes the server's responses to
the slots (on the transport's reader) and fails every slot when the server
goes away. Its state is the client's, declared below and set up by
``McpClient.__init__``; ``_pending_lock`` guards the table and the restart
bookkeeping alike.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Tuple

from agcore_sync.tools.error import McpConnectionError, McpError, McpNotInitializedError, McpTimeoutError
from agcore_sync.tools.mcp import jsonrpc

if TYPE_CHECKING:
    from agcore_sync.tools.mcp._responder import ServerResponder
    from agcore_sync.tools.mcp.restart import RestartPolicy
    from agcore_sync.tools.mcp.transport import Transport

logger = logging.getLogger("agcore_sync.mcp")

# A slot taken from the pending table is released immediately after;
# this bounds that wait all the same.
_HANDOFF_TIMEOUT = 1.0
_allocate_lock = threading.Lock
# The client's lifecycle states (McpClient._state), shared with the restart runner.
_NEW, _CONNECTING, _READY, _CLOSED = "new", "connecting", "ready", "closed"


class _Slot:
    """Where the reader leaves the answer to one request.

    ``done`` is created held; whoever takes the slot out of the pending table
    (the reader with the response, or a failure) stores ``response`` and
    releases it, exactly once, and the caller waits by acquiring it. A bare
    lock is the cheapest handoff between threads (an Event wraps a Condition
    around one, and costs a second lock and a waiter list per wait).
    """

    __slots__ = ("done", "response")

    def __init__(self) -> None:
        self.done = _allocate_lock()
        self.done.acquire()
        #: The response message, or the McpConnectionError that ended the wait.
        self.response: Any = None


class _RequestMixin:
    """Requests and their slots, for :class:`~agcore_sync.tools.mcp.client.McpClient`."""

    server_name: str
    transport: Transport
    timeout: Optional[float]
    _state: str
    _ids: itertools.count
    _pending: Dict[Any, _Slot]
    _pending_lock: threading.Lock
    _lost: Optional[McpConnectionError]
    _restart: Optional[RestartPolicy]
    _restarting: bool
    _loss_count: int
    _generation: int
    _restarts_since_success: int
    _request_meta: Optional[Dict[str, Any]]
    _cache_lock: threading.Lock
    _tools_generation: int
    _tools_cache: Optional[Tuple[Dict[str, Any], ...]]
    _responder: ServerResponder
    _await_restart: Callable[[Optional[float], Optional[str]], Optional[float]]
    _await_loss_report: Callable[[int, Optional[float]], bool]

    def _check_ready(self, tool_name: Optional[str] = None) -> None:
        state = self._state
        if state == _READY:
            lost = self._lost
            if lost is not None and not self._restarting:
                raise _copy_lost(lost, tool_name=tool_name)
            return  # while a restart runs, _request waits for it
        if state == _CLOSED:
            raise McpNotInitializedError(
                f"MCP client for {self.server_name!r} is closed; create a new McpClient to reconnect"
            )
        raise McpNotInitializedError(
            f"MCP client for {self.server_name!r} is not connected; call connect() or use it in a with block"
        )

    def _request(
        self,
        method: str,
        params: Optional[Dict[str, Any]],
        *,
        timeout: Optional[float],
        cancellable: bool = True,
        progress: bool = False,
        tool_name: Optional[str] = None,
        epoch: Optional[int] = None,
        resend: bool = True,
    ) -> Dict[str, Any]:
        """Send one request and wait for its result; the heart of the client.

        ``epoch`` is set only for a restart's handshake: the request then
        passes the restart gate, and fails if the server was lost again since
        the restart began (the loss count moved past ``epoch``).

        With a restart policy, a request that could not be written (the
        server had died, its loss not yet reported) never reached the server,
        so once (``resend``) it waits for the loss report and the restart,
        within its timeout, and is sent to the new process.
        """
        if epoch is None and self._lost is not None and self._restarting:
            timeout = self._await_restart(timeout, tool_name)
        original = params
        request_id = next(self._ids)
        if self._request_meta is not None or progress:
            params = dict(params or {})
            meta = dict(params.get("_meta") or {})
            if self._request_meta is not None:
                meta.update(self._request_meta)
            if progress:
                meta["progressToken"] = request_id
            params["_meta"] = meta
        slot = _Slot()
        with self._pending_lock:
            lost = self._lost
            if lost is not None and (epoch is None or self._loss_count != epoch):
                raise _copy_lost(lost, tool_name=tool_name)
            self._pending[request_id] = slot
            generation = self._generation
            losses = self._loss_count
        sent_at = time.monotonic() if self._restart is not None else 0.0
        try:
            self.transport.send(jsonrpc.request(request_id, method, params), timeout=timeout)
        except McpConnectionError as exc:
            self._forget(request_id)
            if resend and epoch is None and self._restart is not None:
                left = None if timeout is None else timeout - (time.monotonic() - sent_at)
                if self._await_loss_report(losses, left):
                    left = None if timeout is None else max(timeout - (time.monotonic() - sent_at), 0.0)
                    return self._request(
                        method, original, timeout=left, cancellable=cancellable, progress=progress,
                        tool_name=tool_name, resend=False,
                    )
            raise McpConnectionError(
                f"MCP server {self.server_name!r} is gone: {exc}",
                tool_name=tool_name,
                exit_code=exc.exit_code,
                stderr_tail=exc.stderr_tail,
            ) from exc
        except BaseException:  # McpError from the transport, TypeError for arguments JSON cannot encode
            self._forget(request_id)
            raise
        if not slot.done.acquire(True, -1 if timeout is None else max(timeout, 0.0)):
            if self._forget(request_id):
                if cancellable:
                    self._send_cancelled(request_id, f"no answer within {timeout} s")
                raise McpTimeoutError(
                    f"MCP server {self.server_name!r} did not answer {method}"
                    f"{f' for tool {tool_name!r}' if tool_name else ''} within {timeout} s"
                    f"{'; the request was cancelled' if cancellable else ''}",
                    tool_name=tool_name,
                )
            # The reader (or a failure) took the slot just now and releases
            # it right after; the answer is in.
            slot.done.acquire(True, _HANDOFF_TIMEOUT)
        response = slot.response
        if isinstance(response, McpConnectionError):
            raise _copy_lost(response, tool_name=tool_name)
        if not isinstance(response, dict):  # unreachable: a taken slot always gets its answer
            raise McpError(f"MCP server {self.server_name!r}: no answer recorded for {method}", tool_name=tool_name)
        if self._restarts_since_success and epoch is None:
            # The server answered a call: restarts count from zero again.
            with self._pending_lock:
                if generation == self._generation:
                    self._restarts_since_success = 0
        error = response.get("error")
        if error is not None:
            code, message, data = _error_parts(error)
            raise McpError(
                f"MCP server {self.server_name!r} answered {method}"
                f"{f' for tool {tool_name!r}' if tool_name else ''} with error {code}: {message}",
                tool_name=tool_name,
                code=code,
                data=data,
            )
        result = response.get("result")
        if not isinstance(result, dict):
            raise McpError(
                f"MCP server {self.server_name!r} answered {method} with a result that is not an object",
                tool_name=tool_name,
                code=jsonrpc.INVALID_REQUEST,
            )
        return result

    def _forget(self, request_id: Any) -> bool:
        with self._pending_lock:
            return self._pending.pop(request_id, None) is not None

    def _send_cancelled(self, request_id: Any, reason: str) -> None:
        try:
            self.transport.send(
                jsonrpc.notification("notifications/cancelled", {"requestId": request_id, "reason": reason}),
                timeout=self.timeout,
            )
        except McpError as exc:
            logger.debug("could not send notifications/cancelled to %r: %s", self.server_name, exc)

    def _on_message(self, message: Dict[str, Any]) -> None:
        """Route one server message; runs on the transport's reader thread and never blocks."""
        if "method" not in message:
            request_id = message.get("id")
            # Only ints and strings are ids (bool is an int subclass, not an id).
            if type(request_id) is int or type(request_id) is str:
                with self._pending_lock:
                    slot = self._pending.pop(request_id, None)
            else:
                slot = None
            if slot is None:
                logger.debug("dropped a response from %r to unknown or cancelled id %r", self.server_name, request_id)
                return
            slot.response = message
            slot.done.release()
            return
        if message["method"] == "notifications/tools/list_changed" and "id" not in message:
            # Here, in wire order, so no later response can see the old list.
            with self._cache_lock:
                self._tools_generation += 1
                self._tools_cache = None
            return
        self._responder.submit(message)

    def _fail_pending(self, error: McpConnectionError) -> None:
        with self._pending_lock:
            pending, self._pending = self._pending, {}
        for slot in pending.values():
            slot.response = error
            slot.done.release()


def _copy_lost(error: McpConnectionError, tool_name: Optional[str] = None) -> McpConnectionError:
    # A fresh instance per raise: one exception object raised in many threads
    # would share (and garble) its traceback.
    return McpConnectionError(
        error.message,
        tool_name=tool_name or error.tool_name,
        exit_code=error.exit_code,
        stderr_tail=error.stderr_tail,
    )


def _error_parts(error: Any) -> Tuple[Optional[int], str, Any]:
    if not isinstance(error, dict):
        return None, str(error), None
    code = error.get("code")
    return (code if isinstance(code, int) else None), str(error.get("message", "")), error.get("data")

