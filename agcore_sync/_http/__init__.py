"""HTTP plumbing shared by the providers and MCP's HTTP transport (private)."""
