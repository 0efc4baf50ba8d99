"""What both sides of MCP speak: JSON-RPC messages, protocol versions, content, resource and prompt values, pages.

Nothing here imports from :mod:`agcore_sync.mcp.client` or
:mod:`agcore_sync.mcp.transports` (an import-linter contract in setup.cfg),
so a server can build on it too.

.. versionadded:: 0.1.0
"""
