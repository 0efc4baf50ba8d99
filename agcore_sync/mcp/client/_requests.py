"""The one path every request of an :class:`~agcore_sync.mcp.client.session.McpClient` takes.

:class:`Requester` is owned by the client. It numbers a request, stamps its
``_meta`` (2026-07-28, progress tokens), opens its slot in the client's
:class:`~agcore_sync.mcp.client._pending.PendingTable`, writes it through the
transport, waits on the slot within the request's timeout (a timed-out
request is cancelled with ``notifications/cancelled``, and its late answer
dropped), and turns the answer into a result or an error. With a
:class:`~agcore_sync.mcp.client._restart_runner.Restarter`, a request waits
at the restart gate, and one that could not be written is sent once more to
the restarted server.

What a request may do (its timeout, whether it may be cancelled or resent,
its progress token...) is one frozen :class:`RequestOptions` value; a resend
is the same request again with :func:`attrs.evolve`-d options.
"""

from __future__ import annotations

import itertools
import time
from typing import Any, Dict, Optional

import attrs

from agcore_sync import _instrument
from agcore_sync.mcp.client._pending import HANDOFF_TIMEOUT, PendingTable, result_of, with_stderr
from agcore_sync.mcp.client._progress import ProgressCallback, ProgressRoutes
from agcore_sync.mcp.client._restart_runner import Restarter
from agcore_sync.mcp.errors import McpConnectionError, McpError, McpTimeoutError
from agcore_sync.mcp.shared import jsonrpc
from agcore_sync.mcp.transports.base import Transport

__all__ = ["Requester", "RequestOptions"]

logger = _instrument.get_logger("agcore_sync.mcp")


@attrs.frozen
class RequestOptions:
    """How one request is sent and waited for.

    Attributes:
        timeout: seconds to wait for the answer (None: no limit).
        cancellable: on a timeout, send ``notifications/cancelled`` (never
            for ``initialize`` and ``server/discover``).
        progress: send a ``progressToken`` (the request's id).
        tool_name: the tool, for errors.
        epoch: set only for a restart's handshake: the request then passes
            the restart gate, and fails if the server was lost again since
            the restart began (see :meth:`PendingTable.open`).
        resend: with a restart policy, a request that could not be written
            (the server had died, its loss not yet reported) never reached
            the server, so once it waits for the loss report and the
            restart, within its timeout, and is sent to the new process.
        progress_callback: send a ``progressToken`` and route the server's
            progress for it to this callback; every one has run when the
            request returns (see ``_progress.py``).
    """

    timeout: Optional[float]
    cancellable: bool = True
    progress: bool = False
    tool_name: Optional[str] = None
    epoch: Optional[int] = None
    resend: bool = True
    progress_callback: Optional[ProgressCallback] = None


@attrs.frozen
class _Resend:
    """The request was not written: send it again with these options."""

    options: RequestOptions


