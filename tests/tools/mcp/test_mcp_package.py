"""The agcore_sync.mcp package exports its public names."""

from __future__ import annotations

import agcore_sync.mcp as mcp


def test_every_exported_name_is_importable_and_documented():
    assert set(mcp.__all__) == {
        "McpClient", "McpToolResult", "McpTool", "McpToolCaller", "Transport", "StdioTransport", "HttpTransport",
        "RestartPolicy", "ServerFeatures", "McpResource", "McpResourceTemplate", "McpResourceContents", "McpPrompt",
        "McpPromptArgument", "McpPromptResult", "sampling_handler_for", "McpResourceTool",
        "McpServer", "request_context", "BearerAuth", "ElicitResult",  # the server side (issue 22)
    }
    for name in mcp.__all__:
        assert (getattr(mcp, name).__doc__ or "").strip(), name
