"""Tools: the interface, the registry, permissions, MCP."""
