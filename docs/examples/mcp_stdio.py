"""An MCP server's tools over stdio, called directly and by the model.

The server started here is a small one beside this file
(``servers/mcp_demo.py``, written with the official MCP Python SDK: ``pip
install "mcp>=2"``, Python 3.10+), so the example runs offline, from any
folder. Servers from npm or PyPI start the same way; only the command
changes, e.g.::

    SERVER = ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/path/to/notes"]   # npm
    SERVER = ["uvx", "mcp-server-fetch"]                                                     # PyPI
"""

import sys
from pathlib import Path

from agcore_sync import (
    AgentSession,
    McpClient,
    MockProvider,
    StdioTransport,
    TextDelta,
    ToolExecutionCompleted,
    ToolRegistry,
)

SERVER = [sys.executable, str(Path(__file__).resolve().parent / "servers" / "mcp_demo.py")]

provider = MockProvider([
    MockProvider.tool_calls(("sdk_add", {"a": 2, "b": 3})),
    MockProvider.text("2 + 3 = 5, says the MCP server."),
])

# Entering the client starts the server and runs the handshake; leaving it
# stops the server (and any process it started) and joins the client's threads.
with McpClient("sdk", StdioTransport(SERVER[0], SERVER[1:]), timeout=30.0) as client, \
        ToolRegistry() as registry:
    print("protocol", client.negotiated_version, "| server", client.server_info.get("name"))
    print("direct call:", client.call_tool("echo", {"text": "hello"}).text)

    registry.register_all(client.into_tools(prefix="sdk_"))   # the model sees sdk_echo, sdk_add, ...
    session = AgentSession(provider, registry=registry)
    for event in session.submit_turn_stream("What is 2 + 3? Use the server."):
        if isinstance(event, ToolExecutionCompleted):
            print(f"[{event.tool_name} -> {event.result_summary}]")
        elif isinstance(event, TextDelta):
            print(event.text, end="", flush=True)
    print()
