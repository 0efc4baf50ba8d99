"""The server's tool list: paging through ``tools/list`` and the cache of the result.

:class:`ToolsCache` is owned by :class:`~agcore_sync.tools.mcp.client.McpClient`.
The transport's reader calls :meth:`ToolsCache.invalidate` on
``notifications/tools/list_changed`` (in wire order, before any later
response is delivered), a restart calls it after the new handshake, and a
list fetched while an invalidation came in is not stored (its generation is
stale).
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

from agcore_sync.tools.error import McpError
from agcore_sync.tools.mcp import protocol as proto

__all__ = ["ToolsCache", "fetch_tools", "MAX_TOOL_PAGES"]

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
    request: Callable[..., Dict[str, Any]], server_name: str, *, timeout: Optional[float], modern: bool
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
        result = request("tools/list", params, timeout=timeout)
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
