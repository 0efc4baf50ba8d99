"""McpClient: a synchronous, thread-safe MCP client over any :class:`Transport`.

Lifecycle (as httpx's ``Client``): a client is created unopened, opened by
:meth:`McpClient.connect` (or entering ``with``), and closed for good by
:meth:`McpClient.close` (or leaving ``with``); it is never reopened.

Threads: the transport delivers server messages on its own thread (the
stdio stdout reader, the HTTP stream readers). That thread only routes: it
hands a response to the slot its caller waits on, drops the tools cache on
``notifications/tools/list_changed`` and queues per-call progress before it
delivers any later response, and passes everything else to the client's
:class:`~agcore_sync.mcp.client._responder.ServerResponder`, whose one worker
thread (``agcore-mcp-worker-<n>``, a daemon started when first needed)
answers server requests and runs the user's callbacks. ``close()`` stops
and joins every thread the client owns, through the transport and the
responder. The callbacks (``sampling_handler``, ``elicitation_handler``,
``on_progress``) and the answers to ``roots/list`` run there in a copy of
the ``contextvars`` context of the thread that called ``connect()``, taken
when it was called (a fresh copy of it for each server message).

The client composes small objects it owns, each in its own module: the
``PendingTable`` (``_pending.py``: one slot per request in flight, and
whether the server is lost), the ``Requester`` (``_requests.py``: the one
path every request takes), the ``Restarter`` (``_restart_runner.py``, only
with a restart policy; its docstring tells how a restart runs), the
``ToolsCache`` (``_tools.py``), the ``ServerResponder`` (``_responder.py``),
the ``ProgressRoutes`` (``_progress.py``: per-call ``progress=``
callbacks) and the ``ServerFeatures`` (``features.py``: resources,
prompts, completion, logging, ping, roots).

The module is longer than the ~500 lines of the style's hint: what is left
in it is one idea, the client's public surface (its lifecycle, tools, and
the resource, prompt, completion, logging, ping and roots methods, written
out with the docstrings users read) and the routing of server messages;
every mechanism it composes already has its own module.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import contextvars
import threading
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import attrs

from agcore_sync import _instrument
from agcore_sync._version import __version__
from agcore_sync.llm.types import ToolDef
from agcore_sync.mcp.client._handshake import Agreement, check_client_arguments, check_protocol, negotiate
from agcore_sync.mcp.client._pending import PendingTable, copy_lost, with_stderr
from agcore_sync.mcp.client._progress import ProgressCallback, ProgressRoutes
from agcore_sync.mcp.client._requests import Requester, RequestOptions
from agcore_sync.mcp.client._responder import ElicitationHandler, ProgressHandler, SamplingHandler, ServerResponder
from agcore_sync.mcp.client._restart_runner import Restarter, check_restart
from agcore_sync.mcp.client._tools import Tools, ToolsCache, build_adapters, fetch_tools, tool_def, usable_tools
from agcore_sync.mcp.client.features import ServerFeatures
from agcore_sync.mcp.client.restart import RestartPolicy
from agcore_sync.mcp.errors import McpConnectionError, McpNotInitializedError
from agcore_sync.mcp.shared import jsonrpc
from agcore_sync.mcp.shared import protocol as proto
from agcore_sync.mcp.shared.prompts import McpPrompt, McpPromptResult
from agcore_sync.mcp.shared.resources import McpResource, McpResourceContents, McpResourceTemplate, ResourceCallback
from agcore_sync.mcp.shared.results import McpToolResult
from agcore_sync.mcp.tools import McpTool
from agcore_sync.mcp.transports.base import Transport

__all__ = ["McpClient", "McpToolResult", "ElicitationHandler", "SamplingHandler", "ProgressHandler", "ProgressCallback"]

RECONNECT_ADVICE = "create a new McpClient to reconnect"  #: what a closed or lost client advises its caller

logger = _instrument.get_logger("agcore_sync.mcp")

# The client's lifecycle states (McpClient._state).
_NEW, _CONNECTING, _READY, _CLOSED = "new", "connecting", "ready", "closed"


class McpClient:
    """A client of one MCP server: handshake, tools, calls, resources, prompts, server requests.

    Args:
        server_name: a name for the server, used in errors and logs.
        transport: the channel to the server (:class:`StdioTransport`,
            ``HttpTransport``); the client owns it and closes it.
        timeout: seconds to wait for each answer (None: no limit). Also used
            for ``initialize``, which is never cancelled.
        client_info: ``clientInfo`` sent to the server (default
            ``{"name": "agcore_sync", "version": __version__}``).
        roots: ``{"uri": ..., "name": ...}`` dicts answered to ``roots/list``;
            None declines the capability (and ``roots/list`` gets -32601).
        elicitation_handler: answers ``elicitation/create``; see
            :data:`ElicitationHandler`. On ``accept`` the client fills every
            property missing from ``content`` with its ``default`` from the
            ``requestedSchema``.
        sampling_handler: answers ``sampling/createMessage``; see
            :data:`SamplingHandler`.
        on_progress: called with each ``notifications/progress`` params; a
            ``progressToken`` is sent with calls only when it is set.
        protocol: None runs ``initialize`` offering 2025-11-25 and accepts
            any version from 2024-11-05 to 2025-11-25 the server answers; a
            handshake version string offers that one; ``"auto"`` probes
            ``server/discover`` and speaks 2026-07-28 where offered, else
            falls back to ``initialize``; ``"2026-07-28"`` requires it.
        restart: restart the server after it went away, as the
            :class:`~agcore_sync.mcp.client.restart.RestartPolicy` says (None:
            a lost server stays lost). Needs a restartable transport
            (:class:`StdioTransport`: a new process; ``HttpTransport``: a new
            session, e.g. after a 404 to a stale ``Mcp-Session-Id``, and a
            request the server refused that way is sent once more); see
            ``_restart_runner.py`` for where the restart runs.

    Capabilities declared are exactly those with a handler or data:
    ``roots: {}``, ``sampling: {}``, ``elicitation: {"form": {}}``.

    Resources, prompts, completion, logging, ping and roots: the methods
    of the same names run on the client's
    :class:`~agcore_sync.mcp.ServerFeatures` and carry its docstrings.

    Any number of threads may call any method at once; writes are
    serialised and each request waits on its own slot.

    Raises:
        ValueError: ``protocol`` is not a known version or ``"auto"``, or
            ``restart`` is given with a transport that cannot start again.
        TypeError: ``restart`` is not a ``RestartPolicy``.
    """

    def __init__(
        self,
        server_name: str,
        transport: Transport,
        timeout: Optional[float] = 30.0,
        *,
        client_info: Optional[Mapping[str, Any]] = None,
        roots: Optional[Sequence[Mapping[str, Any]]] = None,
        elicitation_handler: Optional[ElicitationHandler] = None,
        sampling_handler: Optional[SamplingHandler] = None,
        on_progress: Optional[ProgressHandler] = None,
        protocol: Optional[str] = None,
        restart: Optional[RestartPolicy] = None,
    ) -> None:
        check_client_arguments(server_name, transport, timeout)
        check_protocol(protocol)
        check_restart(restart, transport, server_name)
        self.server_name = server_name
        self.transport = transport
        self.timeout = timeout
        self.protocol = protocol
        default_info = {"name": "agcore_sync", "version": __version__}
        self._client_info: Dict[str, Any] = dict(client_info) if client_info is not None else default_info
        self._roots = None if roots is None else [dict(root) for root in roots]
        self._on_progress = on_progress
        self._capabilities = proto.client_capabilities(
            roots=self._roots is not None,
            sampling=sampling_handler is not None,
            elicitation=elicitation_handler is not None,
        )
        # Guards _state transitions only; _connect_lock makes a second connect() wait for the first.
        self._lifecycle_lock = threading.Lock()
        self._connect_lock = threading.Lock()
        self._state = _NEW
        self._agreement: Optional[Agreement] = None
        self._tools = ToolsCache()
        # The one cancel Event of this owner: set by close(), passed down to the
        # responder's worker and the restarter, waited on by the input_required backoff.
        self._cancel = threading.Event()
        self._table = PendingTable(server_name)
        self._responder = ServerResponder(
            server_name,
            transport.send,
            self._cancel,
            timeout=timeout,
            roots=self._roots,
            elicitation_handler=elicitation_handler,
            sampling_handler=sampling_handler,
            on_progress=on_progress,
            notices={"notifications/resources/updated": lambda params: self._features.resource_updated(params)},
        )
        self._progress = ProgressRoutes(server_name, self._responder.run, self._responder.on_worker)
        self._restarter: Optional[Restarter] = None
        if restart is not None:
            self._restarter = Restarter(
                server_name, restart, self._table, self._cancel, reconnect=self._reconnect, run=self._responder.run,
                ready=lambda: self._state == _READY, pid=lambda: getattr(transport, "pid", None),
            )
        self._features = ServerFeatures(server_name, self._request, self._replace_roots)
        self._requester = Requester(
            server_name, transport, self._table, self._restarter, notify_timeout=timeout, routes=self._progress
        )

    def __repr__(self) -> str:
        return f"McpClient({self.server_name!r}, state={self._state}, version={self.negotiated_version})"

    # -- lifecycle --------------------------------------------------------

    def __enter__(self) -> McpClient:
        self.connect()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    @property
    def negotiated_version(self) -> Optional[str]:
        """The protocol version agreed with the server (None before ``connect()``)."""
        return getattr(self._agreement, "version", None)

    @property
    def server_info(self) -> Optional[Dict[str, Any]]:
        """The server's ``serverInfo`` (name, version, ...), or None if it sent none."""
        return getattr(self._agreement, "server_info", None)

    @property
    def server_capabilities(self) -> Dict[str, Any]:
        """The capabilities the server declared."""
        return getattr(self._agreement, "capabilities", {})

    @property
    def instructions(self) -> Optional[str]:
        """The server's ``instructions``, if any."""
        return getattr(self._agreement, "instructions", None)

    @property
    def restart_policy(self) -> Optional[RestartPolicy]:
        """The restart policy given, or None."""
        return getattr(self._restarter, "policy", None)

    @property
    def restart_count(self) -> int:
        """How many times the server was restarted successfully (handshake done) so far."""
        return getattr(self._restarter, "restart_count", 0)

    def connect(self) -> McpClient:
        """Start the transport and run the version handshake; a no-op once connected.

        Returns:
            The client itself.

        Raises:
            McpConnectionError: the server could not be started or went away.
            McpTimeoutError: the server did not answer the handshake in time.
            McpError: the server refused the handshake or answered a protocol
                version this client does not know; the server is stopped.
            McpNotInitializedError: the client was closed.
        """
        with self._connect_lock:
            with self._lifecycle_lock:
                if self._state == _READY:
                    return self
                if self._state != _NEW:
                    raise McpNotInitializedError(
                        f"MCP client for {self.server_name!r} is {self._state}; {RECONNECT_ADVICE}"
                    )
                self._state = _CONNECTING
            # Server requests are answered in a copy of this thread's context.
            self._responder.use_context(contextvars.copy_context())
            try:
                self.transport.start(self._on_message, self._on_closed)
                agreement = negotiate(
                    self.protocol,
                    self._requester.request,
                    self.transport,
                    server_name=self.server_name,
                    client_info=self._client_info,
                    capabilities=self._capabilities,
                    timeout=self.timeout,
                )
            except BaseException:
                # Also when close() from another thread interrupted the handshake.
                self.close()
                raise
            self._adopt(agreement)
            with self._lifecycle_lock:
                if self._state != _CONNECTING:
                    raise McpNotInitializedError(f"MCP client for {self.server_name!r} was closed while connecting")
                self._state = _READY
            # A loss between the handshake and _READY did not start a restart
            # (the restarter restarts only a ready client): start it here.
            if self._restarter is not None:
                self._restarter.resume()
        logger.debug("connected to MCP server %r (protocol %s)", self.server_name, self.negotiated_version)
        return self

    def close(self) -> None:
        """Stop the server, fail pending calls, join every thread; idempotent.

        Calls still waiting fail with :class:`McpConnectionError`; later
        calls raise :class:`McpNotInitializedError`. Bounded in time: the
        transport's own shutdown plus the responder's
        :data:`~agcore_sync.mcp.client._responder.WORKER_JOIN_TIMEOUT`.
        """
        with self._lifecycle_lock:
            if self._state == _CLOSED:
                return
            self._state = _CLOSED
        self._cancel.set()
        if self._restarter is not None:
            self._restarter.wake()  # calls waiting for a restart
        self._table.fail_all(McpConnectionError(f"MCP client for {self.server_name!r} was closed"))
        try:
            self.transport.close()
        except Exception:  # noqa: BLE001 - close must finish its other steps
            logger.exception("closing the transport of MCP server %r failed", self.server_name)
        self._responder.close()

    # -- tools ------------------------------------------------------------

    def list_tools(self) -> List[ToolDef]:
        """Return the server's tools, following ``nextCursor`` pages; cached.

        The cache is dropped when the server sends
        ``notifications/tools/list_changed`` (and, on 2026-07-28, when the
        result's ``ttlMs`` runs out).

        Raises:
            McpNotInitializedError: before ``connect()`` or after ``close()``.
            McpConnectionError, McpTimeoutError, McpError: as for any request.
        """
        return [tool_def(tool) for tool in self._tool_dicts()]

    def _tool_dicts(self) -> Tools:
        self._check_ready()
        cached, generation = self._tools.get()
        if cached is not None:
            return cached
        modern = self._requester.request_meta is not None
        tools, ttl_ms = fetch_tools(self._send, self.server_name, modern=modern)
        # A list_changed that arrived while we were paging makes this list stale.
        self._tools.store(tools, generation, ttl_ms)
        return tools

    def call_tool(
        self,
        name: str,
        args: Optional[Mapping[str, Any]] = None,
        timeout: Optional[float] = None,
        *,
        progress: Optional[ProgressCallback] = None,
    ) -> McpToolResult:
        """Call a tool and return its result; ``isError`` results are returned, not raised.

        Args:
            name: the tool's name on the server.
            args: its arguments (a JSON object).
            timeout: seconds to wait (None: the client's ``timeout``). On
                2026-07-28 it applies to each round of an ``input_required``
                exchange, not to the time the handlers take.
            progress: ``progress(progress, total, message)``, called for
                each ``notifications/progress`` of this call (routed by its
                progress token), in order, on the client's worker thread in
                a copy of the caller's ``contextvars`` context; all have
                run when ``call_tool`` returns. ``total`` and ``message``
                are None when the server sends none.

        Raises:
            McpTimeoutError: no answer in time; ``notifications/cancelled``
                was sent and the client stays usable.
            McpError: the server answered with a JSON-RPC error (``.code``,
                ``.data``); recoverable.
            McpConnectionError: the server is gone (``.exit_code``,
                ``.stderr_tail``); without a restart policy this client
                stays unusable; with one, this call failed and later calls
                go to the restarted server.
            McpNotInitializedError: before ``connect()`` or after ``close()``.
        """
        self._check_ready(name)
        wait = self.timeout if timeout is None else timeout
        params: Dict[str, Any] = {"name": name, "arguments": dict(args or {})}
        options = RequestOptions(
            timeout=wait, progress=self._on_progress is not None, tool_name=name, progress_callback=progress
        )
        result = self._requester.request("tools/call", params, options)
        if result.get("resultType") == "input_required":

            def retry(again: Dict[str, Any]) -> Dict[str, Any]:
                return self._requester.request("tools/call", again, options)

            result = self._responder.settle_input_required(result, params, retry, name)
        return McpToolResult.from_result(result)

    def into_tools(
        self,
        prefix: Optional[str] = None,
        *,
        permissions: Sequence[Any] = (),
        idempotent: Sequence[str] = (),
    ) -> List[McpTool]:
        """Return one :class:`~agcore_sync.mcp.tools.McpTool` per server tool.

        Args:
            prefix: prepended verbatim to every tool name (None: the server's names).
            permissions: the permissions every adapter declares; a server's
                annotations are hints, never trusted for this.
            idempotent: server names of the tools that are safe to run
                twice; their adapters retry a call once after
                :class:`McpConnectionError` (after waiting for a restart).
                A server's ``idempotentHint`` never counts.

        Raises:
            ValueError: ``idempotent`` names a tool the server does not have.
            TypeError: ``idempotent`` is a single string, not a sequence of names.
        """
        every = self._tool_dicts()
        return build_adapters(
            self, usable_tools(every, self.server_name, prefix), prefix=prefix, permissions=permissions,
            idempotent=idempotent, known=[tool["name"] for tool in every],
        )

    # -- resources, prompts, completion, logging, ping, roots -------------------
    # Each runs on the client's ServerFeatures (features.py), which keeps the subscriptions.

    def list_resources(self) -> List[McpResource]:
        """Return the server's resources, following ``nextCursor`` to the end.

        Raises:
            McpError: the server answered with an error (e.g. it has no resources).
        """
        return self._features.list_resources()

    def list_resource_templates(self) -> List[McpResourceTemplate]:
        """Return the server's resource templates, following ``nextCursor`` to the end.

        Raises:
            McpError: the server answered with an error.
        """
        return self._features.list_resource_templates()

    def read_resource(self, uri: str) -> List[McpResourceContents]:
        """Read one resource; a resource may come in several parts (text or bytes).

        Args:
            uri: the resource's URI (listed, or a template filled in).

        Raises:
            McpError: the server answered with an error (unknown URI...), or
                sent a blob that is not base64.
        """
        return self._features.read_resource(uri)

    def subscribe_resource(self, uri: str, callback: ResourceCallback) -> None:
        """Ask the server for ``notifications/resources/updated`` of ``uri``; ``callback(uri)`` gets each.

        The callback runs on the client's worker thread, in a copy of the
        ``contextvars`` context of the thread that called ``connect()``;
        a callback that raises is logged. Subscribing again replaces it.

        Raises:
            TypeError: ``callback`` is not callable.
            McpError: the server refused (it may not support subscriptions).
        """
        self._features.subscribe_resource(uri, callback)

    def unsubscribe_resource(self, uri: str) -> None:
        """Stop the updates of ``uri``; its callback is not called again.

        Raises:
            McpError: the server refused.
        """
        self._features.unsubscribe_resource(uri)

    def list_prompts(self) -> List[McpPrompt]:
        """Return the server's prompts, following ``nextCursor`` to the end.

        Raises:
            McpError: the server answered with an error.
        """
        return self._features.list_prompts()

    def get_prompt(self, name: str, arguments: Optional[Mapping[str, str]] = None) -> McpPromptResult:
        """Fill in prompt ``name`` with ``arguments`` and return it as messages.

        Args:
            name: the prompt's name.
            arguments: its arguments; MCP prompt arguments are strings.

        Raises:
            McpError: the server answered with an error (unknown prompt,
                missing argument...).
        """
        return self._features.get_prompt(name, arguments)

    def complete(
        self,
        ref: Tuple[str, str],
        argument: str,
        value: str,
        context: Optional[Mapping[str, str]] = None,
    ) -> List[str]:
        """Ask the server to complete ``value`` for one argument of a prompt or resource template.

        Args:
            ref: ``("prompt", name)`` or ``("resource", uri_template)``.
            argument: the argument being completed.
            value: what the user typed so far.
            context: values of the other arguments, by name.

        Returns:
            The server's suggestions (at most 100, by the protocol).

        Raises:
            ValueError: ``ref`` is not one of the two forms.
            McpError: the server answered with an error.
        """
        return self._features.complete(ref, argument, value, context)

    def set_logging_level(self, level: Union[str, int]) -> None:
        """Ask the server to send log messages at ``level`` and above.

        They go to the logger ``agcore_sync.mcp.server.<server name>`` at
        the matching :mod:`logging` level (debug, info; notice and warning:
        WARNING; error; critical, alert, emergency: CRITICAL).

        Args:
            level: an MCP level name (``"debug"`` ... ``"emergency"``) or a
                :mod:`logging` level number (``logging.INFO``...).

        Raises:
            ValueError: an unknown level.
            McpError: the server answered with an error (no ``logging`` capability).
        """
        self._features.set_logging_level(level)

    def ping(self) -> None:
        """Check that the server answers (``ping``).

        Raises:
            McpTimeoutError: no answer within the client's timeout.
        """
        self._features.ping()

    def set_roots(self, roots: Sequence[Mapping[str, Any]]) -> None:
        """Replace the roots answered to ``roots/list`` and send ``notifications/roots/list_changed``.

        Args:
            roots: ``{"uri": ..., "name": ...}`` dicts.

        Raises:
            ValueError: the client was created without ``roots`` (the
                capability was not declared).
        """
        self._features.set_roots(roots)

    # -- the request path ---------------------------------------------------

    def _request(self, method: str, params: Optional[Dict[str, Any]]) -> Dict[str, Any]:
        self._check_ready()
        return self._send(method, params)

    def _send(self, method: str, params: Optional[Dict[str, Any]]) -> Dict[str, Any]:
        return self._requester.request(method, params, RequestOptions(timeout=self.timeout))

    def _replace_roots(self, roots: List[Dict[str, Any]]) -> None:
        if self._roots is None:
            raise ValueError(
                f"MCP client for {self.server_name!r} was created without roots, so it declared no roots capability"
            )
        self._check_ready()
        self._roots = roots
        self._responder.set_roots(roots)
        self.transport.send(jsonrpc.notification("notifications/roots/list_changed", None), timeout=self.timeout)

    def _check_ready(self, tool_name: Optional[str] = None) -> None:
        state = self._state
        if state == _READY:
            lost = self._table.lost
            if lost is not None and not (self._restarter is not None and self._restarter.restarting):
                raise copy_lost(lost, tool_name=tool_name)
            return  # while a restart runs, the request waits for it
        if state == _CLOSED:
            raise McpNotInitializedError(
                f"MCP client for {self.server_name!r} is closed; {RECONNECT_ADVICE}"
            )
        raise McpNotInitializedError(
            f"MCP client for {self.server_name!r} is not connected; call connect() or use it in a with block"
        )

    def _on_message(self, message: Dict[str, Any]) -> None:
        """Route one server message; runs on the transport's reader thread and never blocks."""
        if "method" not in message:
            request_id = message.get("id")
            # Only ints and strings are ids (bool is an int subclass, not an id).
            if (type(request_id) is int or type(request_id) is str) and self._table.deliver(request_id, message):
                return
            logger.debug("dropped a response from %r to unknown or cancelled id %r", self.server_name, request_id)
            return
        if "id" not in message:
            if message["method"] == "notifications/tools/list_changed":
                # Here, in wire order, so no later response can see the old list.
                self._tools.invalidate()
                return
            if message["method"] == "notifications/progress":
                # Queued here, in wire order, before the call's answer is delivered.
                self._progress.route(proto.object_or_empty(message.get("params")))
        self._responder.submit(message)

    def _on_closed(self, error: McpConnectionError) -> None:
        """Fail every pending call (and queue a restart); runs on the transport's reader (or a failed writer)."""
        remedy = "restarting it" if self._restarter is not None else RECONNECT_ADVICE
        lost = McpConnectionError(
            with_stderr(f"MCP server {self.server_name!r} is gone: {error}; {remedy}", error.stderr_tail),
            exit_code=error.exit_code,
            stderr_tail=error.stderr_tail,
        )
        # Raised to every caller waiting and every later one: not a WARNING too.
        logger.info("%s", lost)
        if self._restarter is not None:
            self._restarter.lose(lost)
        else:
            self._table.lose(lost)

    def _reconnect(self, epoch: int) -> None:
        """Start the transport again and redo the handshake; the restarter's step, on the worker."""
        self.transport.start(self._on_message, self._on_closed)
        agreement = negotiate(
            self.protocol,
            lambda method, params, options: self._requester.request(method, params, attrs.evolve(options, epoch=epoch)),
            self.transport,
            server_name=self.server_name,
            client_info=self._client_info,
            capabilities=self._capabilities,
            timeout=self.timeout,
        )
        self._adopt(agreement)
        self._tools.invalidate()

    def _adopt(self, agreement: Agreement) -> None:
        self._requester.request_meta = agreement.request_meta
        self._agreement = agreement
