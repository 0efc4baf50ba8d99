"""Per-call ``progress=`` callbacks: ``notifications/progress`` routed to its call by token.

:class:`ProgressRoutes` is owned by :class:`~agcore_sync.mcp.client.session.McpClient`.
A call made with ``progress=`` opens a route under its progress token (the
request id) before the request is written. The transport's reader looks
each ``notifications/progress`` up here (:meth:`ProgressRoutes.route`) and,
for a routed token, queues the callback on the responder's worker, in wire
order, before it delivers any later response. When the call's answer is in,
the caller closes the route (:meth:`ProgressRoutes.finish`) and, if any
callback was queued, waits for a marker queued behind them: so every
callback of a call has run, in order, before ``call_tool`` returns.
"""

from __future__ import annotations

import contextvars
import threading
from typing import Any, Callable, Dict, Optional, Tuple

from agcore_sync import _instrument

__all__ = ["ProgressRoutes", "ProgressCallback", "DRAIN_TIMEOUT"]

logger = _instrument.get_logger("agcore_sync.mcp")

#: ``progress(progress, total, message)``: ``total`` and ``message`` are None
#: when the server sends none.
ProgressCallback = Callable[[float, Optional[float], Optional[str]], None]

#: Bound on a call's wait for its queued progress callbacks to run (the
#: worker may be busy with a slow handler); past it the call returns and the
#: callbacks still run later, in order.
DRAIN_TIMEOUT = 10.0


class _Route:
    __slots__ = ("callback", "context", "queued")

    def __init__(self, callback: ProgressCallback, context: contextvars.Context) -> None:
        self.callback = callback
        self.context = context
        self.queued = 0


class ProgressRoutes:
    """Progress tokens of calls in flight and their callbacks; safe from any thread.

    Args:
        server_name: the server's name, for logs.
        run: queues a job on the client's worker; returns False when the
            client is closing and the job was not queued.
        on_worker: True when called on that worker (a call made from a
            handler cannot wait for the worker it runs on).
    """

    def __init__(
        self, server_name: str, run: Callable[[Callable[[], None]], bool], on_worker: Callable[[], bool]
    ) -> None:
        self.server_name = server_name
        self._run = run
        self._on_worker = on_worker
        self._lock = threading.Lock()
        self._routes: Dict[Any, _Route] = {}

    def open(self, token: Any, callback: ProgressCallback) -> None:
        """Route ``token``'s notifications to ``callback``, run in a copy of the caller's context."""
        with self._lock:
            self._routes[token] = _Route(callback, contextvars.copy_context())

    def route(self, params: Dict[str, Any]) -> bool:
        """Queue the callback for one ``notifications/progress``; on the reader. False if no call owns it."""
        token = params.get("progressToken")
        if not (type(token) is int or type(token) is str):
            return False
        with self._lock:
            route = self._routes.get(token)
            if route is None:
                return False
            route.queued += 1
        progress, total, message = _numbers(params)
        if progress is None:
            logger.debug("MCP server %r sent progress without a number for %r", self.server_name, token)
            return True
        context = route.context.copy()
        callback = route.callback

        def job() -> None:
            try:
                context.run(callback, progress, total, message)
            except Exception:  # noqa: BLE001 - a failing callback must not end the worker
                logger.exception("a progress callback for a call to MCP server %r failed", self.server_name)

        self._run(job)
        return True

    def finish(self, token: Any) -> None:
        """Close ``token``'s route and wait (bounded) until its queued callbacks have run."""
        with self._lock:
            route = self._routes.pop(token, None)
        if route is None or route.queued == 0 or self._on_worker():
            return
        drained = threading.Event()
        if self._run(drained.set) and not drained.wait(DRAIN_TIMEOUT):
            logger.warning(
                "progress callbacks of a call to MCP server %r did not run within %s s; returning before them",
                self.server_name,
                DRAIN_TIMEOUT,
            )


def _numbers(params: Dict[str, Any]) -> Tuple[Optional[float], Optional[float], Optional[str]]:
    progress = params.get("progress")
    total = params.get("total")
    message = params.get("message")
    ok = isinstance(progress, (int, float)) and not isinstance(progress, bool)
    return (
        progress if ok else None,
        total if isinstance(total, (int, float)) and not isinstance(total, bool) else None,
        message if isinstance(message, str) else None,
    )
