"""A small MCP server to try the client on, written with the official MCP Python SDK.

Needs ``pip install "mcp>=2"`` (Python 3.10+). Two tools, ``echo`` and
``add``. Run it as::

    python docs/examples/servers/mcp_demo.py            # stdio (a client starts it)
    python docs/examples/servers/mcp_demo.py http       # Streamable HTTP on 127.0.0.1, a free port

Over HTTP it prints one line ``LISTENING http://127.0.0.1:<port>/mcp`` once
it accepts connections, then serves until it is stopped.
"""

import socket
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("demo", version="1.0.0")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def serve_http() -> None:
    import anyio
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    app = server.streamable_http_app()
    uv_server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    print(f"LISTENING http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    anyio.run(lambda: uv_server.serve(sockets=[sock]))


if __name__ == "__main__":
    if sys.argv[1:] == ["http"]:
        serve_http()
    else:
        server.run("stdio")
