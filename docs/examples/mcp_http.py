"""An MCP server over Streamable HTTP.

``HttpTransport(url)`` talks to a server that is already running (it starts
no process). So that this example runs offline, from any folder, it first
starts the small server beside this file (``servers/mcp_demo.py``, written
with the MCP Python SDK: ``pip install "mcp>=2"``, Python 3.10+) on a free
port of 127.0.0.1 and stops it at the end; with a server of your own, keep
only the middle part.
"""

import subprocess
import sys
from pathlib import Path

from agcore_sync import HttpTransport, McpClient, ToolRegistry

DEMO_SERVER = Path(__file__).resolve().parent / "servers" / "mcp_demo.py"

# Start the server: it prints "LISTENING <url>" once its socket accepts connections.
server = subprocess.Popen([sys.executable, str(DEMO_SERVER), "http"], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True)
try:
    url = server.stdout.readline().split()[-1]      # e.g. http://127.0.0.1:49213/mcp

    # The part that matters: a client over HTTP (add headers={"Authorization": ...} if needed).
    with McpClient("sdk-http", HttpTransport(url), timeout=30.0) as client, ToolRegistry() as registry:
        print("protocol", client.negotiated_version, "| session id set:", client.transport.session_id is not None)
        registry.register_all(client.into_tools())
        print("tools:", ", ".join(sorted(registry.list_tools())))
        invocation = registry.invoke("add", {"a": 20, "b": 22})
        print("add(20, 22) =", invocation.result())
finally:
    server.terminate()
    server.wait(30)
    server.stdout.close()
