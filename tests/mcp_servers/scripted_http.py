"""A stdlib HTTP server whose answers each test scripts, for the Streamable HTTP edge cases.

The SDK test server (``sdk_server.py``) is the real peer; this one exists for
what a real server does not let a test observe or force: the exact headers
a client sent, a stream cut at a chosen event, the time between a cut and
the reconnection, a 404 for a lost session, a 405 for GET and DELETE.

Usage::

    def handle(ex: Exchange) -> None:
        if ex.method == "POST" and ex.rpc_method == "initialize":
            ex.send_json({"jsonrpc": "2.0", "id": ex.body["id"], "result": {...}},
                         headers={"Mcp-Session-Id": "s-1"})
        ...

    with ScriptedServer(handle) as server:
        ...server.url..., server.requests, server.wait_for(...)

The server binds 127.0.0.1 port 0 in its constructor (so it is ready when
the constructor returns), serves on a thread ``scripted-http-serve``, and
``close()`` shuts it down and joins that thread and every handler thread.
A handler that holds a stream open must wait on ``server.stop`` (or another
Event) with a bound.
"""

from __future__ import annotations

import http.server
import json
import queue
import socket
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Set

#: The longest any handler may hold a connection open waiting for the test.
HANDLER_WAIT = 10.0
#: Seconds ``close()`` waits for the serving thread.
JOIN_TIMEOUT = 10.0


class Recorded:
    """One request as the server received it."""

    def __init__(self, method: str, path: str, headers: Dict[str, str], body: Any, at: float) -> None:
        self.method = method
        self.path = path
        #: Header names lower-cased.
        self.headers = headers
        self.body = body
        #: ``time.monotonic()`` when the request line was read.
        self.at = at

    @property
    def rpc_method(self) -> Optional[str]:
        return self.body.get("method") if isinstance(self.body, dict) else None

    def __repr__(self) -> str:
        return f"Recorded({self.method} {self.rpc_method or ''} {self.headers})"


class Exchange(Recorded):
    """A request being answered: the recorded facts plus ways to answer."""

    def __init__(self, handler: http.server.BaseHTTPRequestHandler, server: ScriptedServer,
                 recorded: Recorded) -> None:
        super().__init__(recorded.method, recorded.path, recorded.headers, recorded.body, recorded.at)
        self._handler = handler
        self.server = server

    def send_json(self, payload: Any, *, status: int = 200, headers: Optional[Dict[str, str]] = None) -> None:
        data = json.dumps(payload).encode("utf-8")
        self._start(status, {"Content-Type": "application/json", "Content-Length": str(len(data)), **(headers or {})})
        self._handler.wfile.write(data)

    def send_empty(self, status: int = 202, *, headers: Optional[Dict[str, str]] = None) -> None:
        self._start(status, {"Content-Length": "0", **(headers or {})})

    def start_sse(self, *, headers: Optional[Dict[str, str]] = None) -> None:
        """Begin an event stream; it ends when the handler returns (the connection closes)."""
        self._handler.close_connection = True
        self._start(200, {"Content-Type": "text/event-stream", "Cache-Control": "no-cache",
                          "Connection": "close", **(headers or {})})

    def sse(self, data: Any = None, *, id: Optional[str] = None, retry: Optional[int] = None,  # noqa: A002
            event: Optional[str] = None) -> None:
        """Write one SSE event; ``data`` that is not a str is sent as JSON; None sends ``data:`` empty."""
        lines = []
        if event is not None:
            lines.append(f"event: {event}")
        if id is not None:
            lines.append(f"id: {id}")
        if retry is not None:
            lines.append(f"retry: {retry}")
        text = "" if data is None else data if isinstance(data, str) else json.dumps(data)
        lines.append(f"data: {text}")
        self._handler.wfile.write(("\n".join(lines) + "\n\n").encode("utf-8"))
        self._handler.wfile.flush()

    def _start(self, status: int, headers: Dict[str, str]) -> None:
        self._handler.send_response(status)
        for name, value in headers.items():
            self._handler.send_header(name, value)
        self._handler.end_headers()
        self._handler.wfile.flush()


Handler = Callable[[Exchange], None]


class _RequestHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass

    def setup(self) -> None:
        super().setup()
        self.server.scripted._connections_opened(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.scripted._connections_closed(self.connection)

    def _handle(self) -> None:
        at = time.monotonic()
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw
        headers = {name.lower(): value for name, value in self.headers.items()}
        recorded = Recorded(self.command, self.path, headers, body, at)
        scripted = self.server.scripted
        scripted._record(recorded)
        try:
            scripted.handler(Exchange(self, scripted, recorded))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away: part of several tests

    do_GET = _handle
    do_POST = _handle
    do_DELETE = _handle


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins every handler thread
    block_on_close = True
    scripted: ScriptedServer


class ScriptedServer:
    """Serve ``handler`` on 127.0.0.1 (a free port) and record every request."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        #: Set by ``close()``; handlers holding a stream open wait on it.
        self.stop = threading.Event()
        self.requests: List[Recorded] = []
        self._arrivals: queue.Queue[Recorded] = queue.Queue()
        self._lock = threading.Lock()
        self._connections: Set[socket.socket] = set()
        self._httpd = _Server(("127.0.0.1", 0), _RequestHandler)
        self._httpd.scripted = self
        port = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{port}/mcp"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="scripted-http-serve")
        self._thread.start()

    def _connections_opened(self, sock: socket.socket) -> None:
        with self._lock:
            self._connections.add(sock)

    def _connections_closed(self, sock: socket.socket) -> None:
        with self._lock:
            self._connections.discard(sock)

    def _record(self, recorded: Recorded) -> None:
        with self._lock:
            self.requests.append(recorded)
        self._arrivals.put(recorded)

    def wait_for(self, predicate: Callable[[Recorded], bool], timeout: float = HANDLER_WAIT) -> Recorded:
        """Return the first request (past or future) that ``predicate`` accepts."""
        with self._lock:
            for recorded in self.requests:
                if predicate(recorded):
                    return recorded
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no matching request within {timeout}s; got {self.requests}")
            try:
                recorded = self._arrivals.get(timeout=remaining)
            except queue.Empty:
                continue
            if predicate(recorded):
                return recorded

    def close(self) -> None:
        self.stop.set()
        self._httpd.shutdown()
        with self._lock:
            connections = list(self._connections)
        for sock in connections:
            # A handler waiting for the next request on a kept-alive
            # connection would block server_close(); end its read.
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._httpd.server_close()
        self._thread.join(JOIN_TIMEOUT)
        assert not self._thread.is_alive(), "scripted server did not stop"

    def __enter__(self) -> ScriptedServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
