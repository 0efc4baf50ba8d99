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

The server binds 127.0.0.1 port 0 in its constructor and serves before the
constructor returns, on the suite's one server class
(:class:`tests.support.http_server.LocalHttpServer`, thread
``scripted-http``); ``close()`` shuts it down and joins that thread and
every handler thread.
A handler that holds a stream open must wait on ``server.stop`` (or another
Event) with a bound.
"""

from __future__ import annotations

import http.server
import json
import queue
import time
from typing import Any, Callable, Dict, List, Optional

from tests.support.http_server import LocalHttpServer

#: The longest any handler may hold a connection open waiting for the test.
HANDLER_WAIT = 10.0


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
    server: Any

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass

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
        scripted = self.server.owner
        scripted._record(recorded)
        try:
            scripted.handler(Exchange(self, scripted, recorded))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away: part of several tests

    do_GET = _handle
    do_POST = _handle
    do_DELETE = _handle


class ScriptedServer(LocalHttpServer):
    """Serve ``handler`` on 127.0.0.1 (a free port) and record every request.

    Serving starts in the constructor; threads are owned and joined as
    :class:`~tests.support.http_server.LocalHttpServer` says.
    """

    def __init__(self, handler: Handler) -> None:
        super().__init__(_RequestHandler, name="scripted-http", path="/mcp")
        self.handler = handler
        #: Set by ``close()``; handlers holding a stream open wait on it.
        self.stop = self.stopping
        self.requests: List[Recorded] = []
        self._arrivals: queue.Queue[Recorded] = queue.Queue()
        self.start()

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

    def __enter__(self) -> ScriptedServer:
        return self  # already serving

    def __exit__(self, *exc: Any) -> None:
        self.close()
