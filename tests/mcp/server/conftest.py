"""Fixtures for the MCP server tests: the demo server over stdio (a subprocess) and over HTTP (in process).

``http_server`` serves :func:`demo_server.make_server`'s WSGI app from a
threaded ``wsgiref`` server on 127.0.0.1, port 0; its teardown closes the
McpServer first (ending every stream), then stops the HTTP server and joins
its threads.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Iterator, List

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from demo_server import make_server as make_demo  # noqa: E402
from mcp_server_helpers import WsgiThreadServer  # noqa: E402

DEMO = str(HERE / "demo_server.py")


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
