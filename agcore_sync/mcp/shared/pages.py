"""Paging through an MCP list method (``resources/list``, ``prompts/list``...) to its end.

Every MCP list result may carry ``nextCursor``; the client follows it until
it is absent, and refuses a server that repeats a cursor or never stops.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from agcore_sync.mcp.errors import McpError

__all__ = ["fetch_all", "MAX_PAGES"]

#: Most pages followed for one list before the client decides the server loops.
MAX_PAGES = 1000


def fetch_all(
    request: Callable[[str, Optional[Dict[str, Any]]], Dict[str, Any]],
    method: str,
    key: str,
    server_name: str,
    *,
    params: Optional[Dict[str, Any]] = None,
) -> List[Dict[str, Any]]:
    """Return every object of ``result[key]`` over all pages of ``method``.

    Items that are not JSON objects are skipped.

    Raises:
        McpError: the server repeated a cursor or sent more than
            :data:`MAX_PAGES` pages; or as any request.
    """
    items: List[Dict[str, Any]] = []
    cursor: Optional[str] = None
    seen = set()
    for _ in range(MAX_PAGES):
        page_params = dict(params or {})
        if cursor is not None:
            page_params["cursor"] = cursor
        result = request(method, page_params or None)
        page = result.get(key)
        items.extend(item for item in (page if isinstance(page, list) else ()) if isinstance(item, dict))
        cursor = result.get("nextCursor")
        if not cursor:
            return items
        if not isinstance(cursor, str) or cursor in seen:
            raise McpError(f"MCP server {server_name!r} repeated or garbled {method} cursor {cursor!r}")
        seen.add(cursor)
    raise McpError(f"MCP server {server_name!r} sent more than {MAX_PAGES} {method} pages")
