"""The MCP client."""
