"""A keep-alive HTTP/1.1 server on 127.0.0.1 that counts the connections it accepts.

``stream_server.py`` closes every connection after its response, so it cannot
show whether a client reuses one. This server keeps each connection open for
as many requests as the client sends on it, answers each request with what a
``respond`` callable returns, and records which connection carried it. A
test asserts connection counts, never times.

Usage (the repository root on ``sys.path``, as ``python -m pytest`` from the
root gives; see ``stream_server.py``)::

    from tests.support.keepalive_server import KeepAliveServer, Reply

    def respond(request):
        return Reply([b"data: 1\\n\\n", b"data: [DONE]\\n\\n"])

    with KeepAliveServer(respond) as server:
        ...  # talk to server.url
        assert server.connections == 1

A :class:`Reply` is sent with chunked framing (one HTTP chunk per step), or
with a ``Content-Length`` (``Reply.json``); ``cut=True`` stops after the
steps without the terminating chunk and shuts the connection down, which is a
body cut in the middle. A step may also be a ``threading.Event`` the handler
waits on (at most :data:`STEP_WAIT_TIMEOUT`).

Ownership: the server owns its serving thread (``keepalive-server``) and one
thread per connection (``keepalive-server-conn-<n>``), all daemons;
:meth:`KeepAliveServer.stop` stops the loop, shuts every open connection
down (which wakes a handler waiting for a next request) and joins every
thread with a bound.
"""

from __future__ import annotations

import itertools
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Mapping, Sequence, Union

import attrs

__all__ = ["KeepAliveServer", "Reply", "Request", "STEP_WAIT_TIMEOUT", "sse"]

#: Longest a handler waits on an Event step before it gives up and cuts the body.
STEP_WAIT_TIMEOUT = 10.0
#: Socket timeout of a connection: bounds waiting for a request that never comes.
CONNECTION_TIMEOUT = 30.0
#: How long stop() waits for the serving thread and each connection thread.
STOP_JOIN_TIMEOUT = 10.0
#: How long start() waits for the serving thread.
READY_TIMEOUT = 10.0
#: Pending connections the listening socket queues (the stdlib default is 5).
DEFAULT_BACKLOG = 128

Step = Union[bytes, threading.Event]


@attrs.define
class Reply:
    """What the server sends for one request.

    Attributes:
        steps: bytes written and flushed one HTTP chunk each, or Events waited on.
        status: the HTTP status.
        headers: more headers; ``Content-Type`` defaults to ``text/event-stream``.
        cut: stop after the steps without ending the body, and shut the
            connection down.
        length: send a ``Content-Length`` body (the steps joined) instead of chunks.
    """

    steps: Sequence[Step] = ()
    status: int = 200
    headers: Mapping[str, str] = attrs.field(factory=dict)
    cut: bool = False
    length: bool = False

    @classmethod
    def json(cls, value: Any, status: int = 200) -> Reply:
        """Return a JSON reply with a ``Content-Length``."""
        return cls([json.dumps(value).encode()], status=status,
                   headers={"Content-Type": "application/json"}, length=True)


