"""Helpers of the MCP server tests: a WSGI app on a threaded wsgiref server, and a server on stdio pipes."""

from __future__ import annotations

import json
import os
import threading
from socketserver import ThreadingMixIn
from typing import Any, Dict
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from demo_server import make_server as make_demo

from agcore_sync.mcp.server.stdio import serve_stdio

#: Bound on joining the HTTP server's threads at teardown (seconds).
JOIN_TIMEOUT = 10.0


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    block_on_close = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


class WsgiThreadServer:
    """A WSGI app on 127.0.0.1 served by wsgiref threads; ``close()`` joins them."""

    def __init__(self, app: Any) -> None:
        self.httpd = make_server("127.0.0.1", 0, app, _ThreadingServer, _QuietHandler)
        self.port = self.httpd.server_port
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="test-wsgi-server", daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(JOIN_TIMEOUT)
        assert not self.thread.is_alive()


#: Bound on every wait for an answer or the server's end (seconds).
WAIT = 30.0


class Pipes:
    """A server on a thread of its own, fed and read through two pipes."""

    def __init__(self, server: Any = None, max_message_size: int = 1 << 20) -> None:
        self.server = server if server is not None else make_demo()
        client_in, server_out = os.pipe()
        server_in, client_out = os.pipe()
        self.to_server = os.fdopen(client_out, "wb", buffering=0)
        self.from_server = os.fdopen(client_in, "rb")
        self._server_files = (os.fdopen(server_in, "rb"), os.fdopen(server_out, "wb"))
        self.thread = threading.Thread(target=serve_stdio, args=(self.server, *self._server_files, max_message_size),
                                       name="test-stdio-server", daemon=True)
        self.thread.start()

    def send(self, message: Any) -> None:
        data = message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n"
        self.to_server.write(data)

    def read(self) -> Dict[str, Any]:
        line = self.from_server.readline()
        assert line, "the server closed stdout"
        return json.loads(line)

    def initialize(self, capabilities: Any = None) -> None:
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": capabilities or {},
            "clientInfo": {"name": "t", "version": "0"}}})
        assert self.read()["result"]["serverInfo"]["name"] == self.server.name
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def close(self) -> None:
        self.to_server.close()
        self.thread.join(WAIT)
        assert not self.thread.is_alive()
        self.server.close()
        self.from_server.close()
        for handle in self._server_files:
            handle.close()
