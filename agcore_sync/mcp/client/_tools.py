"""The server's tool list: paging through ``tools/list``, the cache of the result, and the adapters.

One broken tool must not sink the turn: :func:`usable_tools` leaves out,
with a WARNING naming the server and the tool, a tool whose
``inputSchema`` is not a valid JSON Schema (a registry would refuse it and
fail the whole turn) or whose name providers refuse (they take
``^[a-zA-Z0-9_-]{1,64}$``: the server's name must match, and with the
caller's prefix, which is prepended verbatim and is the caller's choice,
be at most 64 characters); the rest work. The list is filtered each time it becomes registry tools, so a
list fetched after ``tools/list_changed`` is filtered too.

:class:`ToolsCache` is owned by :class:`~agcore_sync.mcp.client.session.McpClient`.
The transport's reader calls :meth:`ToolsCache.invalidate` on
``notifications/tools/list_changed`` (in wire order, before any later
response is delivered), a restart calls it after the new handshake, and a
list fetched while an invalidation came in is not stored (its generation is
stale).
"""

from __future__ import annotations

import re
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from agcore_sync import _instrument
from agcore_sync.llm.types import ToolDef
from agcore_sync.mcp.errors import McpError
from agcore_sync.mcp.shared import protocol as proto
from agcore_sync.mcp.tools import McpTool, McpToolCaller
from agcore_sync.tools.error import ToolError

__all__ = ["ToolsCache", "fetch_tools", "tool_def", "usable_tools", "build_adapters", "MAX_TOOL_PAGES", "TOOL_NAME"]

logger = _instrument.get_logger("agcore_sync.mcp")

#: Tool names every provider here accepts (OpenAI's and Anthropic's rule).
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

#: Most ``tools/list`` pages followed before the client decides the server loops.
MAX_TOOL_PAGES = 1000

Tools = Tuple[Dict[str, Any], ...]


class ToolsCache:
    """The last tool list and when it expires; safe from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._generation = 0
        self._tools: Optional[Tools] = None
        self._expiry: Optional[float] = None

    def get(self) -> Tuple[Optional[Tools], int]:
        """Return the cached list (None if there is none or it expired) and the generation to store under."""
        with self._lock:
            tools = self._tools
            if tools is not None and self._expiry is not None and proto.now() >= self._expiry:
                tools = None
            return tools, self._generation

    def store(self, tools: Tools, generation: int, ttl_ms: Optional[float]) -> None:
        """Keep ``tools`` (for ``ttl_ms``, None: until invalidated) unless invalidated since ``generation``."""
        with self._lock:
            if self._generation == generation:
                self._tools = tools
                self._expiry = None if ttl_ms is None else proto.now() + ttl_ms / 1000.0

    def invalidate(self) -> None:
        """Drop the list; one being fetched now is not kept either."""
        with self._lock:
            self._generation += 1
            self._tools = None
            self._expiry = None


def fetch_tools(
    request: Callable[[str, Optional[Dict[str, Any]]], Dict[str, Any]], server_name: str, *, modern: bool
) -> Tuple[Tools, Optional[float]]:
    """Fetch every ``tools/list`` page through the client's ``request``; return the tools and the ``ttlMs``.

    ``modern`` (2026-07-28) reads each page's ``ttlMs`` and returns the
    smallest (None on the handshake versions).

    Raises:
        McpError: the server repeated a cursor or sent more than
            :data:`MAX_TOOL_PAGES` pages; or as any request.
    """
    tools: List[Dict[str, Any]] = []
    cursor: Optional[str] = None
    seen = set()
    ttl_ms: Optional[float] = None
    for _ in range(MAX_TOOL_PAGES):
        params = {"cursor": cursor} if cursor is not None else None
        result = request("tools/list", params)
        page = result.get("tools")
        tools.extend(tool for tool in (page if isinstance(page, list) else ()) if _is_tool(tool))
        if modern:
            ttl = result.get("ttlMs")
            ttl = ttl if isinstance(ttl, (int, float)) and ttl >= 0 else 0
            ttl_ms = ttl if ttl_ms is None else min(ttl_ms, ttl)
        cursor = result.get("nextCursor")
        if not cursor:
            return tuple(tools), ttl_ms
        if cursor in seen:
            raise McpError(f"MCP server {server_name!r} repeated tools/list cursor {cursor!r}")
        seen.add(cursor)
    raise McpError(f"MCP server {server_name!r} sent more than {MAX_TOOL_PAGES} tools/list pages")


def _is_tool(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("name"), str)


def tool_def(tool: Dict[str, Any]) -> ToolDef:
    """Return the :class:`ToolDef` of one ``tools/list`` entry."""
    description = tool.get("description")
    return ToolDef(
        tool["name"],
        description if isinstance(description, str) else "",
        tool.get("inputSchema") or {"type": "object", "properties": {}},
    )


def usable_tools(tools: Tools, server_name: str, prefix: Optional[str] = None) -> Tools:
    """Return the tools a provider and a registry accept; warn about each one left out.

    Left out: a server name that is not ``^[a-zA-Z0-9_-]{1,64}$`` or longer
    than 64 characters with ``prefix``, and an ``inputSchema`` that is not
    a valid JSON Schema.
    """
    from agcore_sync.tools._validation import compile_validator

    kept = []
    for tool in tools:
        name = f"{prefix or ''}{tool['name']}"
        if not TOOL_NAME.match(tool["name"]) or len(name) > 64:
            logger.warning(
                "MCP server %r: left out tool %r: providers accept only names matching %s",
                server_name, name, TOOL_NAME.pattern,
            )
            continue
        schema = tool.get("inputSchema")
        try:
            compile_validator(name, schema if schema is not None else {"type": "object"})
        except ToolError as exc:
            logger.warning("MCP server %r: left out tool %r: %s", server_name, name, exc.message)
            continue
        kept.append(tool)
    return tuple(kept)


def build_adapters(
    caller: McpToolCaller,
    tools: Tools,
    *,
    prefix: Optional[str],
    permissions: Sequence[Any],
    idempotent: Sequence[str],
    known: Sequence[str],
) -> List[McpTool]:
    """Return one adapter per tool (the body of ``McpClient.into_tools``); ``known``: every server tool name.

    Raises:
        ValueError: ``idempotent`` names a tool the server does not have.
        TypeError: ``idempotent`` is a single string.
    """
    if isinstance(idempotent, str):
        raise TypeError("idempotent must be a sequence of tool names, not a single string")
    retry = set(idempotent)
    unknown = retry - set(known)
    if unknown:
        raise ValueError(
            f"idempotent names tools that MCP server {caller.server_name!r} does not have: {sorted(unknown)}"
        )
    return [
        McpTool(caller, tool, prefix=prefix, permissions=permissions, idempotent=tool["name"] in retry)
        for tool in tools
    ]
