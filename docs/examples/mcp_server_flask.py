"""An McpServer mounted in a Flask app at /mcp, beside the app's own routes.

Serve it with gunicorn's threaded workers; each open SSE stream (a GET
stream, a tool call in progress) holds one thread, so give it enough::

    gunicorn -k gthread --threads 32 -w 1 mcp_server_flask:app

Sessions live in one process: run one worker, or make the load balancer
sticky on ``Mcp-Session-Id`` (or pass ``stateless=True``). Run as a script,
it serves on a free port and calls itself once.
"""

import threading

from flask import Flask, jsonify
from werkzeug.middleware.dispatcher import DispatcherMiddleware
from werkzeug.serving import make_server

from agcore_sync.mcp import HttpTransport, McpClient, McpServer

app = Flask(__name__)
orders = {"A-1": "shipped", "B-2": "packing"}
mcp = McpServer("orders", "1.0.0")


@app.get("/orders/<order_id>")
def order_page(order_id):
    return jsonify(id=order_id, status=orders.get(order_id, "unknown"))


@mcp.tool
def order_status(order_id: str) -> str:
    """Return the status of an order.

    Args:
        order_id: the order's id, e.g. A-1.
    """
    return orders.get(order_id, "unknown")


# Mounted under /mcp, the MCP app sees the rest of the path: serve it at "/".
app.wsgi_app = DispatcherMiddleware(app.wsgi_app, {"/mcp": mcp.wsgi_app(path="/")})

if __name__ == "__main__":
    httpd = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{httpd.server_port}/mcp"
        with McpClient("orders", HttpTransport(url), timeout=30.0) as client:
            print("order_status(A-1):", client.call_tool("order_status", {"order_id": "A-1"}).content[0]["text"])
    finally:
        mcp.close()
        httpd.shutdown()
        thread.join(10)
