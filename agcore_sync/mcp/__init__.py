"""The Model Context Protocol: the client, its transports, OAuth, and MCP tools as agcore tools.

The package is laid out in layers (each an import-linter contract in setup.cfg):

- :mod:`agcore_sync.mcp.shared`: what both sides of the protocol speak
  (JSON-RPC messages, protocol versions, content, resource and prompt values,
  pagination); it imports nothing from ``client/`` or ``transports/``.
- :mod:`agcore_sync.mcp.transports`: how messages travel (stdio to a
  subprocess, Streamable HTTP).
- :mod:`agcore_sync.mcp.auth`: OAuth for HTTP servers.
- :mod:`agcore_sync.mcp.client`: :class:`McpClient` and its request machinery.
- :mod:`agcore_sync.mcp.tools`: MCP tools and resources as
  :class:`~agcore_sync.tools.base.BaseTool` (it does not import the client).
- :mod:`agcore_sync.mcp.errors`: the MCP errors.
- :mod:`agcore_sync.mcp.server`: :class:`McpServer`, serving a tool registry
  (with resources and prompts) over stdio or as a WSGI app; its names
  (``McpServer``, ``request_context``, ``BearerAuth``, ``ElicitResult``)
  load on first use, so the client does not import the server.

The package sits above :mod:`agcore_sync.tools` and below the hooks and the
loop. ``agcore_sync.tools.mcp``, its old place, still imports every name it
exported.

.. versionadded:: 0.1.0
.. versionchanged:: 0.2.0
   Moved from ``agcore_sync.tools.mcp`` (which still re-exports it).
"""

from __future__ import annotations

from typing import Any

from agcore_sync.mcp.client.features import ServerFeatures
from agcore_sync.mcp.client.restart import RestartPolicy
from agcore_sync.mcp.client.sampling import sampling_handler_for
from agcore_sync.mcp.client.session import McpClient, McpToolResult
from agcore_sync.mcp.shared.prompts import McpPrompt, McpPromptArgument, McpPromptResult
from agcore_sync.mcp.shared.resources import McpResource, McpResourceContents, McpResourceTemplate
from agcore_sync.mcp.tools import McpResourceTool, McpTool, McpToolCaller
from agcore_sync.mcp.transports.base import Transport
from agcore_sync.mcp.transports.http import HttpTransport
from agcore_sync.mcp.transports.stdio import StdioTransport

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
    "McpServer",
    "request_context",
    "BearerAuth",
    "ElicitResult",
]

_SERVER_NAMES = ("McpServer", "request_context", "BearerAuth", "ElicitResult")


def __getattr__(name: str) -> Any:
    """Load the server's names on first use (the client never needs them)."""
    if name in _SERVER_NAMES:
        from agcore_sync.mcp import server

        return getattr(server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
