"""Fixtures for the MCP server tests: the demo server over stdio (a subprocess) and over HTTP (in process).

``http_server`` serves :func:`demo_server.make_server`'s WSGI app from a
threaded ``wsgiref`` server on 127.0.0.1, port 0; its teardown closes the
McpServer first (ending every stream), then stops the HTTP server and joins
its threads.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from socketserver import ThreadingMixIn
from typing import Any, Iterator, List
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from demo_server import make_server as make_demo  # noqa: E402

DEMO = str(HERE / "demo_server.py")
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


@pytest.fixture
def demo() -> Iterator[Any]:
    server = make_demo()
    yield server
    server.close()


@pytest.fixture
def http_server(demo: Any) -> Iterator[WsgiThreadServer]:
    served = WsgiThreadServer(demo.wsgi_app())
    yield served
    demo.close()
    served.close()


@pytest.fixture
def stdio_argv() -> List[str]:
    return [sys.executable, DEMO]
