"""The MCP client is composed of owned parts (its import order is an import-linter contract in setup.cfg)."""

from __future__ import annotations

from agcore_sync.mcp.client.session import McpClient


def test_the_client_composes_its_parts_instead_of_inheriting_them():
    assert McpClient.__bases__ == (object,)
