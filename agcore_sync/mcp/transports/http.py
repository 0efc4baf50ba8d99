"""Streamable HTTP: the MCP transport over ``requests`` (protocol 2025-03-26 on).

Every message the client sends is one HTTP POST to the server's single MCP
endpoint, with ``Accept: application/json, text/event-stream``. What comes
back depends on the message and the server:

- a notification or a response: ``202 Accepted`` and no body (any other 2xx
  is accepted too, its body ignored);
- a request: either one JSON object (``application/json``), delivered at once,
  or an SSE stream (``text/event-stream``) that carries the server's requests
  and notifications about that request and, at last, its response.

How a POST's SSE stream is read (the choice this module makes): the POST
itself runs on the thread that called :meth:`HttpTransport.send`, up to the
response headers, bounded by ``send``'s ``timeout``, so connection failures
and HTTP error statuses surface right there. A JSON answer is read and
delivered on that same thread. An SSE answer is handed to a reader thread
``agcore-mcp-sse-<n>`` and ``send`` returns at once, so the caller goes back
to waiting on its own response slot with its own timeout, and a
server-to-client request that arrives on the stream (elicitation, sampling)
can be answered by another thread with a new POST while the stream is still
open. The reader ends when the response has arrived (it then closes the
stream), when the client sends ``notifications/cancelled`` for that request,
or when the transport is closed. A POST whose answer does not begin within
``send``'s timeout is abandoned quietly: the client's own wait times out and
it cancels the request as usual.

Resumption: when a POST stream (or the GET stream) ends before its
response, and the server gave its events ids, the reader waits the SSE
``retry`` the server announced (or :data:`DEFAULT_RECONNECT_DELAY`) through
its cancel Event, then reconnects with a GET carrying ``Last-Event-ID``, and
goes on reading from there. A stream that cannot be resumed (no event id,
the GET refused, too many empty attempts) fails its request with a JSON-RPC
error ``-32000`` delivered as that request's response.

Sessions: the ``Mcp-Session-Id`` of ``initialize``'s answer goes on every
later request, the version of :meth:`HttpTransport.set_protocol_version` as
``MCP-Protocol-Version`` (2026-07-28 adds ``Mcp-Method`` and ``Mcp-Name``).
A 404 to a request that carried the session id means the server ended the
session: ``on_closed`` gets :class:`McpConnectionError`, so the client fails
every pending call at once, and every later :meth:`~HttpTransport.send`
raises it. After ``notifications/initialized`` the transport opens the
optional GET stream for messages the server sends unprompted (a reader
thread ``agcore-mcp-get-<n>``); a 405 means the server offers none. Sending
``notifications/initialized`` returns once that GET is open or refused (at
most :data:`LISTEN_READY_TIMEOUT`): servers drop what they would send on a
GET stream that is not there yet, so the first calls must not race it.

Messages reach ``on_message`` from the sending thread (JSON answers) and
from the reader threads; the transport serialises those calls, so
``on_message`` never runs twice at once. Every reader thread is a daemon (an
interpreter exit never waits on a socket) and is owned by the transport:
:meth:`HttpTransport.close` stops it by shutting its socket down and joins
it with a bound. ``close()`` then ends the session with a DELETE (a 405
answer is fine). No ``requests`` exception leaves this module: they become
:class:`McpConnectionError`, or a JSON-RPC error answer for one request.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any, Dict, Mapping, Optional

import requests

from agcore_sync import _check, _instrument
from agcore_sync._http.body import TRANSPORT_ERRORS, BodyTooLarge, read_limited, read_text, release
from agcore_sync._http.connection import close_quietly, new_session
from agcore_sync.mcp.auth import McpOAuth
from agcore_sync.mcp.errors import McpConnectionError, McpError
from agcore_sync.mcp.shared.jsonrpc import PARSE_ERROR
from agcore_sync.mcp.transports._http_routing import message_headers
from agcore_sync.mcp.transports._http_streams import (
    CONNECT_TIMEOUT,
    CONNECTION_CLOSED,
    DEFAULT_RECONNECT_DELAY,
    GET_HEADERS_TIMEOUT,
    LISTEN_READY_TIMEOUT,
    MAX_EMPTY_RECONNECTS,
    Stream,
    StreamReaders,
    content_type,
)
from agcore_sync.mcp.transports.base import DEFAULT_MAX_MESSAGE_SIZE, ClosedHandler, MessageHandler, Transport

__all__ = [
    "HttpTransport",
    "CONNECT_TIMEOUT",
    "CONNECTION_CLOSED",
    "DEFAULT_RECONNECT_DELAY",
    "GET_HEADERS_TIMEOUT",
    "LISTEN_READY_TIMEOUT",
    "MAX_EMPTY_RECONNECTS",
]

logger = _instrument.get_logger("agcore_sync.mcp")

#: Seconds a notification or response POST may wait for its 202 when
#: ``send`` is given no timeout and the transport has none: these answers
#: are immediate, so a long wait means a broken server.
NOTIFICATION_TIMEOUT = 30.0
#: The smallest read timeout given to ``requests`` (which refuses 0).
MIN_TIMEOUT = 0.001
#: Seconds ``close()`` gives the DELETE that ends the session.
DELETE_TIMEOUT = 5.0
#: Seconds ``close()`` waits for each reader thread after shutting its socket.
#: A reader caught opening a GET ends by itself within ``CONNECT_TIMEOUT`` +
#: ``GET_HEADERS_TIMEOUT`` (it is a daemon, so it never holds up an exit).
JOIN_TIMEOUT = 5.0
#: Connections kept per host: enough for many calls in flight at once.
POOL_SIZE = 32
#: How much of an HTTP error body is kept in an error.
ERROR_BODY_LIMIT = 2000

_ACCEPT_POST = "application/json, text/event-stream"


class HttpTransport(Transport):
    """MCP Streamable HTTP over ``requests``: one POST per message, SSE answers, resumption.

    The transport belongs to one :class:`McpClient`, which calls
    :meth:`start` once, :meth:`send` from any thread and :meth:`close` once.
    It owns its reader threads (``agcore-mcp-sse-<n>`` for POST streams,
    ``agcore-mcp-get-<n>`` for the server's GET stream), daemons that
    :meth:`close` stops and joins; see the module docstring for how streams
    are read and resumed.

    Args:
        url: the server's MCP endpoint, e.g. ``http://127.0.0.1:8000/mcp``.
        headers: extra headers sent with every request (e.g. ``Authorization``);
            never logged.
        timeout: seconds a POST waits for its answer to begin when
            :meth:`send` is given no timeout; None means no limit.
        session: a ``requests.Session`` to use (proxies, auth, certificates);
            the transport then leaves it open at :meth:`close`. None makes a
            private one.
        listen: open the GET stream after ``notifications/initialized`` so
            the server can send messages outside any request.
        auth: OAuth for the server (:class:`~agcore_sync.mcp.auth.McpOAuth`):
            its ``Authorization`` header goes on every request, and a 401 or
            ``403 insufficient_scope`` to a POST runs its flow, then resends.
        max_message_size: the largest JSON answer (bytes) or SSE event (characters), 32 MiB
            by default: a larger one fails its request (:class:`~agcore_sync.tools.error.McpError`)
            or ends the GET stream; memory stays within about twice the limit.

    .. versionadded:: 0.1
    .. versionchanged:: 0.2 ``max_message_size``.
    """

    def __init__(
        self,
        url: str,
        headers: Optional[Mapping[str, str]] = None,
        *,
        timeout: Optional[float] = None,
        session: Optional[requests.Session] = None,
        listen: bool = True,
        auth: Optional[McpOAuth] = None,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    ) -> None:
        _check.http_url("HttpTransport", "url", url)
        self.max_message_size = _check.positive_int("HttpTransport", "max_message_size", max_message_size)
        _check.str_mapping("HttpTransport", "headers", headers)
        _check.timeout("HttpTransport", timeout)
        self.url = url
        self.timeout = timeout
        self.listen = listen
        #: OAuth for this server, or None (see ``agcore_sync.mcp.auth``).
        self.auth = auth
        self._extra_headers: Dict[str, str] = dict(headers or {})
        self._owns_session = session is None
        if session is None:
            session = new_session(POOL_SIZE)
        self._session = session
        self._lock = threading.Lock()
        # Re-entrant: a handler that sends a request gets its JSON answer delivered
        # on its own thread, inside its own delivery.
        self._deliver_lock = threading.RLock()
        self._on_message: Optional[MessageHandler] = None
        self._on_closed: Optional[ClosedHandler] = None
        self._closed = False
        self._lost: Optional[McpConnectionError] = None
        #: The session id the server assigned at ``initialize`` (None: no session).
        self.session_id: Optional[str] = None
        #: The negotiated protocol version, sent as ``MCP-Protocol-Version``.
        self.protocol_version: Optional[str] = None
        #: The reader threads of the current session's SSE streams.
        self._readers = self._new_readers()

    def __repr__(self) -> str:
        return f"HttpTransport(url={self.url!r})"

    # -- Transport interface ----------------------------------------------

    #: A client with a ``RestartPolicy`` may start this transport again
    #: after the session was lost (a 404 to its session id, the server
    #: gone): the new start begins a new session.
    restartable = True

    def start(self, on_message: MessageHandler, on_closed: ClosedHandler) -> None:
        """Remember the callbacks; HTTP has no connection to open before the first POST.

        Called again (a client's restart), it first stops and joins the
        readers of the old session, then forgets the session (its id, its
        loss, its GET stream), so the next ``initialize`` opens a new one.
        """
        with self._lock:
            if self._closed:
                raise McpConnectionError(f"MCP server at {self.url}: the transport is closed")
            restarted = self._on_message is not None
            readers = self._readers
        if restarted:
            readers.close(JOIN_TIMEOUT)
        with self._lock:
            if self._closed:
                raise McpConnectionError(f"MCP server at {self.url}: the transport is closed")
            if restarted:
                self._readers = self._new_readers()
                self._lost = None
                self.session_id = None
            self._on_message = on_message
            self._on_closed = on_closed

    def _new_readers(self) -> StreamReaders:
        return StreamReaders(
            self.url, self._session, self.max_message_size, listen=self.listen, headers=self._headers,
            status_error=self._status_error, deliver=self._deliver, deliver_error=self._deliver_error,
        )

    def set_protocol_version(self, version: Optional[str]) -> None:
        """Send ``MCP-Protocol-Version: version`` (and on 2026-07-28 ``Mcp-Method``) from now on; None: none."""
        self.protocol_version = version

    def send(self, message: Dict[str, Any], *, timeout: Optional[float] = None) -> None:
        """POST one message; deliver or hand over its answer (see the module docstring).

        Args:
            message: a JSON-RPC request, notification or response.
            timeout: seconds the POST may wait for its answer to begin (None:
                the transport's ``timeout``).

        Raises:
            McpConnectionError: the transport is closed, the session was lost,
                or the server cannot be reached.
            McpError: the server refused a notification or response with an
                HTTP error status (``code`` -32000 unless its body said).
        """
        self._check_open()
        method = message.get("method")
        is_request = method is not None and "id" in message
        if timeout is None:
            timeout = self.timeout
        if timeout is None and not is_request:
            timeout = NOTIFICATION_TIMEOUT
        what = f"POST {method or 'response'}"
        initialize = method == "initialize"
        headers = self._headers(_ACCEPT_POST, with_session=not initialize)
        headers.update(message_headers(message, self.protocol_version))
        body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        if timeout is not None:
            timeout = max(timeout, MIN_TIMEOUT)
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            response = self._session.post(self.url, data=body, headers=headers,
                                          timeout=(CONNECT_TIMEOUT, timeout), stream=True)
            if self.auth is not None and response.status_code in (401, 403):
                response = self._post_authorized(response, body, headers, timeout)
        except requests.Timeout as exc:
            if is_request and not isinstance(exc, requests.ConnectTimeout):
                # The answer did not begin in time: the client's own wait on
                # this request's slot times out and it cancels the request.
                logger.debug("%s to %s: no answer within %ss", what, self.url, timeout)
                return
            raise self._connection_error(f"{what} failed", exc) from exc
        except TRANSPORT_ERRORS as exc:
            raise self._connection_error(f"{what} failed", exc) from exc
        if initialize and response.status_code < 300:
            self._take_session_id(response)
        if not is_request:
            self._finish_one_way(response, what, "Mcp-Session-Id" in headers)
            if method == "notifications/initialized":
                self._readers.start_listener()
            elif method == "notifications/cancelled":
                self._stop_stream_of(message.get("params"))
            return
        self._answer_of_request(response, message["id"], what, "Mcp-Session-Id" in headers, deadline)

    def close(self) -> None:
        """Stop every reader, end the session with DELETE, release connections.

        Idempotent; bounded by :data:`JOIN_TIMEOUT` per reader and
        :data:`DELETE_TIMEOUT`. Never raises.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            readers = self._readers
        readers.close(JOIN_TIMEOUT)
        if self.session_id is not None and self._lost is None:
            self._delete_session()
        if self._owns_session:
            try:
                self._session.close()
            except Exception:  # noqa: BLE001 - nothing left to do about it
                pass

    # -- sending helpers ----------------------------------------------------

    def _check_open(self) -> None:
        if self._lost is not None:
            raise McpConnectionError(self._lost.message)
        if self._closed:
            raise McpConnectionError(f"MCP server at {self.url}: the transport is closed")
        if self._on_message is None:
            raise McpConnectionError(f"MCP server at {self.url}: send() before start()")

    def _headers(self, accept: str, *, with_session: bool = True) -> Dict[str, str]:
        headers = dict(self._extra_headers)
        if self.auth is not None:
            headers.update(self.auth.auth_headers(self._session, self.url))
        headers["Accept"] = accept
        if with_session and self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version is not None:
            headers["MCP-Protocol-Version"] = self.protocol_version
        return headers

    def _post_authorized(self, response: requests.Response, body: bytes, headers: Dict[str, str],
                         timeout: Optional[float]) -> requests.Response:
        """OAuth: let ``auth`` answer a 401/403, then resend, until it gives up (McpAuthError)."""
        attempt = 0
        while self.auth is not None and response.status_code in (401, 403):
            attempt += 1
            try:
                retry = self.auth.handle_challenge(self._session, self.url, response, attempt)
            except BaseException:
                close_quietly(response)
                raise
            if not retry:
                return response
            close_quietly(response)
            headers.update(self.auth.auth_headers(self._session, self.url))
            response = self._session.post(self.url, data=body, headers=headers,
                                          timeout=(CONNECT_TIMEOUT, timeout), stream=True)
        return response

    def _take_session_id(self, response: requests.Response) -> None:
        value = response.headers.get("Mcp-Session-Id")
        if value is not None and not (value and all(0x21 <= ord(c) <= 0x7E for c in value)):
            logger.warning("MCP server at %s sent an invalid Mcp-Session-Id; ignored", self.url)
            value = None
        self.session_id = value

    def _connection_error(self, what: str, exc: BaseException) -> McpConnectionError:
        return McpConnectionError(f"MCP server at {self.url}: {what}: {exc}")

    def _finish_one_way(self, response: requests.Response, what: str, had_session: bool) -> None:
        """Check the answer to a notification or response (202, no body)."""
        try:
            if response.status_code < 300:
                release(response)
                return
            error = self._status_error(response, what, had_session)
            raise McpError(error["message"], code=error["code"], data=error.get("data"))
        finally:
            close_quietly(response)

    def _answer_of_request(self, response: requests.Response, request_id: Any, what: str,
                           had_session: bool, deadline: Optional[float]) -> None:
        status = response.status_code
        if status >= 300:
            try:
                error = self._status_error(response, what, had_session)
            finally:
                close_quietly(response)
            self._deliver({"jsonrpc": "2.0", "id": request_id, "error": error})
            return
        kind = content_type(response)
        if status == 202 or status == 204:
            release(response)  # the answer will come on the GET stream
            return
        if kind == "text/event-stream":
            self._readers.read_answer(Stream(request_id, deadline), response)
            return
        try:
            text = read_limited(response, self.max_message_size)
        except BodyTooLarge:
            self._deliver_error(request_id, f"{what}: the answer is over max_message_size ({self.max_message_size} B)")
            return
        except TRANSPORT_ERRORS as exc:
            raise self._connection_error(f"{what}: reading the answer failed", exc) from exc
        finally:
            close_quietly(response)
        if kind != "application/json":
            self._deliver_error(request_id, f"{what}: the server answered with Content-Type {kind!r}")
            return
        try:
            decoded = json.loads(text)
        except ValueError:
            self._deliver_error(request_id, f"{what}: the server's JSON answer does not parse", code=PARSE_ERROR)
            return
        for item in decoded if isinstance(decoded, list) else [decoded]:
            self._deliver(item)

    def _status_error(self, response: requests.Response, what: str, had_session: bool) -> Dict[str, Any]:
        """Turn an HTTP error status into a JSON-RPC error object; a lost session is raised."""
        status = response.status_code
        if status == 404 and had_session:
            error = McpConnectionError(
                f"MCP server at {self.url} ended session {self.session_id} (HTTP 404 to {what}); "
                "a client with a RestartPolicy starts a new session, else connect a new client")
            self._lose(error)
            raise error
        text = read_text(response, ERROR_BODY_LIMIT)
        try:
            body = json.loads(text)
        except ValueError:
            body = None
        message = f"MCP server at {self.url} answered {what} with HTTP {status} {response.reason or ''}".rstrip()
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            inner = body["error"]
            code = inner.get("code") if isinstance(inner.get("code"), int) else CONNECTION_CLOSED
            return {"code": code, "message": f"{message}: {inner.get('message', '')}",
                    "data": inner.get("data", {"http_status": status})}
        return {"code": CONNECTION_CLOSED, "message": message, "data": {"http_status": status, "body": text}}

    def _delete_session(self) -> None:
        headers = self._headers(_ACCEPT_POST)
        try:
            response = self._session.delete(self.url, headers=headers, timeout=(CONNECT_TIMEOUT, DELETE_TIMEOUT))
        except TRANSPORT_ERRORS as exc:
            logger.debug("DELETE of MCP session at %s failed: %s", self.url, exc)
            return
        if response.status_code >= 300 and response.status_code != 405:
            logger.debug("MCP server at %s answered DELETE with HTTP %s", self.url, response.status_code)
        release(response)

    def _stop_stream_of(self, params: Any) -> None:
        """After ``notifications/cancelled``: stop reading the cancelled request's stream."""
        if not isinstance(params, dict):
            return
        self._readers.stop_request(params.get("requestId"))

    # -- delivering ---------------------------------------------------------

    def _deliver(self, message: Any) -> None:
        if not isinstance(message, dict):
            logger.warning("MCP server at %s sent a message that is not an object; skipped", self.url)
            return
        handler = self._on_message
        if handler is None:
            return
        with self._deliver_lock:
            try:
                handler(message)
            except Exception:  # noqa: BLE001 - a handler bug must not kill a reader
                logger.exception("MCP message handler failed on a message from %s", self.url)

    def _deliver_error(self, request_id: Any, message: str, *, code: int = CONNECTION_CLOSED) -> None:
        self._deliver({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})

    def _lose(self, error: McpConnectionError) -> None:
        """Mark the session gone: fail everything once, stop every reader."""
        with self._lock:
            if self._lost is not None or self._closed:
                return
            self._lost = error
            readers = self._readers
            handler = self._on_closed
        readers.stop()
        if handler is not None:
            try:
                handler(error)
            except Exception:  # noqa: BLE001 - a handler bug must not kill a reader
                logger.exception("MCP closed handler failed")
