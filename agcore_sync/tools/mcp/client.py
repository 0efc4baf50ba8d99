"""McpClient: a synchronous, thread-safe MCP client over any :class:`Transport`.

Lifecycle (as httpx's ``Client``): a client is created unopened, opened by
:meth:`McpClient.connect` (or entering ``with``), and closed for good by
:meth:`McpClient.close` (or leaving ``with``); it is never reopened.

Threads: the transport delivers server messages on its own thread (the
stdio stdout reader, the HTTP stream readers). That thread only routes: it
hands a response to the slot its caller waits on, drops the tools cache on
``notifications/tools/list_changed`` before it delivers any later response,
and passes everything else to the client's
:class:`~agcore_sync.tools.mcp._responder.ServerResponder`, whose one worker
thread (``agcore-mcp-worker-<n>``, a daemon started when first needed)
answers server requests and runs the user's callbacks. ``close()`` stops
and joins every thread the client owns, through the transport and the
responder.

Restart (``McpClient(restart=RestartPolicy(...))``, restartable transports
only, i.e. stdio): when the server goes away, every pending call fails at
once with :class:`McpConnectionError`, as without a policy. The reader's
``on_closed`` only queues the restart on the responder's worker and
returns; the worker waits the backoff on the client's cancel Event, calls
``transport.start()`` again (which stops what is left of the old process
and starts a new one), runs the handshake, drops the tools cache and opens
the gate. Calls made meanwhile wait at that gate for at most their own
timeout, then go to the new process (or fail with
:class:`McpConnectionError`). Restarts are counted from the last call the
server answered; after ``max_restarts`` of them with no answer in between,
the client gives up and every call fails at once. ``close()`` during a
restart sets the cancel Event (ending a backoff), fails the handshake's
pending request, stops the transport and joins the worker.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import itertools
import logging
import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import agcore_sync
from agcore_sync.llm.types import ToolDef
from agcore_sync.tools.error import McpConnectionError, McpError, McpNotInitializedError
from agcore_sync.tools.mcp import protocol as proto
from agcore_sync.tools.mcp._handshake import negotiate
from agcore_sync.tools.mcp._pending import _CLOSED, _CONNECTING, _NEW, _READY, _RequestMixin, _Slot
from agcore_sync.tools.mcp._responder import ServerResponder
from agcore_sync.tools.mcp._restart_runner import LOSS_REPORT_TIMEOUT, _RestartMixin  # noqa: F401 - re-exported
from agcore_sync.tools.mcp._result import McpToolResult
from agcore_sync.tools.mcp.restart import RestartPolicy
from agcore_sync.tools.mcp.transport import Transport

if TYPE_CHECKING:
    from agcore_sync.tools.mcp.adapter import McpTool

__all__ = ["McpClient", "McpToolResult", "ElicitationHandler", "SamplingHandler", "ProgressHandler"]

logger = logging.getLogger("agcore_sync.mcp")

#: ``elicitation_handler(params) -> result``: gets the ``elicitation/create``
#: params, returns ``{"action": "accept" | "decline" | "cancel", "content": {...}}``.
ElicitationHandler = Callable[[Dict[str, Any]], Dict[str, Any]]
#: ``sampling_handler(params) -> result``: gets the ``sampling/createMessage``
#: params, returns a ``CreateMessageResult`` dict (role, content, model, ...).
SamplingHandler = Callable[[Dict[str, Any]], Dict[str, Any]]
#: ``on_progress(params)``: gets each ``notifications/progress`` params dict.
ProgressHandler = Callable[[Dict[str, Any]], None]

#: Most ``input_required`` rounds one 2026-07-28 call may take before the
#: client gives up (the SDKs use 10 too).
MAX_INPUT_ROUNDS = 10
#: First pause before retrying an ``input_required`` result that carries only
#: ``requestState``; it doubles up to :data:`INPUT_RETRY_MAX_DELAY`.
INPUT_RETRY_DELAY = 0.05
#: Longest pause between state-only ``input_required`` retries.
INPUT_RETRY_MAX_DELAY = 0.25
#: Most ``tools/list`` pages followed before the client decides the server loops.
MAX_TOOL_PAGES = 1000


class McpClient(_RestartMixin, _RequestMixin):
    """A client of one MCP server: handshake, tools, calls, server requests.

    Args:
        server_name: a name for the server, used in errors and logs.
        transport: the channel to the server (:class:`StdioTransport`,
            ``HttpTransport``); the client owns it and closes it.
        timeout: seconds to wait for each answer (None: no limit). Also used
            for ``initialize``, which is never cancelled.
        client_info: ``clientInfo`` sent to the server (default
            ``{"name": "agcore_sync", "version": agcore_sync.__version__}``).
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
            :class:`~agcore_sync.tools.mcp.restart.RestartPolicy` says (None:
            a lost server stays lost). Needs a restartable transport
            (:class:`StdioTransport`); see the module docstring for where the
            restart runs and how calls wait for it.

    Capabilities declared are exactly those with a handler or data:
    ``roots: {}``, ``sampling: {}``, ``elicitation: {"form": {}}``.

    Any number of threads may call :meth:`call_tool` and :meth:`list_tools`
    at once; writes are serialised and each request waits on its own slot.

    Raises:
        ValueError: ``protocol`` is not a known version or ``"auto"``, or
            ``restart`` is given with a transport that cannot start again
            (``HttpTransport``).
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
        if protocol is not None and protocol != "auto" and protocol not in proto.KNOWN_VERSIONS:
            raise ValueError(
                f"protocol must be None, 'auto' or one of {', '.join(proto.KNOWN_VERSIONS)}; got {protocol!r}"
            )
        if restart is not None:
            if not isinstance(restart, RestartPolicy):
                raise TypeError(f"restart must be a RestartPolicy or None, not {type(restart).__name__}")
            if not getattr(transport, "restartable", False):
                raise ValueError(
                    f"restart needs a transport that can start the server again (StdioTransport); "
                    f"{type(transport).__name__} cannot, so MCP client {server_name!r} cannot restart it"
                )
        self.server_name = server_name
        self.transport = transport
        self.timeout = timeout
        self.protocol = protocol
        default_info = {"name": "agcore_sync", "version": agcore_sync.__version__}
        self._client_info: Dict[str, Any] = dict(client_info) if client_info is not None else default_info
        self._roots = None if roots is None else [dict(root) for root in roots]
        self._on_progress = on_progress
        self._capabilities = proto.client_capabilities(
            roots=self._roots is not None,
            sampling=sampling_handler is not None,
            elicitation=elicitation_handler is not None,
        )
        self._ids = itertools.count(1)
        self._pending: Dict[Any, _Slot] = {}
        self._pending_lock = threading.Lock()
        # Guards _state transitions only; _connect_lock makes a second
        # connect() wait for the first.
        self._lifecycle_lock = threading.Lock()
        self._connect_lock = threading.Lock()
        self._state = _NEW
        # Set when the server went away; cleared by a successful restart.
        self._lost: Optional[McpConnectionError] = None
        self._restart = restart
        # Restart bookkeeping, all guarded by _pending_lock. _restarting is
        # True from a loss until the restart job ends (back, given up or
        # closed); _loss_count counts losses, so a restart notices its new
        # process dying during the handshake; _generation counts processes.
        self._restarting = False
        self._loss_count = 0
        self._generation = 0
        self._restart_count = 0
        self._restarts_since_success = 0
        # Calls waiting for a restart wait on this (over _pending_lock).
        self._reconnected = threading.Condition(self._pending_lock)
        self._request_meta: Optional[Dict[str, Any]] = None
        self._negotiated_version: Optional[str] = None
        self._server_info: Optional[Dict[str, Any]] = None
        self._server_capabilities: Dict[str, Any] = {}
        self._instructions: Optional[str] = None
        self._cache_lock = threading.Lock()
        self._tools_generation = 0
        self._tools_cache: Optional[Tuple[Dict[str, Any], ...]] = None
        self._tools_expiry: Optional[float] = None
        # The one cancel Event of this owner: set by close(), passed down to
        # the responder's worker, waited on by the input_required backoff.
        self._cancel = threading.Event()
        self._responder = ServerResponder(
            server_name,
            transport.send,
            self._cancel,
            timeout=timeout,
            roots=self._roots,
            elicitation_handler=elicitation_handler,
            sampling_handler=sampling_handler,
            on_progress=on_progress,
        )

    def __repr__(self) -> str:
        return f"McpClient({self.server_name!r}, state={self._state}, version={self._negotiated_version})"

    # -- lifecycle --------------------------------------------------------

    def __enter__(self) -> McpClient:
        self.connect()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    @property
    def negotiated_version(self) -> Optional[str]:
        """The protocol version agreed with the server (None before ``connect()``)."""
        return self._negotiated_version

    @property
    def server_info(self) -> Optional[Dict[str, Any]]:
        """The server's ``serverInfo`` (name, version, ...), or None if it sent none."""
        return self._server_info

    @property
    def server_capabilities(self) -> Dict[str, Any]:
        """The capabilities the server declared."""
        return self._server_capabilities

    @property
    def instructions(self) -> Optional[str]:
        """The server's ``instructions``, if any."""
        return self._instructions

    @property
    def restart_policy(self) -> Optional[RestartPolicy]:
        """The restart policy given, or None."""
        return self._restart

    @property
    def restart_count(self) -> int:
        """How many times the server was restarted successfully (handshake done) so far."""
        return self._restart_count

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
                        f"MCP client for {self.server_name!r} is {self._state}; create a new McpClient to reconnect"
                    )
                self._state = _CONNECTING
            try:
                self.transport.start(self._on_message, self._on_closed)
                agreement = negotiate(
                    self.protocol,
                    self._request,
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
            # (_on_closed restarts only a ready client): start it here.
            with self._pending_lock:
                restart = self._lost is not None and self._claim_restart()
            if restart:
                self._responder.run(self._restart_loop)
        logger.debug("connected to MCP server %r (protocol %s)", self.server_name, self._negotiated_version)
        return self

    def close(self) -> None:
        """Stop the server, fail pending calls, join every thread; idempotent.

        Calls still waiting fail with :class:`McpConnectionError`; later
        calls raise :class:`McpNotInitializedError`. Bounded in time: the
        transport's own shutdown plus the responder's
        :data:`~agcore_sync.tools.mcp._responder.WORKER_JOIN_TIMEOUT`.
        """
        with self._lifecycle_lock:
            if self._state == _CLOSED:
                return
            self._state = _CLOSED
        self._cancel.set()
        with self._pending_lock:
            self._reconnected.notify_all()  # calls waiting for a restart
        self._fail_pending(McpConnectionError(f"MCP client for {self.server_name!r} was closed"))
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
        return [
            ToolDef(
                tool["name"],
                tool.get("description") or "",
                tool.get("inputSchema") or {"type": "object", "properties": {}},
            )
            for tool in self._tool_dicts()
        ]

    def _tool_dicts(self) -> Tuple[Dict[str, Any], ...]:
        self._check_ready()
        with self._cache_lock:
            cached, generation = self._tools_cache, self._tools_generation
            if cached is not None and (self._tools_expiry is None or proto.now() < self._tools_expiry):
                return cached
        tools: List[Dict[str, Any]] = []
        cursor: Optional[str] = None
        seen = set()
        ttl_ms: Optional[float] = None
        for _ in range(MAX_TOOL_PAGES):
            params = {"cursor": cursor} if cursor is not None else None
            result = self._request("tools/list", params, timeout=self.timeout)
            page = result.get("tools")
            tools.extend(tool for tool in (page if isinstance(page, list) else ()) if _is_tool(tool))
            if self._request_meta is not None:
                ttl = result.get("ttlMs")
                ttl = ttl if isinstance(ttl, (int, float)) and ttl >= 0 else 0
                ttl_ms = ttl if ttl_ms is None else min(ttl_ms, ttl)
            cursor = result.get("nextCursor")
            if not cursor:
                break
            if cursor in seen:
                raise McpError(f"MCP server {self.server_name!r} repeated tools/list cursor {cursor!r}")
            seen.add(cursor)
        else:
            raise McpError(f"MCP server {self.server_name!r} sent more than {MAX_TOOL_PAGES} tools/list pages")
        found = tuple(tools)
        with self._cache_lock:
            # A list_changed that arrived while we were paging makes this list stale.
            if self._tools_generation == generation:
                self._tools_cache = found
                self._tools_expiry = None if ttl_ms is None else proto.now() + ttl_ms / 1000.0
        return found

    def call_tool(
        self, name: str, args: Optional[Mapping[str, Any]] = None, timeout: Optional[float] = None
    ) -> McpToolResult:
        """Call a tool and return its result; ``isError`` results are returned, not raised.

        Args:
            name: the tool's name on the server.
            args: its arguments (a JSON object).
            timeout: seconds to wait (None: the client's ``timeout``). On
                2026-07-28 it applies to each round of an ``input_required``
                exchange, not to the time the handlers take.

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
        progress = self._on_progress is not None
        result = self._request("tools/call", params, timeout=wait, progress=progress, tool_name=name)
        delay = INPUT_RETRY_DELAY
        rounds = 0
        while result.get("resultType") == "input_required":
            rounds += 1
            if rounds > MAX_INPUT_ROUNDS:
                raise McpError(
                    f"MCP server {self.server_name!r} still asked for input after {MAX_INPUT_ROUNDS} rounds "
                    f"of tool {name!r}",
                    tool_name=name,
                )
            retry = dict(params)
            requests = result.get("inputRequests")
            if isinstance(requests, dict) and requests:
                retry["inputResponses"] = {
                    key: self._responder.answer_input_request(request, name) for key, request in requests.items()
                }
                delay = INPUT_RETRY_DELAY
            elif self._cancel.wait(delay):
                raise McpNotInitializedError(f"MCP client for {self.server_name!r} was closed", tool_name=name)
            else:
                delay = min(delay * 2, INPUT_RETRY_MAX_DELAY)
            if "requestState" in result:
                retry["requestState"] = result["requestState"]
            result = self._request("tools/call", retry, timeout=wait, progress=progress, tool_name=name)
        return McpToolResult.from_result(result)

    def into_tools(
        self,
        prefix: Optional[str] = None,
        *,
        permissions: Sequence[Any] = (),
        idempotent: Sequence[str] = (),
    ) -> List[McpTool]:
        """Return one :class:`~agcore_sync.tools.mcp.adapter.McpTool` per server tool.

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
        from agcore_sync.tools.mcp.adapter import McpTool

        if isinstance(idempotent, str):
            raise TypeError("idempotent must be a sequence of tool names, not a single string")
        tools = self._tool_dicts()
        retry = set(idempotent)
        unknown = retry - {tool["name"] for tool in tools}
        if unknown:
            raise ValueError(
                f"idempotent names tools that MCP server {self.server_name!r} does not have: {sorted(unknown)}"
            )
        return [
            McpTool(self, tool, prefix=prefix, permissions=permissions, idempotent=tool["name"] in retry)
            for tool in tools
        ]

    def _adopt(self, agreement: Any) -> None:
        self._negotiated_version = agreement.version
        self._server_info = agreement.server_info
        self._server_capabilities = agreement.capabilities
        self._instructions = agreement.instructions
        self._request_meta = agreement.request_meta


def _dict_or_empty(value: Any) -> Dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _is_tool(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("name"), str)
