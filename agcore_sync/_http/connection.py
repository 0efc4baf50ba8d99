"""Sessions and sockets: the connection side of the shared HTTP layer.

One idea: the TCP connections under ``requests``. :func:`new_session` makes
the ``requests.Session`` a provider or an MCP transport owns, with a pool
big enough that threads sharing it do not make urllib3 throw connections
away ("Connection pool is full, discarding connection"). :func:`socket_of`
and :func:`abort` reach the socket under a streamed response, so another
thread can wake a reader blocked on it; :func:`close_quietly` closes a
response that may already be broken.

Nothing here knows about LLMs or MCP (this package sits above both).
"""

from __future__ import annotations

import socket
from typing import Optional

import requests
import requests.adapters

__all__ = ["DEFAULT_POOL_SIZE", "new_session", "socket_of", "abort", "close_quietly"]

#: Connections a session keeps per host. A thread holds one connection while
#: its request runs and gives it back when the body has been read, so this
#: many threads can share one session without a connection being discarded
#: (and reopened by the next request); the official OpenAI and Anthropic SDKs
#: allow 1000 connections as well. A slot costs nothing until used: the pool
#: opens a connection only when every open one is busy, so it never holds
#: more than the most requests that ran at once.
DEFAULT_POOL_SIZE = 1000


class _ClosingAdapter(requests.adapters.HTTPAdapter):
    """An ``HTTPAdapter`` whose ``close()`` closes its pooled connections then and there.

    urllib3 2.x no longer closes a pool's connections when its pool manager
    is cleared: they close when the pool object is garbage collected, and
    anything that still refers to the pool (an exception's traceback kept by
    the caller, a response object) keeps their sockets open. A provider's
    ``close()`` must free them at once, so this adapter closes each pool
    first. A connection in use at that moment is closed when it comes back.
    """

    def close(self) -> None:
        """Close every pool's idle connections, then clear the pool manager."""
        pools = self.poolmanager.pools
        for key in pools.keys():
            pool = pools.get(key)
            if pool is not None:
                pool.close()
        super().close()


def new_session(pool_size: int = DEFAULT_POOL_SIZE) -> requests.Session:
    """Return a ``requests.Session`` that keeps up to ``pool_size`` connections per host.

    ``requests`` keeps 10 by default: with more threads than that on one
    session, every connection beyond the tenth is closed when its request
    ends (and urllib3 logs a warning), so the next request opens a new one.

    Args:
        pool_size: idle connections kept per host (``pool_maxsize``).

    Returns:
        A new session with one adapter of that size mounted for
        ``http://`` and ``https://``. Its ``close()`` closes every pooled
        connection at once (see :class:`_ClosingAdapter`).
    """
    session = requests.Session()
    adapter = _ClosingAdapter(pool_maxsize=pool_size)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def socket_of(response: requests.Response) -> Optional[socket.socket]:
    """Return the socket under a streamed ``response``, or None once it has none.

    A response whose connection went back to the pool (its body was read to
    the end) has none.
    """
    raw = response.raw
    connection = getattr(raw, "connection", None) or getattr(raw, "_connection", None)
    sock = getattr(connection, "sock", None)
    if sock is None:  # older urllib3: reach the socket through http.client's file
        buffered = getattr(getattr(raw, "_fp", None), "fp", None)
        sock = getattr(getattr(buffered, "raw", None), "_sock", None)
    return sock if isinstance(sock, socket.socket) else None


def abort(response: requests.Response) -> None:
    """Unblock the thread reading ``response`` by shutting its socket down; any thread.

    Closing the response from another thread instead would race with the
    reader inside ``http.client`` (and ``close()`` alone does not wake a
    blocked ``recv``); after a shutdown the reader sees the end of input,
    fails or ends, and closes the response itself. The connection is then
    never reused. A response with no socket left is just closed.
    """
    sock = socket_of(response)
    if sock is None:
        close_quietly(response)
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def close_quietly(response: requests.Response) -> None:
    """Close ``response``, ignoring the errors a broken connection raises."""
    try:
        response.close()
    except Exception:  # noqa: BLE001 - closing a broken response is best effort
        pass
