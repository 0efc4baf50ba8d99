"""``agcore-sync mcp-serve module:server``: serve an :class:`~agcore_sync.mcp.server.McpServer` over stdio or HTTP.

Over HTTP it uses the standard library's threaded WSGI server (one thread
per connection), fit for local use; deploy behind gunicorn
(``gunicorn -k gthread --threads 32 module:app`` with ``app = server.wsgi_app()``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from socketserver import ThreadingMixIn
from typing import Any, TextIO
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

__all__ = ["add_parser", "run"]


def add_parser(commands: Any) -> Any:
    """Add the ``mcp-serve`` subcommand to ``commands`` (an argparse subparsers object); return its parser."""
    serve = commands.add_parser("mcp-serve", help="serve an McpServer over stdio or HTTP",
                                description="Serve an McpServer (module:attribute) over stdio, or over "
                                            "Streamable HTTP with --http.")
    serve.add_argument("target", help="where the server is, as module:attribute (e.g. myapp.mcp:server)")
    serve.add_argument("--http", action="store_true", help="serve Streamable HTTP instead of stdio")
    serve.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="the port to listen on (default 8000)")
    serve.add_argument("--path", default="/mcp", help="the endpoint's path (default /mcp)")
    serve.add_argument("--debug", action="store_true", help="show library logs and tracebacks")
    return serve


def load_server(target: str) -> Any:
    """Import ``module:attribute`` (the current directory first on the path) and return the McpServer.

    Raises:
        ValueError: ``target`` is not ``module:attribute``, or names no McpServer.
    """
    from agcore_sync.mcp.server import McpServer

    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"mcp-serve: expected module:attribute, got {target!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    module = importlib.import_module(module_name)
    server = getattr(module, attribute, None)
    if not isinstance(server, McpServer):
        raise ValueError(f"mcp-serve: {target} is {type(server).__name__}, not an McpServer")
    return server


class _ThreadingWsgiServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        pass


def run(args: argparse.Namespace, err: TextIO) -> int:
    """Serve until stdin ends (stdio) or Ctrl-C (HTTP); return the exit status."""
    try:
        server = load_server(args.target)
    except (ValueError, ImportError) as exc:
        err.write(f"agcore-sync: error: {exc}\n")
        return 2
    try:
        if not args.http:
            server.run_stdio()
            return 0
        httpd = make_server(args.host, args.port, server.wsgi_app(path=args.path), _ThreadingWsgiServer,
                            _QuietHandler)
        err.write(f"serving {server.name} on http://{args.host}:{httpd.server_port}{args.path}\n")
        err.flush()
        try:
            httpd.serve_forever()
        finally:
            httpd.server_close()
        return 0
    finally:
        server.close()
