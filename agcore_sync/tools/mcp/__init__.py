"""The MCP client: transports, :class:`McpClient`, and the :class:`McpTool` adapter.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

from agcore_sync.tools.mcp.adapter import McpTool, McpToolCaller
from agcore_sync.tools.mcp.client import McpClient, McpToolResult
from agcore_sync.tools.mcp.http import HttpTransport
from agcore_sync.tools.mcp.restart import RestartPolicy
from agcore_sync.tools.mcp.stdio import StdioTransport
from agcore_sync.tools.mcp.transport import Transport

__all__ = [
    "McpClient",
    "McpToolResult",
    "McpTool",
    "McpToolCaller",
    "Transport",
    "StdioTransport",
    "HttpTransport",
    "RestartPolicy",
]
