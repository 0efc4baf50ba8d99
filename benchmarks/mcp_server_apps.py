"""The same ``add`` tool served by McpServer and by the official SDK's MCPServer (FastMCP), for bench_mcp_server.py.

    python benchmarks/mcp_server_apps.py ours stdio
    python benchmarks/mcp_server_apps.py sdk stdio
    python benchmarks/mcp_server_apps.py sdk http      # uvicorn; prints LISTENING <url>
    gunicorn -k gthread --threads 128 -w 1 mcp_server_apps:app   # ours over HTTP
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agcore_sync.mcp import McpServer  # noqa: E402

ours = McpServer("bench", "1.0.0")


@ours.tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


#: Our server over Streamable HTTP, for gunicorn.
app = ours.wsgi_app()


def sdk_server():
    """Return the SDK's server with the same tool."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench", version="1.0.0")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    return server


def main() -> None:
    which, transport = sys.argv[1], sys.argv[2]
    if which == "ours":
        ours.run_stdio()
        return
    server = sdk_server()
    if transport == "stdio":
        server.run("stdio")
        return
    import anyio
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    uv = uvicorn.Server(uvicorn.Config(server.streamable_http_app(), log_level="warning", lifespan="on"))
    print(f"LISTENING http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    anyio.run(lambda: uv.serve(sockets=[sock]))


if __name__ == "__main__":
    main()
