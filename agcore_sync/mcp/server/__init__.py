"""The MCP server: :class:`McpServer` serves tools, resources and prompts over stdio or Streamable HTTP (WSGI).

.. versionadded:: 0.1.0
"""

from __future__ import annotations

from agcore_sync.mcp.server._results import ToolResult
from agcore_sync.mcp.server._server import McpServer
from agcore_sync.mcp.server.auth import BearerAuth
from agcore_sync.mcp.server.context import ElicitResult, RequestContext, request_context

__all__ = ["McpServer", "request_context", "RequestContext", "ElicitResult", "BearerAuth", "ToolResult"]
