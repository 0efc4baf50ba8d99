"""The one local HTTP server of the suite: 127.0.0.1, a port the OS picks, threads it owns and joins.

Each test server is a subclass that brings its own request handler class
(a ``BaseHTTPRequestHandler``; it reaches its server object as
``self.server.owner``):

- :class:`tests.support.stream_server.StreamServer`: scripted streaming
  responses, step by step (providers, the CLI);
- ``ChaosServer`` in ``tests/hardening/test_provider_chaos.py``: an
  OpenAI-compatible server that misbehaves by seed;
- :class:`tests.mcp_servers.scripted_http.ScriptedServer`: Streamable HTTP
  edge cases, answered by a function per test.

What this class does once for all of them: bind in the constructor (the
port is known at once), serve on a thread that reports ready through an
Event (no polling, no sleep), run each connection on a named daemon thread
(so a stuck socket never keeps the interpreter alive), and in
:meth:`close` set :attr:`stopping` (every bounded wait in a handler gives up),
shut down open connections (a handler blocked reading a kept-alive socket
returns), close the socket and join every thread with a bound, raising if
one is stuck. :meth:`wait` is the bounded, stop-aware wait handlers use;
:meth:`reset` ends a connection with a TCP RST.
"""

from __future__ import annotations

import itertools
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, List, Optional, Set, Type

__all__ = ["LocalHttpServer", "JOIN_TIMEOUT", "READY_TIMEOUT"]

#: How long close() waits for the serving thread and for each connection thread.
JOIN_TIMEOUT = 10.0

#: How long start() waits for the serving thread to report ready.
READY_TIMEOUT = 10.0

#: How often serve_forever checks for shutdown, and a stop-aware wait for the stop.
POLL_INTERVAL = 0.05


class _Httpd(ThreadingHTTPServer):
    daemon_threads = True
    # Connection threads are joined by LocalHttpServer.close() with a bound;
    # the stdlib's own join in server_close() has none.
    block_on_close = False

    def __init__(self, owner: LocalHttpServer, handler_class: Type[BaseHTTPRequestHandler]) -> None:
        super().__init__(("127.0.0.1", 0), handler_class)
        self.owner = owner

    def process_request(self, request: Any, client_address: Any) -> None:
        self.owner._track(request)
        thread = threading.Thread(target=self._serve_connection, args=(request, client_address),
                                  name=f"{self.owner.name}-conn-{next(self.owner._ids)}", daemon=True)
        with self.owner._lock:
            self.owner._connection_threads.append(thread)
        thread.start()

    def _serve_connection(self, request: Any, client_address: Any) -> None:
        try:
            self.process_request_thread(request, client_address)
        finally:
            self.owner._untrack(request)


class LocalHttpServer:
    """Serve ``handler_class`` on 127.0.0.1; see the module docstring.

    Args:
        handler_class: the request handler; ``self.server.owner`` is this object.
        name: the prefix of the thread names (``<name>`` serves,
            ``<name>-conn-<n>`` answer connections).
        path: appended to :attr:`url` (for example ``"/v1"``).

    Not reusable after :meth:`close`; closing twice does nothing.
    """

    def __init__(self, handler_class: Type[BaseHTTPRequestHandler], *, name: str, path: str = "") -> None:
        self.name = name
        #: Set by :meth:`close`; handlers holding a connection open wait on it (or use :meth:`wait`).
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._connection_threads: List[threading.Thread] = []
        self._connections: Set[socket.socket] = set()
        self._ready = threading.Event()
        self._closed = False
        self._httpd = _Httpd(self, handler_class)
        #: The port the server listens on.
        self.port: int = self._httpd.server_address[1]
        #: ``http://127.0.0.1:<port>`` followed by ``path``.
        self.url = f"http://127.0.0.1:{self.port}{path}"
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)

    def __enter__(self) -> LocalHttpServer:
        self.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def start(self) -> None:
        """Start serving; return once the serving thread runs."""
        self._thread.start()
        if not self._ready.wait(READY_TIMEOUT):
            raise RuntimeError(f"{self.name}: the serving thread did not start")

    def close(self) -> None:
        """Stop serving, end open connections, close the socket and join every thread (bounded)."""
        if self._closed:
            return
        self._closed = True
        self.stopping.set()
        if self._ready.is_set():
            self._httpd.shutdown()
        with self._lock:
            connections = list(self._connections)
        for sock in connections:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed by its handler
        self._httpd.server_close()
        if self._ready.is_set():
            self._thread.join(JOIN_TIMEOUT)
        with self._lock:
            threads = list(self._connection_threads)
        for thread in threads:
            thread.join(JOIN_TIMEOUT)
        stuck = [t.name for t in [self._thread, *threads] if t.is_alive()]
        if stuck:
            raise RuntimeError(f"{self.name}: threads did not stop: {stuck}")

    def wait(self, event: threading.Event, timeout: float) -> bool:
        """Wait up to ``timeout`` for ``event``; give up at once when the server is stopping.

        Returns:
            Whether ``event`` is set.
        """
        deadline = time.monotonic() + timeout
        while not self.stopping.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            if event.wait(min(POLL_INTERVAL, remaining)):
                return True
        return event.is_set()

    @staticmethod
    def reset(connection: socket.socket) -> None:
        """Close ``connection`` with a TCP RST: the client sees a dropped connection, not a clean end."""
        # SO_LINGER with a zero timeout makes close() send RST, even on a
        # close-delimited body; closing here also keeps socketserver from
        # sending a FIN first with shutdown().
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        connection.close()

    @property
    def connection_threads(self) -> List[threading.Thread]:
        """Return the connection threads started so far."""
        with self._lock:
            return list(self._connection_threads)

    def _serve(self) -> None:
        self._ready.set()
        self._httpd.serve_forever(poll_interval=POLL_INTERVAL)

    def _track(self, sock: Optional[socket.socket]) -> None:
        with self._lock:
            self._connections.add(sock)

    def _untrack(self, sock: Optional[socket.socket]) -> None:
        with self._lock:
            self._connections.discard(sock)
