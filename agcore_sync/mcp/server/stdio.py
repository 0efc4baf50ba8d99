"""Serving one MCP client over stdin/stdout: newline-delimited JSON-RPC.

The reader runs in the thread that called :meth:`McpServer.run_stdio`;
``initialize``, notifications and responses are handled there, every
other request on the server's workers (``agcore-mcp-serve-<n>``), so a tool
waiting for a sampling answer does not stop the reader from reading it.
Writes are serialised by one lock; once stdout is closed by the client,
nothing more is written and the reader stops. When stdin ends, the session closes
(requests still running see ``cancelled``) and the reader waits, at most
:data:`DRAIN_TIMEOUT`, for them to answer.
"""

from __future__ import annotations

import sys
import threading
from concurrent.futures import wait
from typing import Any, Dict, List

from agcore_sync import _instrument
from agcore_sync.mcp.server._dispatch import serve
from agcore_sync.mcp.server._session import ServerSession
from agcore_sync.mcp.shared import jsonrpc
from agcore_sync.mcp.transports.base import DEFAULT_MAX_MESSAGE_SIZE

# The server is typed Any here: _server imports this module (lazily), so
# importing _server back, even for typing, would be a cycle.
McpServer = Any

__all__ = ["serve_stdio", "DRAIN_TIMEOUT"]

logger = _instrument.get_logger("agcore_sync.mcp.serving")

#: How long the end of stdin waits for requests still running (seconds).
DRAIN_TIMEOUT = 5.0
# Methods answered on the reader's thread: cheap, and later requests rely on them.
_INLINE = frozenset({"initialize", "ping", "logging/setLevel", "server/discover"})


def serve_stdio(server: Any, stdin: Any = None, stdout: Any = None,
                max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> None:
    """Serve ``server`` to one client on ``stdin``/``stdout`` until stdin ends (see the module docstring)."""
    reader = stdin if stdin is not None else sys.stdin.buffer
    writer = stdout if stdout is not None else sys.stdout.buffer
    lock = threading.Lock()
    broken = threading.Event()
    session = ServerSession(None, server.request_timeout)

    def sink(message: Dict[str, Any]) -> None:
        try:
            data = jsonrpc.encode(message)
        except (TypeError, ValueError) as exc:
            data = jsonrpc.encode(jsonrpc.error_response(message.get("id"), jsonrpc.INTERNAL_ERROR,
                                                         f"the answer has no JSON form: {exc}"))
        with lock:
            if broken.is_set():
                return
            try:
                writer.write(data)
                writer.flush()
            except (OSError, ValueError):  # the client closed our stdout: stop serving
                broken.set()

    def run(message: Dict[str, Any]) -> None:
        response = serve(server, session, message, sink)
        if response is not None:
            sink(response)

    session.notify_sink = sink
    server.stdio_session = session
    running: List[Any] = []
    try:
        while not broken.is_set():
            line = reader.readline(max_message_size + 1)
            if not line:
                break
            if len(line) > max_message_size and not line.endswith(b"\n"):
                _skip_rest(reader, max_message_size)
                sink(jsonrpc.error_response(None, jsonrpc.INVALID_REQUEST,
                                            f"message larger than {max_message_size} bytes"))
                continue
            if not line.strip():
                continue
            parsed = jsonrpc.parse_line(line)
            if isinstance(parsed, jsonrpc.ParseFailure):
                sink(jsonrpc.error_response(None, jsonrpc.PARSE_ERROR, f"Parse error: {parsed.reason}"))
                continue
            running = [f for f in running if not f.done()]
            for message in parsed if isinstance(parsed, list) else [parsed]:
                if jsonrpc.is_request(message) and message.get("method") not in _INLINE:
                    running.append(server.submit(lambda message=message: run(message)))
                else:
                    run(message)
    finally:
        session.close()
        if running:
            wait(running, timeout=DRAIN_TIMEOUT)
        server.stdio_session = None


def _skip_rest(reader: Any, chunk: int) -> None:
    """Read up to the end of an oversized line, without keeping it."""
    while True:
        part = reader.readline(chunk)
        if not part or part.endswith(b"\n"):
            return
