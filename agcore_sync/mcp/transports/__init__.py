"""How MCP messages travel: :class:`Transport`, and its two kinds.

:class:`StdioTransport` talks to a subprocess over its pipes,
:class:`HttpTransport` to a server over Streamable HTTP.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

from agcore_sync.mcp.transports.base import Transport
from agcore_sync.mcp.transports.http import HttpTransport
from agcore_sync.mcp.transports.stdio import StdioTransport

__all__ = ["Transport", "StdioTransport", "HttpTransport"]
