"""The package version, in a module of its own so that any layer can read it."""

#: The package version, also sent to MCP servers as ``clientInfo.version``.
__version__ = "0.2.0"
