"""MCP: the Model Context Protocol, client and server (see :mod:`agcore_sync.mcp.server`)."""

from agcore_sync.mcp.server import BearerAuth, ElicitResult, McpServer, request_context

__all__ = ["McpServer", "request_context", "BearerAuth", "ElicitResult"]
