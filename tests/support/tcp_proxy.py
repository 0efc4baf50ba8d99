"""A TCP proxy on 127.0.0.1 whose open connections a test can drop, as a flaky network would.

``TcpProxy(port)`` forwards every connection to ``127.0.0.1:port``.
:meth:`TcpProxy.drop` shuts down every connection open at that moment (the
client sees its connection reset mid-response; new connections work);
:meth:`TcpProxy.lose_next_reply` forwards the next request that contains a
marker and then drops the connection instead of forwarding the answer (the
server did the work; the client never hears of it, as when a network fails
between the two). :meth:`TcpProxy.close` stops accepting, drops all and joins its threads.
One accept thread and one forwarding thread per connection, each waiting in
``select`` with a short timeout so a stop is seen at once.
"""

from __future__ import annotations

import itertools
import select
import socket
import threading
from typing import List, Optional, Set

#: Seconds a proxy thread waits in select before looking at the stop flag.
POLL_S = 0.1

#: How long close() waits for each thread.
JOIN_TIMEOUT = 10.0

_ids = itertools.count(1)


class TcpProxy:
    """Forward 127.0.0.1:``self.port`` to 127.0.0.1:``target_port``; ``drop()`` cuts open connections."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._pairs: Set[tuple] = set()
        self._threads: List[threading.Thread] = []
        #: How many connections drop() has cut so far.
        self.dropped = 0
        #: Set when a reply was lost by lose_next_reply().
        self.reply_lost = threading.Event()
        self._lose_after: Optional[bytes] = None
        self._start(self._accept_loop)

    def _start(self, target, *args) -> None:
        thread = threading.Thread(target=target, args=args, name=f"agcore-testproxy-{next(_ids)}", daemon=True)
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            if not select.select([self._listener], [], [], POLL_S)[0]:
                continue
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:  # the server is gone: the client sees its connection closed
                client.close()
                continue
            pair = (client, upstream)
            with self._lock:
                self._pairs.add(pair)
            self._start(self._forward, pair)

    def lose_next_reply(self, marker: bytes) -> None:
        """Forward the next request containing ``marker``, then close its connection instead of answering."""
        with self._lock:
            self._lose_after = marker
            self.reply_lost.clear()

    def _doomed(self, data: bytes) -> bool:
        """Say whether ``data`` (from a client) is the request whose reply is to be lost (once)."""
        with self._lock:
            if self._lose_after is None or self._lose_after not in data:
                return False
            self._lose_after = None
            return True

    def _forward(self, pair: tuple) -> None:
        client, upstream = pair
        other = {client: upstream, upstream: client}
        doomed = False
        try:
            while not self._stop.is_set():
                readable = select.select([client, upstream], [], [], POLL_S)[0]
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    if sock is upstream and doomed:  # the server answered: lose it, and the connection
                        self.reply_lost.set()
                        return
                    if sock is client and self._doomed(data):
                        doomed = True
                    other[sock].sendall(data)
        except OSError:
            return  # dropped, or a peer reset
        finally:
            with self._lock:
                self._pairs.discard(pair)
            for sock in pair:
                sock.close()

    def drop(self) -> int:
        """Cut every open connection (a reset for both sides); return how many."""
        with self._lock:
            pairs = list(self._pairs)
        for client, upstream in pairs:
            for sock in (client, upstream):
                try:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        self.dropped += len(pairs)
        return len(pairs)

    def close(self) -> None:
        """Stop accepting, drop every connection and join every thread."""
        self._stop.set()
        self._threads[0].join(JOIN_TIMEOUT)  # the accept thread: no new connection after this
        self.drop()
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(JOIN_TIMEOUT)
        self._listener.close()
        assert not any(thread.is_alive() for thread in threads), "a proxy thread did not stop"