class Requester:
    """Send requests to one server and wait for their answers; safe from any thread.

    Args:
        server_name: the server's name, for errors.
        transport: the channel the requests go through.
        table: where each request waits for its answer.
        restarter: the client's restarter (None without a restart policy).
        notify_timeout: bound on sending ``notifications/cancelled`` (the
            client's timeout).
        routes: where a request's ``progress_callback`` is routed to (None:
            per-request callbacks are refused).
    """

    def __init__(
        self,
        server_name: str,
        transport: Transport,
        table: PendingTable,
        restarter: Optional[Restarter],
        *,
        notify_timeout: Optional[float],
        routes: Optional[ProgressRoutes] = None,
    ) -> None:
        self.server_name = server_name
        self._transport = transport
        self._table = table
        self._restarter = restarter
        self._notify_timeout = notify_timeout
        self._routes = routes
        self._ids = itertools.count(1)
        #: The ``_meta`` entries every request carries (2026-07-28), set by
        #: the handshake; None for the handshake versions.
        self.request_meta: Optional[Dict[str, Any]] = None

    def request(self, method: str, params: Optional[Dict[str, Any]], options: RequestOptions) -> Dict[str, Any]:
        """Send one request and wait for its result.

        When traced, the request runs under an MCP client span whose trace
        context goes to the server in ``params._meta`` (``traceparent``).

        Args:
            method: the JSON-RPC method.
            params: its params (None: none).
            options: its timeout and switches.

        Raises:
            McpConnectionError: the server is gone.
            McpTimeoutError: no answer within ``options.timeout``.
            McpError: the server answered with an error.
        """
        if _instrument.observer is None:
            return self._request(method, params, options)
        with _instrument.mcp_request(method, params, server=self.server_name, tool_name=options.tool_name,
                                     transport=self._transport) as span:
            meta = span.trace_meta()
            if meta:
                params = dict(params or {})
                params["_meta"] = {**(params.get("_meta") or {}), **meta}
            result = self._request(method, params, options)
            span.record(result)
            return result

    def _request(self, method: str, params: Optional[Dict[str, Any]], options: RequestOptions) -> Dict[str, Any]:
        while True:
            restarter = self._restarter
            if (restarter is not None and options.epoch is None and restarter.restarting
                    and self._table.lost is not None):
                options = attrs.evolve(options, timeout=restarter.await_restart(options.timeout, options.tool_name))
            request_id = next(self._ids)
            routes = self._routes if options.progress_callback is not None else None
            if routes is not None:
                routes.open(request_id, options.progress_callback)
            try:
                outcome = self._exchange(method, params, request_id, options)
            finally:
                if routes is not None:
                    routes.finish(request_id)
            if not isinstance(outcome, _Resend):
                return outcome
            options = outcome.options

    def _exchange(
        self, method: str, params: Optional[Dict[str, Any]], request_id: int, options: RequestOptions
    ) -> Any:
        """Write the request and wait for its answer; return its result, or :class:`_Resend`."""
        restarter = self._restarter
        timeout, tool_name = options.timeout, options.tool_name
        progress = options.progress or (self._routes is not None and options.progress_callback is not None)
        request_meta = self.request_meta
        if request_meta is not None or progress:
            params = dict(params or {})
            meta = dict(params.get("_meta") or {})
            if request_meta is not None:
                meta.update(request_meta)
            if progress:
                meta["progressToken"] = request_id
            params["_meta"] = meta
        slot, generation, losses = self._table.open(request_id, epoch=options.epoch, tool_name=tool_name)
        sent_at = time.monotonic() if restarter is not None else 0.0
        try:
            self._transport.send(jsonrpc.request(request_id, method, params), timeout=timeout)
        except McpConnectionError as exc:
            self._table.cancel(request_id)
            if options.resend and options.epoch is None and restarter is not None:
                left = None if timeout is None else timeout - (time.monotonic() - sent_at)
                if restarter.await_loss_report(losses, left):
                    left = None if timeout is None else max(timeout - (time.monotonic() - sent_at), 0.0)
                    return _Resend(attrs.evolve(options, timeout=left, resend=False))
            raise McpConnectionError(
                f"MCP server {self.server_name!r} is gone: {with_stderr(str(exc), exc.stderr_tail)}",
                tool_name=tool_name,
                exit_code=exc.exit_code,
                stderr_tail=exc.stderr_tail,
            ) from exc
        except BaseException:  # McpError from the transport, TypeError for arguments JSON cannot encode
            self._table.cancel(request_id)
            raise
        if not slot.done.acquire(True, -1 if timeout is None else max(timeout, 0.0)):
            if self._table.cancel(request_id):
                if options.cancellable:
                    self._send_cancelled(request_id, f"no answer within {timeout} s")
                raise McpTimeoutError(
                    f"MCP server {self.server_name!r} did not answer {method}"
                    f"{f' for tool {tool_name!r}' if tool_name else ''} within {timeout} s"
                    f"{'; the request was cancelled' if options.cancellable else ''}",
                    tool_name=tool_name,
                )
            # The reader (or a failure) took the slot just now and releases
            # it right after; the answer is in.
            slot.done.acquire(True, HANDOFF_TIMEOUT)
        response = slot.response
        if restarter is not None and options.epoch is None and type(response) is dict:
            # The server answered a call: restarts count from zero again.
            restarter.note_answer(generation)
        return result_of(response, self.server_name, method, tool_name)

    def _send_cancelled(self, request_id: Any, reason: str) -> None:
        try:
            self._transport.send(
                jsonrpc.notification("notifications/cancelled", {"requestId": request_id, "reason": reason}),
                timeout=self._notify_timeout,
            )
        except McpError as exc:
            logger.debug("could not send notifications/cancelled to %r: %s", self.server_name, exc)
