"""The MCP client: transports, :class:`McpClient`, the :class:`McpTool` adapter, resources, prompts, sampling.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

from agcore_sync.tools.mcp._features import ServerFeatures
from agcore_sync.tools.mcp.adapter import McpTool, McpToolCaller
from agcore_sync.tools.mcp.client import McpClient, McpToolResult
from agcore_sync.tools.mcp.http import HttpTransport
from agcore_sync.tools.mcp.prompts import McpPrompt, McpPromptArgument, McpPromptResult
from agcore_sync.tools.mcp.resource_tool import McpResourceTool
from agcore_sync.tools.mcp.resources import McpResource, McpResourceContents, McpResourceTemplate
from agcore_sync.tools.mcp.restart import RestartPolicy
from agcore_sync.tools.mcp.sampling import sampling_handler_for
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
    "ServerFeatures",
    "McpResource",
    "McpResourceTemplate",
    "McpResourceContents",
    "McpPrompt",
    "McpPromptArgument",
    "McpPromptResult",
    "sampling_handler_for",
    "McpResourceTool",
]
