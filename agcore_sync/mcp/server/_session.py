"""One client's session with an :class:`McpServer`: what it agreed, and requests in both directions.

A session holds the protocol version and capabilities of ``initialize``,
the log level, the resource subscriptions, a cancel flag per request being
served, and the server's own requests to the client (sampling,
elicitation) waiting for their answers. It does no I/O: messages leave
through the sink each caller passes (a stdio writer, an SSE stream).
"""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Set

from agcore_sync.mcp.shared.protocol import LOG_LEVELS, MODERN_VERSION
from agcore_sync.tools.error import McpError

__all__ = ["ServerSession", "Sink", "DEFAULT_REQUEST_TIMEOUT"]

#: ``sink(message)``: sends one message to the client.
Sink = Callable[[Dict[str, Any]], None]

#: How long a server-to-client request (sampling, elicitation) waits for its
#: answer when neither the call nor the server says otherwise (seconds).
DEFAULT_REQUEST_TIMEOUT = 300.0

_SEVERITY = {name: rank for rank, name in enumerate(
    ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"))}
assert set(_SEVERITY) == set(LOG_LEVELS)


class _Slot:
    """A server-to-client request waiting for its answer."""

    __slots__ = ("done", "result", "error", "cancel")

    def __init__(self, cancel: threading.Event) -> None:
        self.done = threading.Event()
        self.result: Optional[Dict[str, Any]] = None
        self.error: Optional[McpError] = None
        self.cancel = cancel


class ServerSession:
    """The state of one client of an :class:`McpServer` (see the module docstring).

    Every method may be called from any thread.
    """

    def __init__(self, session_id: Optional[str], request_timeout: float = DEFAULT_REQUEST_TIMEOUT) -> None:
        self.id = session_id
        self.request_timeout = request_timeout
        self.protocol_version: Optional[str] = None
        self.client_capabilities: Dict[str, Any] = {}
        self.client_info: Dict[str, Any] = {}
        self.initialized = False
        self.log_level: Optional[str] = None
        self.subscriptions: Set[str] = set()
        #: Where notifications outside any request go (None: dropped).
        self.notify_sink: Optional[Sink] = None
        self.last_used = time.monotonic()
        self.closed = False
        #: False where answers cannot come back (stateless HTTP, 2026-07-28 requests).
        self.can_ask = True
        #: Called once when the session closes (the HTTP app ends its streams here).
        self.close_hooks: List[Callable[[], None]] = []
        #: Transport state kept with the session (the HTTP app's event streams).
        self.streams: Dict[str, Any] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._asks: Dict[Any, _Slot] = {}
        self._running: Dict[Any, threading.Event] = {}

    # -- logging ---------------------------------------------------------------

    def wants_log(self, level: str) -> bool:
        """Return True if ``level`` reaches the level the client set (everything before ``logging/setLevel``)."""
        floor = self.log_level
        return floor is None or _SEVERITY[level] >= _SEVERITY[floor]

    # -- requests the client sent ------------------------------------------------

    def begin(self, request_id: Any) -> threading.Event:
        """Register a request being served; return its cancel flag."""
        flag = threading.Event()
        with self._lock:
            if self.closed:
                flag.set()
            if request_id is not None:
                self._running[_key(request_id)] = flag
        return flag

    def end(self, request_id: Any) -> None:
        """Forget a request once answered."""
        with self._lock:
            self._running.pop(_key(request_id), None)

    def cancel(self, request_id: Any) -> None:
        """Mark ``request_id`` cancelled by the client: raise its flag and fail what it waits for."""
        with self._lock:
            flag = self._running.get(_key(request_id))
            waiting = [slot for slot in self._asks.values() if slot.cancel is flag] if flag is not None else []
        if flag is None:
            return
        flag.set()
        for slot in waiting:
            slot.error = McpError("the request was cancelled by the client", code=-32800)
            slot.done.set()

    # -- requests the server sends ----------------------------------------------

    def check_can_ask(self, method: str) -> None:
        """Raise McpError unless answers to a request of the server can come back in this session."""
        if not self.can_ask or self.protocol_version == MODERN_VERSION:
            raise McpError(f"{method}: this session cannot carry requests to the client (stateless HTTP or "
                           "protocol 2026-07-28)", code=-32601)

    def ask(self, method: str, params: Dict[str, Any], sink: Sink, cancel: threading.Event,
            timeout: Optional[float]) -> Dict[str, Any]:
        """Send a request to the client through ``sink`` and wait for its answer.

        Raises:
            McpError: the client answered with an error, did not answer in
                time, the request was cancelled, or the session ended.
        """
        self.check_can_ask(method)
        slot = _Slot(cancel)
        with self._lock:
            if self.closed:
                raise McpError(f"{method}: the MCP session is closed")
            request_id = f"s{next(self._ids)}"
            self._asks[_key(request_id)] = slot
        try:
            if cancel.is_set():
                raise McpError(f"{method}: the request was cancelled by the client", code=-32800)
            sink({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            wait = self.request_timeout if timeout is None else timeout
            if not slot.done.wait(wait):
                sink({"jsonrpc": "2.0", "method": "notifications/cancelled",
                      "params": {"requestId": request_id, "reason": "timed out"}})
                raise McpError(f"{method}: the client did not answer within {wait} s")
        finally:
            with self._lock:
                self._asks.pop(_key(request_id), None)
        if slot.error is not None:
            raise slot.error
        return slot.result or {}

    def resolve(self, message: Dict[str, Any]) -> bool:
        """Hand the client's response to the request waiting for it; False if none waits."""
        with self._lock:
            slot = self._asks.get(_key(message.get("id")))
        if slot is None:
            return False
        error = message.get("error")
        if isinstance(error, dict):
            slot.error = McpError(f"the client answered with an error: {error.get('message')}",
                                  code=error.get("code"), data=error.get("data"))
        else:
            result = message.get("result")
            slot.result = result if isinstance(result, dict) else {}
        slot.done.set()
        return True

    # -- notifications -------------------------------------------------------------

    def notify(self, method: str, params: Optional[Dict[str, Any]] = None) -> None:
        """Send a notification outside any request (dropped when nothing listens)."""
        sink = self.notify_sink
        if sink is None or self.closed:
            return
        message: Dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        try:
            sink(message)
        except Exception:  # noqa: BLE001 - a listener gone is not the sender's problem
            pass

    def close(self) -> None:
        """End the session: cancel every request being served, fail every pending ask. Idempotent."""
        with self._lock:
            if self.closed and not self._running and not self._asks and not self.close_hooks:
                return
            self.closed = True
            hooks, self.close_hooks = self.close_hooks, []
            flags = list(self._running.values())
            slots = list(self._asks.values())
        for flag in flags:
            flag.set()
        for slot in slots:
            slot.error = McpError("the MCP session ended")
            slot.done.set()
        for hook in hooks:
            hook()


def _key(request_id: Any) -> Any:
    # JSON-RPC ids are str or int; 1 and "1" stay distinct, True is not 1.
    return (type(request_id).__name__, request_id)
