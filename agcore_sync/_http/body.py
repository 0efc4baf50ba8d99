"""Reading a streamed response body as it arrives, then giving its connection back.

One idea: the body of one ``requests`` response opened with ``stream=True``,
from its first byte to the moment its connection goes back to the pool or is
closed. Both LLM providers and MCP's HTTP transport read their SSE streams
through :class:`BodyReader`, so the rules below hold for all of them.

Reading: every chunk reaches the caller as soon as it is off the socket. A
chunked body (what LLM APIs and MCP servers send) is read one HTTP chunk at a
time with ``iter_content(READ_SIZE)`` (an HTTP chunk larger than
:data:`READ_SIZE` in pieces of that size), as promptly as ``read1`` and at
a quarter of its cost per chunk; any other body with ``read1`` (urllib3 >= 2.3), which
returns whatever one network read brought, where ``iter_content(None)`` would
wait for the end of a close-delimited body.

Giving the connection back: urllib3 returns a connection to its pool only
when the body has been read to its very end (for a chunked body, the
terminating zero-length chunk); closing a response earlier closes the
connection. An SSE consumer stops at its end marker (``[DONE]``,
``message_stop``, a JSON-RPC response), a few bytes before that end, so
without help every streamed request costs a new TCP (and TLS) connection.
:meth:`BodyReader.release` reads what is left, at most :data:`DRAIN_LIMIT`
bytes and :data:`DRAIN_TIMEOUT` seconds per read, so a complete body frees
its connection for the next request; :meth:`BodyReader.discard` closes it,
for a body that was cut or abandoned part-way (its connection is unusable,
or would first need the rest of a body nobody wants). A body whose framing
ends the connection anyway (``Connection: close``, no length) is closed
without draining.

This module does no translation of errors: reads raise what ``requests``
and urllib3 raise (:data:`TRANSPORT_ERRORS`), and each caller maps them to
its own error tree.
"""

from __future__ import annotations

import socket
from typing import Iterator

import requests
import urllib3.exceptions

from agcore_sync._http.connection import close_quietly, socket_of

__all__ = [
    "READ_SIZE",
    "DRAIN_LIMIT",
    "DRAIN_TIMEOUT",
    "TRANSPORT_ERRORS",
    "READ_TIMEOUTS",
    "BodyReader",
    "BodyTooLarge",
    "read_limited",
    "read_text",
    "release",
]

#: The most one ``read1`` call takes off the socket.
READ_SIZE = 65536

#: The most :meth:`BodyReader.release` reads to reach the end of a body. What
#: follows an end marker is a few bytes (a blank line, the zero-length chunk);
#: a body with more than this left is closed, not read.
DRAIN_LIMIT = 65536

#: Seconds each read of :meth:`BodyReader.release` may wait. A server that
#: sent its end marker sends the end of the body with it or right after; one
#: that does not is not waited for (its connection is closed instead), so
#: releasing never holds a caller up longer than this.
DRAIN_TIMEOUT = 0.5

#: What ``requests`` and the layers under it raise when the network fails.
TRANSPORT_ERRORS = (requests.RequestException, urllib3.exceptions.HTTPError, OSError)

#: What a read that outlasts the socket timeout raises, depending on the layer.
READ_TIMEOUTS = (urllib3.exceptions.ReadTimeoutError, requests.Timeout, socket.timeout)


def _keeps_alive(response: requests.Response) -> bool:
    """Whether the connection can serve another request once this body ends."""
    connection = response.headers.get("Connection", "").lower()
    if "close" in connection:
        return False
    if getattr(response.raw, "version", 11) < 11 and "keep-alive" not in connection:
        return False
    # Without a length or chunked framing the body ends when the connection does.
    return bool(getattr(response.raw, "chunked", False)) or "Content-Length" in response.headers


