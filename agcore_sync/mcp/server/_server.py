"""McpServer: tools, resources and prompts served to MCP clients over stdio or Streamable HTTP."""

from __future__ import annotations

import secrets
import threading
import time
from typing import Any, Callable, Dict, List, Optional, TypeVar

from agcore_sync import _check
from agcore_sync.mcp.server import _results
from agcore_sync.mcp.server._catalog import PromptDef, ResourceDef, prompt_def, resource_def
from agcore_sync.mcp.server._session import DEFAULT_REQUEST_TIMEOUT, ServerSession
from agcore_sync.tools.function import tool as make_tool
from agcore_sync.tools.registry import ToolRegistry

__all__ = ["McpServer"]

_F = TypeVar("_F", bound=Callable[..., Any])

#: Items per page of ``tools/list``, ``resources/list``, ``prompts/list`` and the templates.
DEFAULT_PAGE_SIZE = 100


class McpServer:
    """An MCP server: tools, resources and prompts for Claude Desktop, IDEs and other agents.

    Tools come from ``registry`` (a :class:`~agcore_sync.tools.registry.ToolRegistry`)
    or the :meth:`tool` decorator, which adds to that registry; every call
    goes through the registry, so its permission checker and hooks apply.
    Serve with :meth:`run_stdio` or mount :meth:`wsgi_app` in any WSGI
    server (gunicorn with threads, Flask, Django).

    Threads: the server starts none of its own for HTTP (each request runs
    in the WSGI server's thread; a ``tools/call`` answered as SSE runs on
    one worker thread ``agcore-mcp-serve-<n>`` while the request's thread
    streams). :meth:`run_stdio` reads in the calling thread and runs each
    request on those workers. :meth:`close` ends every session and joins
    the workers.

    Args:
        name: the server's name, sent in ``serverInfo``.
        version: the server's version.
        instructions: text telling clients how to use the server.
        registry: the tools; None makes a registry of the server's own
            (closed by :meth:`close`).
        mask_errors: send a tool's failure as ``Error in tool "<name>"``
            without its message.
        tool_timeout: seconds a tool call may run (None: no limit); a call
            past it is answered with an ``isError`` result.
        request_timeout: seconds a sampling or elicitation request waits for the client.
        session_idle_timeout: seconds an HTTP session may stay unused before it ends.
        max_sessions: the most HTTP sessions at once; more are refused with 503.
        page_size: items per page of the list methods.

    .. versionadded:: 0.1.0
    """

    def __init__(
        self,
        name: str,
        version: str = "0.0.0",
        *,
        instructions: Optional[str] = None,
        registry: Optional[ToolRegistry] = None,
        mask_errors: bool = False,
        tool_timeout: Optional[float] = None,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        session_idle_timeout: float = 1800.0,
        max_sessions: int = 1000,
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"McpServer: name must be a non-empty str, got {name!r}")
        _check.optional_instance("McpServer", "registry", registry, ToolRegistry, "a ToolRegistry")
        _check.timeout("McpServer", tool_timeout, name="tool_timeout")
        _check.positive_int("McpServer", "max_sessions", max_sessions)
        _check.positive_int("McpServer", "page_size", page_size)
        self.name = name
        self.version = version
        self.instructions = instructions
        self.mask_errors = bool(mask_errors)
        self.tool_timeout = tool_timeout
        self.request_timeout = request_timeout
        self.session_idle_timeout = session_idle_timeout
        self.max_sessions = max_sessions
        self.page_size = page_size
        self._owns_registry = registry is None
        #: The tools served.
        self.registry = registry if registry is not None else ToolRegistry()
        #: ``fn(ref, argument_name, value, context_arguments) -> list[str]`` set by :meth:`completion`.
        self.completer: Optional[Callable[..., Any]] = None
        self._lock = threading.Lock()
        self._resources: Dict[str, ResourceDef] = {}
        self._prompts: Dict[str, PromptDef] = {}
        self._tool_extras: Dict[str, Dict[str, Any]] = {}
        self._plans: Dict[int, _results.OutputPlan] = {}
        self._sessions: Dict[str, ServerSession] = {}
        self._workers: Optional[Any] = None
        #: The session :meth:`run_stdio` serves, while it runs.
        self.stdio_session: Optional[ServerSession] = None
        self._closed = False

    @property
    def info(self) -> Dict[str, Any]:
        """The ``Implementation`` object: ``{"name", "version"}``."""
        return {"name": self.name, "version": self.version}

    def capabilities(self) -> Dict[str, Any]:
        """Return the capabilities sent in ``initialize`` and ``server/discover``."""
        capabilities: Dict[str, Any] = {
            "tools": {"listChanged": True},
            "resources": {"subscribe": True, "listChanged": True},
            "prompts": {"listChanged": True},
            "logging": {},
        }
        if self.completer is not None:
            capabilities["completions"] = {}
        return capabilities

    # -- registration ------------------------------------------------------------------

    def tool(self, fn: Optional[_F] = None, *, name: Optional[str] = None, description: Optional[str] = None,
             title: Optional[str] = None, annotations: Optional[Dict[str, Any]] = None) -> Any:
        """Register a function as a tool (as :func:`~agcore_sync.tools.function.tool` does), in :attr:`registry`.

        Use as ``@server.tool`` or ``@server.tool(name=..., annotations={"readOnlyHint": True})``.

        Args:
            fn: the function.
            name: the tool's name (default: the function's).
            description: its description (default: the docstring's summary).
            title: a human-readable title.
            annotations: MCP tool annotations (``readOnlyHint``,
                ``destructiveHint``, ``idempotentHint``, ``openWorldHint``, ``title``).

        Returns:
            The :class:`~agcore_sync.tools.function.FunctionTool` (or a decorator).
        """
        def decorate(func: Callable[..., Any]) -> Any:
            made = make_tool(func, name=name, description=description)
            extras: Dict[str, Any] = {}
            if title is not None:
                extras["title"] = title
            if annotations:
                extras["annotations"] = dict(annotations)
            with self._lock:
                self._tool_extras[made.name] = extras
            self.registry.register(made)
            self._list_changed("tools")
            return made

        return decorate(fn) if fn is not None else decorate

    def remove_tool(self, name: str) -> None:
        """Stop serving the tool ``name`` and tell the clients (``tools/list_changed``)."""
        self.registry.unregister(name)
        self._list_changed("tools")

    def resource(self, uri: str, *, name: Optional[str] = None, description: Optional[str] = None,
                 mime_type: Optional[str] = None) -> Callable[[_F], _F]:
        """Register a function as the resource at ``uri``; a ``{var}`` in ``uri`` makes a template.

        The function takes the template's variables as keyword arguments (a
        plain resource takes none) and returns a str (text), bytes (a blob),
        or a list of them.
        """
        def decorate(func: _F) -> _F:
            made = resource_def(uri, func, name, description, mime_type)
            with self._lock:
                self._resources[uri] = made
            self._list_changed("resources")
            return func

        return decorate

    def remove_resource(self, uri: str) -> None:
        """Stop serving the resource (or template) ``uri`` and tell the clients."""
        with self._lock:
            self._resources.pop(uri, None)
        self._list_changed("resources")

    def prompt(self, name: Optional[str] = None, *, description: Optional[str] = None) -> Callable[[_F], _F]:
        """Register a function as a prompt; its parameters are the prompt's arguments (str values).

        It returns a str (one user message), a :class:`~agcore_sync.llm.types.Message`,
        a wire message dict, or a list of them.
        """
        if callable(name):
            return self.prompt()(name)  # type: ignore[return-value]

        def decorate(func: _F) -> _F:
            made = prompt_def(func, name, description)
            with self._lock:
                self._prompts[made.name] = made
            self._list_changed("prompts")
            return func

        return decorate

    def remove_prompt(self, name: str) -> None:
        """Stop serving the prompt ``name`` and tell the clients."""
        with self._lock:
            self._prompts.pop(name, None)
        self._list_changed("prompts")

    def completion(self, fn: _F) -> _F:
        """Set the completion function: ``fn(ref, argument_name, value, context) -> list[str]``."""
        self.completer = fn
        return fn

    def notify_resource_updated(self, uri: str) -> None:
        """Send ``notifications/resources/updated`` to every session subscribed to ``uri``."""
        for session in self._live_sessions():
            if uri in session.subscriptions:
                session.notify("notifications/resources/updated", {"uri": uri})

    # -- what the dispatcher reads ----------------------------------------------------------

    def tool_listing(self) -> List[Dict[str, Any]]:
        """Return the ``tools/list`` entries."""
        out = []
        for definition in self.registry.definitions():
            entry: Dict[str, Any] = {"name": definition.name, "description": definition.description,
                                     "inputSchema": definition.parameters}
            plan = self.output_plan(definition.name)
            if plan.schema is not None:
                entry["outputSchema"] = plan.schema
            entry.update(self._tool_extras.get(definition.name, {}))
            out.append(entry)
        return out

    def output_plan(self, name: str) -> _results.OutputPlan:
        """Return how the tool ``name`` sends structured output."""
        found = self.registry.get(name)
        if found is None:
            return _results.OutputPlan(None, False)
        plan = self._plans.get(id(found))
        if plan is None:
            plan = self._plans[id(found)] = _results.output_plan(found)
        return plan

    def resource_defs(self) -> List[ResourceDef]:
        """Return the resources and templates, in registration order."""
        with self._lock:
            return list(self._resources.values())

    def prompt_defs(self) -> List[PromptDef]:
        """Return the prompts, in registration order."""
        with self._lock:
            return list(self._prompts.values())

    def prompt_def(self, name: str) -> Optional[PromptDef]:
        """Return the prompt ``name``, or None."""
        with self._lock:
            return self._prompts.get(name)

    # -- sessions ---------------------------------------------------------------------------

    def open_session(self, *, stateful: bool = True) -> Optional[ServerSession]:
        """Open a session (for a transport); None when :attr:`max_sessions` are open.

        A session that is not ``stateful`` is not kept (stateless HTTP, 2026-07-28 requests).
        """
        self._expire_sessions()
        session = ServerSession(secrets.token_hex(16) if stateful else None, self.request_timeout)
        if not stateful:
            session.can_ask = False
            return session
        with self._lock:
            if self._closed or len(self._sessions) >= self.max_sessions:
                return None
            self._sessions[session.id] = session  # type: ignore[index]
        return session

    def find_session(self, session_id: str) -> Optional[ServerSession]:
        """Return the open session ``session_id`` (marked used), or None if unknown or expired."""
        with self._lock:
            session = self._sessions.get(session_id)
        if session is not None:
            if time.monotonic() - session.last_used > self.session_idle_timeout:
                self.end_session(session_id)
                return None
            session.last_used = time.monotonic()
        return session

    def end_session(self, session_id: str) -> bool:
        """End the session ``session_id``; False if there was none."""
        with self._lock:
            session = self._sessions.pop(session_id, None)
        if session is None:
            return False
        session.close()
        return True

    def _expire_sessions(self) -> None:
        limit = time.monotonic() - self.session_idle_timeout
        with self._lock:
            stale = [sid for sid, s in self._sessions.items() if s.last_used < limit]
        for sid in stale:
            self.end_session(sid)

    def _live_sessions(self) -> List[ServerSession]:
        with self._lock:
            sessions = list(self._sessions.values())
            stdio = self.stdio_session
        return sessions + ([stdio] if stdio is not None else [])

    @property
    def session_count(self) -> int:
        """How many HTTP sessions are open."""
        with self._lock:
            return len(self._sessions)

    def _list_changed(self, kind: str) -> None:
        for session in self._live_sessions():
            if session.initialized or session.protocol_version is not None:
                session.notify(f"notifications/{kind}/list_changed")

    def submit(self, fn: Callable[[], None]) -> Any:
        """Run ``fn`` on the server's workers; return its Future.

        Raises:
            RuntimeError: the server is closed.
        """
        return self._workers_pool().submit(fn)

    def _workers_pool(self) -> Any:
        from agcore_sync._pool import DaemonPool

        with self._lock:
            if self._workers is None:
                self._workers = DaemonPool(64, name="agcore-mcp-serve")
            return self._workers

    # -- transports ---------------------------------------------------------------------------

    def run_stdio(self, stdin: Any = None, stdout: Any = None) -> None:
        """Serve one client on stdin/stdout (binary streams) until stdin closes; then close the session.

        Args:
            stdin: the stream to read (default ``sys.stdin.buffer``).
            stdout: the stream to write (default ``sys.stdout.buffer``).
        """
        from agcore_sync.mcp.server.stdio import serve_stdio

        serve_stdio(self, stdin, stdout)

    def wsgi_app(self, *, path: str = "/mcp", allowed_hosts: Optional[List[str]] = None,
                 allowed_origins: Optional[List[str]] = None, auth: Any = None, stateless: bool = False) -> Any:
        """Return a WSGI application serving Streamable HTTP at ``path``.

        Args:
            path: the endpoint's path.
            allowed_hosts: the Host names (``host`` or ``host:port``) to serve;
                None: the loopback names on any port. A refused Host gets 421.
            allowed_origins: the Origins to serve; None: the allowed hosts as
                http(s) origins. A refused Origin gets 403.
            auth: a :class:`~agcore_sync.mcp.server.auth.BearerAuth`, or None.
            stateless: no sessions: each POST stands alone (no
                ``Mcp-Session-Id``, no server-to-client requests, no GET stream).

        Returns:
            The WSGI callable.
        """
        from agcore_sync.mcp.server.wsgi import McpWsgiApp

        return McpWsgiApp(self, path=path, allowed_hosts=allowed_hosts, allowed_origins=allowed_origins,
                          auth=auth, stateless=stateless)

    def close(self) -> None:
        """End every session (their requests see ``cancelled``), stop the workers, close an own registry.

        Idempotent.
        """
        with self._lock:
            self._closed = True
            ids = list(self._sessions)
            workers, self._workers = self._workers, None
        for sid in ids:
            self.end_session(sid)
        if workers is not None:
            workers.shutdown(wait=True, cancel_futures=True, timeout=2.0)
        if self._owns_registry:
            self.registry.close()

    def __enter__(self) -> McpServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
