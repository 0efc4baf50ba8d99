"""The MCP client: :class:`McpClient`, its restart policy, the server features it composes, sampling answers.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

from agcore_sync.mcp.client.features import ServerFeatures
from agcore_sync.mcp.client.restart import RestartPolicy
from agcore_sync.mcp.client.sampling import sampling_handler_for
from agcore_sync.mcp.client.session import McpClient
from agcore_sync.mcp.shared.results import McpToolResult

__all__ = ["McpClient", "McpToolResult", "RestartPolicy", "ServerFeatures", "sampling_handler_for"]
