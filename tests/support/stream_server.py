"""A local HTTP server that streams scripted responses, for tests that need real sockets.

``responses`` mocks ``requests`` above the socket, so it cannot show *when*
bytes reach the caller. This server can: each scripted response is a list of
steps, and a step is either bytes (written and flushed at once) or a
``threading.Event`` the handler waits on before going on. A test that sets
the Event only after it has seen the first parsed event proves delivery is
incremental without any timing.

The ``stream_server`` fixture is registered for the whole suite through
``pytest_plugins`` in ``tests/conftest.py``: a test just names it::

    def test_something(stream_server):
        release = threading.Event()
        stream_server.add_response([b"data: 1\\n\\n", release, b"data: 2\\n\\n"])
        ...  # talk to stream_server.url

Ownership and lifecycle are those of :class:`~tests.support.http_server.LocalHttpServer`
(threads owned, named, joined with a bound by :meth:`StreamServer.stop`).
Every wait in a handler is bounded too, so a test that fails half-way costs
seconds, not a hang. Each response closes its connection (``Connection:
close``), so no handler thread lingers on a keep-alive socket.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Union

import attrs
import pytest

from tests.support.http_server import LocalHttpServer

__all__ = [
    "ABORT",
    "RecordedRequest",
    "ScriptedResponse",
    "StreamServer",
    "stream_server",
    "STEP_WAIT_TIMEOUT",
]

#: Longest a handler waits on an Event step. A test that never sets it fails
#: after this long (the connection is reset) instead of hanging.
STEP_WAIT_TIMEOUT = 5.0

#: Socket timeout of a connection: bounds reading a request a client never finishes.
CONNECTION_TIMEOUT = 10.0

_FRAMINGS = ("chunked", "close")


class _Abort:
    def __repr__(self) -> str:
        return "ABORT"


#: A step that resets the connection at that point (TCP RST, no HTTP ending):
#: the client sees a dropped connection, whatever the framing.
ABORT = _Abort()

Step = Union[bytes, threading.Event, _Abort]


@attrs.define
class ScriptedResponse:
    """One response the server sends, step by step.

    Attributes:
        steps: bytes to write and flush, ``threading.Event`` to wait on (at
            most :attr:`StreamServer.step_wait_timeout`, by default
            :data:`STEP_WAIT_TIMEOUT`), or :data:`ABORT`.
        status: the HTTP status code.
        headers: response headers; ``Content-Type`` defaults to
            ``text/event-stream``.
        framing: ``"chunked"`` (HTTP/1.1 chunked transfer-encoding, one chunk
            per bytes step) or ``"close"`` (no length; the body ends when the
            connection closes).
        hold_headers: an Event to wait on (bounded as a step) before the
            status line, for a server that accepts and then says nothing.
    """

    steps: Sequence[Step]
    status: int = 200
    headers: Mapping[str, str] = attrs.field(factory=dict)
    framing: str = attrs.field(default="chunked", validator=attrs.validators.in_(_FRAMINGS))
    hold_headers: Optional[threading.Event] = None


@attrs.define
class RecordedRequest:
    """A request the server received.

    Attributes:
        method: ``"POST"``, ``"GET"``...
        path: the request target, query string included.
        headers: the request headers, names lower-cased.
        body: the raw body.
        json: the body parsed as JSON, or None if it was empty or not JSON.
        completed: True once every step of its response was sent.
        error: why the response stopped early (a step timed out, the client
            went away, an ABORT step), or None.
    """

    method: str
    path: str
    headers: Dict[str, str]
    body: bytes
    json: Any = None
    completed: bool = False
    error: Optional[str] = None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = CONNECTION_TIMEOUT
    server: Any

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def log_message(self, format: str, *args: Any) -> None:
        """Keep the test output clean; requests are recorded instead."""

    def _serve(self) -> None:
        self.close_connection = True
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        record = RecordedRequest(
            method=self.command,
            path=self.path,
            headers={name.lower(): value for name, value in self.headers.items()},
            body=body,
            json=parsed,
        )
        owner = self.server.owner
        script = owner._next_response(record)
        try:
            if script is None:
                record.error = "no scripted response left"
                self._send_plain(500, b"stream_server: no scripted response left\n")
            else:
                self._play(script, record)
        except OSError as exc:  # the client closed its end; that is its right
            record.error = f"client went away: {exc!r}"

    def _send_plain(self, status: int, text: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(text)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(text)
        self.wfile.flush()

    def _play(self, script: ScriptedResponse, record: RecordedRequest) -> None:
        chunked = script.framing == "chunked"
        if script.hold_headers is not None and not self._wait_step(script.hold_headers, record):
            return
        self.send_response(script.status)
        names = {name.lower() for name in script.headers}
        if "content-type" not in names:
            self.send_header("Content-Type", "text/event-stream")
        for name, value in script.headers.items():
            self.send_header(name, value)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.flush()
        for step in script.steps:
            if isinstance(step, threading.Event):
                if not self._wait_step(step, record):
                    return
            elif step is ABORT:
                record.error = "aborted by the script"
                self._reset()
                return
            elif step:
                if chunked:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(step), step))
                else:
                    self.wfile.write(step)
                self.wfile.flush()
        if chunked:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        record.completed = True

    def _wait_step(self, event: threading.Event, record: RecordedRequest) -> bool:
        """Wait for ``event`` (bounded); on a timeout record why and reset the connection."""
        owner = self.server.owner
        if owner.wait(event, owner.step_wait_timeout):
            return True
        record.error = f"step Event not set within {owner.step_wait_timeout}s (or the server stopped)"
        self._reset()
        return False

    def _reset(self) -> None:
        LocalHttpServer.reset(self.connection)


class StreamServer(LocalHttpServer):
    """A streaming HTTP server on 127.0.0.1, port chosen by the OS.

    Responses are consumed in the order added, one per request; a request
    with none left gets a 500 and is still recorded. Not reusable after
    :meth:`stop`.
    """

    def __init__(self) -> None:
        super().__init__(_Handler, name="stream-server")
        self._scripts: List[ScriptedResponse] = []
        #: Every request received, in arrival order.
        self.requests: List[RecordedRequest] = []
        #: The bound on each Event step; a test of the timeout itself may lower it.
        self.step_wait_timeout = STEP_WAIT_TIMEOUT

    def add_response(
        self,
        steps: Sequence[Step],
        *,
        status: int = 200,
        headers: Optional[Mapping[str, str]] = None,
        framing: str = "chunked",
        hold_headers: Optional[threading.Event] = None,
    ) -> ScriptedResponse:
        """Queue the response for the next request that has none yet (fields as in :class:`ScriptedResponse`)."""
        script = ScriptedResponse(steps=list(steps), status=status, headers=dict(headers or {}), framing=framing,
                                  hold_headers=hold_headers)
        with self._lock:
            self._scripts.append(script)
        return script

    @property
    def errors(self) -> List[str]:
        """Return why responses stopped early, one line per affected request."""
        with self._lock:
            return [f"{r.method} {r.path}: {r.error}" for r in self.requests if r.error]

    def stop(self) -> None:
        """Stop serving, close the socket and join every thread (bounded)."""
        self.close()

    def _next_response(self, record: RecordedRequest) -> Optional[ScriptedResponse]:
        with self._lock:
            self.requests.append(record)
            return self._scripts.pop(0) if self._scripts else None


@pytest.fixture
def stream_server() -> Iterator[StreamServer]:
    """Yield a started :class:`StreamServer`; stop and join it after the test."""
    server = StreamServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()