@attrs.define
class Request:
    """A request the server received.

    Attributes:
        method: ``"POST"``, ``"GET"``...
        path: the request target.
        headers: names lower-cased.
        json: the body parsed as JSON, or None.
        connection: the number of the connection that carried it (from 1,
            in the order connections were accepted).
        finished: True once the server has sent all of its reply (or cut it).
    """

    method: str
    path: str
    headers: Dict[str, str]
    json: Any
    connection: int
    finished: bool = False


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = CONNECTION_TIMEOUT
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.number = self.server.owner._accepted(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.owner._closed(self.connection)

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def log_message(self, format: str, *args: Any) -> None:
        """Keep the test output clean; requests are recorded instead."""

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        request = Request(self.command, self.path, {k.lower(): v for k, v in self.headers.items()},
                          parsed, self.number)
        reply = self.server.owner._reply(request)
        try:
            self._send(reply)
        except OSError:
            self.close_connection = True  # the client went away; that is its right
        finally:
            request.finished = True

    def _send(self, reply: Reply) -> None:
        self.send_response(reply.status)
        names = {name.lower() for name in reply.headers}
        if "content-type" not in names:
            self.send_header("Content-Type", "text/event-stream")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if reply.length:
            body = b"".join(s for s in reply.steps if isinstance(s, bytes))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        for step in reply.steps:
            if isinstance(step, threading.Event):
                if not self.server.owner._wait(step):
                    reply = attrs.evolve(reply, cut=True)
                    break
            elif step:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(step), step))
                self.wfile.flush()
        if reply.cut:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # stop() joins the connection threads with a bound

    def __init__(self, owner: KeepAliveServer, backlog: int) -> None:
        self.request_queue_size = backlog
        super().__init__(("127.0.0.1", 0), _Handler)
        self.owner = owner

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(target=self.process_request_thread, args=(request, client_address),
                                  name=f"keepalive-server-conn-{next(self.owner._thread_ids)}", daemon=True)
        with self.owner._lock:
            self.owner._threads.append(thread)
        thread.start()


class KeepAliveServer:
    """A keep-alive HTTP/1.1 server that counts accepted connections (see the module docstring).

    Args:
        respond: called on a connection thread for every request; returns
            the :class:`Reply`. It may be called from many threads at once.
        backlog: the listening socket's queue of pending connections.
    """

    def __init__(self, respond: Callable[[Request], Reply], *, backlog: int = DEFAULT_BACKLOG) -> None:
        self._respond = respond
        self._lock = threading.Lock()
        self._thread_ids = itertools.count(1)
        self._threads: List[threading.Thread] = []
        self._open: Dict[int, socket.socket] = {}
        self._stopping = threading.Event()
        self._ready = threading.Event()
        self._connections = 0
        #: Every request received, in arrival order.
        self.requests: List[Request] = []
        self._httpd = _Server(self, backlog)
        #: ``http://127.0.0.1:<port>``.
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._run, name="keepalive-server", daemon=True)

    def __enter__(self) -> KeepAliveServer:
        self.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    @property
    def connections(self) -> int:
        """The number of connections accepted so far."""
        with self._lock:
            return self._connections

    def start(self) -> None:
        """Start serving; return once the serving thread runs."""
        self._thread.start()
        if not self._ready.wait(READY_TIMEOUT):
            raise RuntimeError("keep-alive server thread did not start")

    def stop(self) -> None:
        """Stop serving, shut every open connection down and join every thread (bounded)."""
        self._stopping.set()
        if self._ready.is_set():
            self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(STOP_JOIN_TIMEOUT)
        with self._lock:
            sockets = list(self._open.values())
            threads = list(self._threads)
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for thread in threads:
            thread.join(STOP_JOIN_TIMEOUT)
        stuck = [t.name for t in [self._thread, *threads] if t.is_alive()]
        if stuck:
            raise RuntimeError(f"keep-alive server threads did not stop: {stuck}")

    def _run(self) -> None:
        self._ready.set()
        self._httpd.serve_forever(poll_interval=0.05)

    def _accepted(self, sock: socket.socket) -> int:
        with self._lock:
            self._connections += 1
            self._open[id(sock)] = sock
            return self._connections

    def _closed(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.pop(id(sock), None)

    def _reply(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
        return self._respond(request)

    def _wait(self, event: threading.Event) -> bool:
        # An Event wait that also ends when the server stops.
        waited = 0.0
        while waited < STEP_WAIT_TIMEOUT and not self._stopping.is_set():
            if event.wait(0.05):
                return True
            waited += 0.05
        return event.is_set()


def sse(*events: Any) -> List[bytes]:
    """Return ``data: <json>`` SSE steps, one per event (a str is sent as it is)."""
    return [b"data: " + (e if isinstance(e, str) else json.dumps(e)).encode() + b"\n\n" for e in events]