class BodyReader:
    """The body of one streamed response: chunks as they arrive, then release or discard.

    One thread reads (iterating the reader, then calling :meth:`release` or
    :meth:`discard` once); another thread may stop it only through the
    socket (:func:`~agcore_sync._http.connection.abort`). The reader owns the
    response from construction: after :meth:`release` or :meth:`discard` it
    is closed.

    Args:
        response: a response from a request made with ``stream=True``.
    """

    def __init__(self, response: requests.Response) -> None:
        self.response = response
        self._ended = False
        self._settled = False
        self._chunks = self._read()

    def __iter__(self) -> Iterator[bytes]:
        """Return the chunk iterator (the same one every time; it resumes where it was)."""
        return self._chunks

    @property
    def ended(self) -> bool:
        """Whether the body has been read to its end."""
        return self._ended

    def _read(self) -> Iterator[bytes]:
        response = self.response
        raw = response.raw
        read1 = getattr(raw, "read1", None)
        if read1 is not None and not getattr(raw, "chunked", False):
            while True:
                chunk = read1(READ_SIZE, decode_content=True)
                if not chunk:
                    break
                yield chunk
        else:  # chunked, or urllib3 < 2.3 (no read1)
            # READ_SIZE, not None: a chunk is still yielded as soon as it
            # arrives, but one huge HTTP chunk comes in READ_SIZE pieces
            # instead of whole, so a consumer can bound its memory.
            yield from response.iter_content(chunk_size=READ_SIZE)
        self._ended = True

    def release(self) -> bool:
        """Read what is left of a complete body so its connection goes back to the pool.

        Call it when the consumer has seen the end marker. At most
        :data:`DRAIN_LIMIT` bytes are read, each read waiting at most
        :data:`DRAIN_TIMEOUT`; a body that does not end within that is
        closed with its connection. Never raises; idempotent with
        :meth:`discard` (the first call decides).

        Returns:
            True if the body ended (its connection is back in the pool).
        """
        if self._settled:
            return self._ended
        self._settled = True
        response = self.response
        if not self._ended and _keeps_alive(response):
            sock = socket_of(response)
            try:
                if sock is not None:
                    # Reset by urllib3 before the connection's next request.
                    sock.settimeout(DRAIN_TIMEOUT)
                budget = DRAIN_LIMIT
                for chunk in self._chunks:
                    budget -= len(chunk)
                    if budget < 0:
                        break
            except TRANSPORT_ERRORS:
                pass
        # After the end urllib3 has put the connection back and this only
        # closes the response object; before it, it closes the connection.
        close_quietly(response)
        return self._ended

    def discard(self) -> None:
        """Close the response and its connection without reading more; nothing after :meth:`release`.

        Never raises.
        """
        if self._settled:
            return
        self._settled = True
        close_quietly(self.response)


def release(response: requests.Response) -> bool:
    """Read a short body to its end (bounded) and close ``response``; True if it ended.

    For answers whose body nobody needs (``202 Accepted``): reading it lets
    the connection serve the next request.
    """
    return BodyReader(response).release()


class BodyTooLarge(ValueError):
    """A body is longer than the caller's limit (its connection has been closed).

    Attributes:
        limit: the limit in bytes.
    """

    def __init__(self, limit: int) -> None:
        super().__init__(f"a response body is larger than the limit of {limit} bytes")
        self.limit = limit


def read_limited(response: requests.Response, limit: int, *, cut: bool = False) -> bytes:
    """Read the body of a ``stream=True`` response, at most ``limit`` bytes, and close it.

    Memory stays within about twice ``limit`` whatever the server sends: a
    declared ``Content-Length`` above it is refused before reading, and the
    reading stops one chunk past it. A body read to its end gives its
    connection back to the pool; a refused or cut one closes it.

    Args:
        response: a response from a request made with ``stream=True``.
        limit: the most bytes kept.
        cut: return the first ``limit`` bytes of a longer body instead of
            raising (for error bodies, of which only the start is shown).

    Raises:
        BodyTooLarge: the body is longer than ``limit`` (and ``cut`` is False).
        requests.RequestException: reading failed (any of :data:`TRANSPORT_ERRORS`).
    """
    reader = BodyReader(response)
    try:
        declared = response.headers.get("Content-Length", "")
        if not cut and declared.isdigit() and int(declared) > limit:
            raise BodyTooLarge(limit)
        parts = []
        size = 0
        for chunk in reader:
            parts.append(chunk)
            size += len(chunk)
            if size > limit:
                if cut:
                    return b"".join(parts)[:limit]
                raise BodyTooLarge(limit)
        return b"".join(parts)
    finally:
        if reader.ended:
            reader.release()
        else:
            reader.discard()


def read_text(response: requests.Response, limit: int) -> str:
    """Return the first ``limit`` characters of a ``stream=True`` body (an error body), "" if unreadable.

    At most four bytes a character are read, so a huge body is never read
    whole; the response is closed. Never raises.
    """
    try:
        raw = read_limited(response, limit * 4, cut=True)
        return raw.decode(response.encoding or "utf-8", errors="replace")[:limit]
    except (*TRANSPORT_ERRORS, LookupError):
        return ""
