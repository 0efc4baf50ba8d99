"""The seam between :class:`McpClient` and a byte channel to a server.

A transport moves whole JSON-RPC messages (dicts) both ways. It never
interprets them beyond what its wire needs (the HTTP transport reads
``Mcp-Session-Id`` and the protocol version header). The client owns the
transport: it calls :meth:`Transport.start` once (again after a loss, to
restart the server, if the transport is :attr:`~Transport.restartable`),
:meth:`Transport.send` from any thread, and :meth:`Transport.close` once at
the end.
"""

from __future__ import annotations

import abc
from typing import Any, Callable, ClassVar, Dict, Optional

from agcore_sync.mcp.errors import McpConnectionError

__all__ = ["Transport", "MessageHandler", "ClosedHandler", "DEFAULT_MAX_MESSAGE_SIZE"]

#: The largest message (bytes of one stdio line, of one JSON answer, or
#: characters of one SSE event) a transport accepts unless told otherwise:
#: far above any tool list or result a model can use, far below what
#: exhausts a machine. A larger one ends the call or the connection with an
#: :class:`~agcore_sync.tools.error.McpError`, and memory stays within about
#: twice the limit however much the server sends.
DEFAULT_MAX_MESSAGE_SIZE = 32 * 1024 * 1024

#: Called with each message the server sends, in wire order.
MessageHandler = Callable[[Dict[str, Any]], None]
#: Called once when the channel is lost for good (not after ``close()``).
ClosedHandler = Callable[[McpConnectionError], None]


class Transport(abc.ABC):
    """A two-way channel of JSON-RPC messages to one MCP server."""

    #: True if :meth:`start` may be called again after the channel was lost
    #: (``on_closed``), to open a fresh one to a new server process; what
    #: ``McpClient(restart=...)`` needs. :meth:`close` stays final.
    restartable: ClassVar[bool] = False

    @abc.abstractmethod
    def start(self, on_message: MessageHandler, on_closed: ClosedHandler) -> None:
        """Open the channel and start delivering server messages.

        ``on_message`` is called on a transport-owned thread (or, for HTTP,
        possibly on the sending thread) in the order the server sent them;
        it must not block. ``on_closed`` is called at most once per start,
        when the server goes away without ``close()``.

        Raises:
            McpConnectionError: the server could not be started or reached.
        """

    @abc.abstractmethod
    def send(self, message: Dict[str, Any], *, timeout: Optional[float] = None) -> None:
        """Send one message; safe to call from any thread.

        Raises:
            McpConnectionError: the channel is closed or broken.
        """

    def set_protocol_version(self, version: Optional[str]) -> None:  # noqa: B027 - optional hook
        """Tell the transport the version the next requests speak (HTTP sends it as headers).

        The handshake calls it before ``server/discover`` (with 2026-07-28),
        with None when it falls back to ``initialize``, and after
        ``initialize`` with the version agreed.
        """

    @abc.abstractmethod
    def close(self) -> None:
        """Stop the server or session and every thread; idempotent and bounded."""
