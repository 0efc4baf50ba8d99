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

Sessions: the ``Mcp-Session-Id`` of the ``initialize`` response is sent on
every later request, and the version given to
:meth:`HttpTransport.set_protocol_version` as ``MCP-Protocol-Version``.
A 404 to a request that carried the session id means the server ended the
session: ``on_closed`` gets :class:`McpConnectionError`, so the client fails
every pending call at once, and every later :meth:`~HttpTransport.send`
raises it. After ``notifications/initialized`` the transport opens the
optional GET stream for messages the server sends unprompted (a reader
thread ``agcore-mcp-get-<n>``); a 405 means the server offers none.

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

import itertools
import json
import logging
import socket
import threading
import time
from typing import Any, Dict, List, Mapping, Optional, Set

import requests
import requests.adapters
import urllib3.exceptions

from agcore_sync.llm.sse import SseEvent, SseParser
from agcore_sync.tools.error import McpConnectionError, McpError
from agcore_sync.tools.mcp.jsonrpc import PARSE_ERROR
from agcore_sync.tools.mcp.transport import ClosedHandler, MessageHandler, Transport

__all__ = ["HttpTransport"]

logger = logging.getLogger("agcore_sync.mcp")

#: Seconds to open a TCP connection to the server (every request).
CONNECT_TIMEOUT = 10.0
#: Seconds a notification or response POST may wait for its 202 when
#: ``send`` is given no timeout and the transport has none: these answers
#: are immediate, so a long wait means a broken server.
NOTIFICATION_TIMEOUT = 30.0
#: Seconds a GET (the server stream, or a resumption) waits for its headers.
GET_HEADERS_TIMEOUT = 10.0
#: Seconds ``close()`` gives the DELETE that ends the session.
DELETE_TIMEOUT = 5.0
#: Seconds ``close()`` waits for each reader thread after shutting its socket.
#: A reader caught opening a GET ends by itself within ``CONNECT_TIMEOUT`` +
#: ``GET_HEADERS_TIMEOUT`` (it is a daemon, so it never holds up an exit).
JOIN_TIMEOUT = 5.0
#: Seconds to wait before reconnecting when the server announced no ``retry``.
DEFAULT_RECONNECT_DELAY = 1.0
#: Reconnections in a row that may bring no event before a stream is given up.
MAX_EMPTY_RECONNECTS = 5
#: Connections kept per host: enough for many calls in flight at once.
POOL_SIZE = 32
#: The most one ``read1`` takes off the socket (SSE bytes reach the parser per read).
READ_SIZE = 65536
#: The JSON-RPC code of the error delivered for a request whose stream was
#: lost for good (the SDKs' "connection closed" code).
CONNECTION_CLOSED = -32000
#: How much of an HTTP error body is kept in an error.
ERROR_BODY_LIMIT = 2000

_ACCEPT_POST = "application/json, text/event-stream"
_ACCEPT_GET = "text/event-stream"
_thread_ids = itertools.count(1)

_TRANSPORT_ERRORS = (requests.RequestException, urllib3.exceptions.HTTPError, OSError)


class _GiveUp(Exception):
    """A stream cannot go on; ``args[0]`` says why (already delivered if empty)."""


class _Stream:
    """One SSE stream being read: a POST's answer (with its resumptions) or the GET stream."""

    def __init__(self, request_id: Any, deadline: Optional[float]) -> None:
        self.request_id = request_id
        self.deadline = deadline
        self.cancel = threading.Event()
        self.answered = False
        self.last_event_id = ""
        self.retry_ms: Optional[int] = None
        self._lock = threading.Lock()
        self._response: Optional[requests.Response] = None

    def attach(self, response: requests.Response) -> bool:
        """Make ``response`` the one to read; False (and closed) if the stream is cancelled."""
        with self._lock:
            if not self.cancel.is_set():
                self._response = response
                return True
        _close_quietly(response)
        return False

    def detach(self) -> None:
        with self._lock:
            self._response = None

    def stop(self) -> None:
        """Cancel the stream and unblock a read in progress; any thread, idempotent."""
        self.cancel.set()
        with self._lock:
            response = self._response
        if response is not None:
            _abort(response)

    def expired(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline


def _socket_of(response: requests.Response) -> Optional[socket.socket]:
    raw = response.raw
    connection = getattr(raw, "connection", None) or getattr(raw, "_connection", None)
    sock = getattr(connection, "sock", None)
    if sock is None:  # older urllib3: reach the socket through http.client's file
        buffered = getattr(getattr(raw, "_fp", None), "fp", None)
        sock = getattr(getattr(buffered, "raw", None), "_sock", None)
    return sock if isinstance(sock, socket.socket) else None


def _abort(response: requests.Response) -> None:
    """Unblock the thread reading ``response`` by shutting its socket down.

    Closing the response from here instead would race with the reader inside
    ``http.client`` (and ``close()`` alone does not wake a blocked ``recv``);
    after a shutdown the reader sees end of input and closes the response.
    """
    sock = _socket_of(response)
    if sock is None:
        _close_quietly(response)
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _close_quietly(response: requests.Response) -> None:
    try:
        response.close()
    except Exception:  # noqa: BLE001 - closing a broken response is best effort
        pass


def _is_response_to(message: Any, request_id: Any) -> bool:
    return (isinstance(message, dict) and "method" not in message and message.get("id") == request_id
            and ("result" in message or "error" in message))


def _content_type(response: requests.Response) -> str:
    return response.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()


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

    .. versionadded:: 0.1
    """

    def __init__(
        self,
        url: str,
        headers: Optional[Mapping[str, str]] = None,
        *,
        timeout: Optional[float] = None,
        session: Optional[requests.Session] = None,
        listen: bool = True,
    ) -> None:
        if not isinstance(url, str) or not url.lower().startswith(("http://", "https://")):
            raise ValueError(f"HttpTransport needs an http:// or https:// URL, got {url!r}")
        self.url = url
        self.timeout = timeout
        self.listen = listen
        self._extra_headers: Dict[str, str] = dict(headers or {})
        self._owns_session = session is None
        if session is None:
            session = requests.Session()
            adapter = requests.adapters.HTTPAdapter(pool_connections=1, pool_maxsize=POOL_SIZE)
            session.mount("http://", adapter)
            session.mount("https://", adapter)
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
        self._streams: Dict[int, _Stream] = {}
        self._threads: Set[threading.Thread] = set()
        self._listening = False

    def __repr__(self) -> str:
        return f"HttpTransport(url={self.url!r})"

    # -- Transport interface ----------------------------------------------

    def start(self, on_message: MessageHandler, on_closed: ClosedHandler) -> None:
        """Remember the callbacks; HTTP has no connection to open before the first POST."""
        with self._lock:
            if self._closed:
                raise McpConnectionError(f"MCP server at {self.url}: the transport is closed")
            self._on_message = on_message
            self._on_closed = on_closed

    def set_protocol_version(self, version: str) -> None:
        """Send ``MCP-Protocol-Version: version`` on every later request."""
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
        headers["Content-Type"] = "application/json"
        body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            response = self._session.post(self.url, data=body, headers=headers,
                                          timeout=(CONNECT_TIMEOUT, timeout), stream=True)
        except requests.Timeout as exc:
            if is_request and not isinstance(exc, requests.ConnectTimeout):
                # The answer did not begin in time: the client's own wait on
                # this request's slot times out and it cancels the request.
                logger.debug("%s to %s: no answer within %ss", what, self.url, timeout)
                return
            raise self._connection_error(f"{what} failed", exc) from exc
        except _TRANSPORT_ERRORS as exc:
            raise self._connection_error(f"{what} failed", exc) from exc
        if initialize and response.status_code < 300:
            self._take_session_id(response)
        if not is_request:
            self._finish_one_way(response, what, "Mcp-Session-Id" in headers)
            if method == "notifications/initialized":
                self._start_listener()
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
            streams = list(self._streams.values())
            threads = list(self._threads)
        for stream in streams:
            stream.stop()
        current = threading.current_thread()
        for thread in threads:
            if thread is not current:
                thread.join(JOIN_TIMEOUT)
                if thread.is_alive():
                    logger.warning("MCP HTTP reader %s did not stop within %ss", thread.name, JOIN_TIMEOUT)
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
        headers["Accept"] = accept
        if with_session and self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version is not None:
            headers["MCP-Protocol-Version"] = self.protocol_version
        return headers

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
                return
            error = self._status_error(response, what, had_session)
            raise McpError(error["message"], code=error["code"], data=error.get("data"))
        finally:
            _close_quietly(response)

    def _answer_of_request(self, response: requests.Response, request_id: Any, what: str,
                           had_session: bool, deadline: Optional[float]) -> None:
        status = response.status_code
        if status >= 300:
            try:
                error = self._status_error(response, what, had_session)
            finally:
                _close_quietly(response)
            self._deliver({"jsonrpc": "2.0", "id": request_id, "error": error})
            return
        kind = _content_type(response)
        if status == 202 or status == 204:
            _close_quietly(response)  # the answer will come on the GET stream
            return
        if kind == "text/event-stream":
            stream = _Stream(request_id, deadline)
            self._spawn("sse", self._run_post_stream, stream, response)
            return
        try:
            text = response.content
        except _TRANSPORT_ERRORS as exc:
            raise self._connection_error(f"{what}: reading the answer failed", exc) from exc
        finally:
            _close_quietly(response)
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
                "connect a new client to start a new session")
            self._lose(error)
            raise error
        try:
            text = response.text[:ERROR_BODY_LIMIT]
        except _TRANSPORT_ERRORS:
            text = ""
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
        except _TRANSPORT_ERRORS as exc:
            logger.debug("DELETE of MCP session at %s failed: %s", self.url, exc)
            return
        if response.status_code >= 300 and response.status_code != 405:
            logger.debug("MCP server at %s answered DELETE with HTTP %s", self.url, response.status_code)
        _close_quietly(response)

    def _stop_stream_of(self, params: Any) -> None:
        """After ``notifications/cancelled``: stop reading the cancelled request's stream."""
        if not isinstance(params, dict):
            return
        request_id = params.get("requestId")
        with self._lock:
            streams = [s for s in self._streams.values() if s.request_id == request_id and request_id is not None]
        for stream in streams:
            stream.stop()

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
            streams = list(self._streams.values())
            handler = self._on_closed
        for stream in streams:
            stream.stop()
        if handler is not None:
            try:
                handler(error)
            except Exception:  # noqa: BLE001 - a handler bug must not kill a reader
                logger.exception("MCP closed handler failed")

    # -- reader threads -----------------------------------------------------

    def _spawn(self, role: str, target: Any, stream: _Stream, response: Optional[requests.Response]) -> None:
        thread = threading.Thread(target=self._reader_main, args=(target, stream, response),
                                  name=f"agcore-mcp-{role}-{next(_thread_ids)}", daemon=True)
        with self._lock:
            if self._closed or self._lost is not None:
                if response is not None:
                    _close_quietly(response)
                return
            self._streams[id(stream)] = stream
            self._threads.add(thread)
        thread.start()

    def _reader_main(self, target: Any, stream: _Stream, response: Optional[requests.Response]) -> None:
        try:
            target(stream, response)
        except Exception:  # noqa: BLE001 - delivered as a value, never lost
            logger.exception("MCP HTTP reader for %s failed", self.url)
            if stream.request_id is not None and not stream.answered and not stream.cancel.is_set():
                self._deliver_error(stream.request_id, "the MCP HTTP stream reader failed; see the log")
        finally:
            with self._lock:
                self._streams.pop(id(stream), None)
                self._threads.discard(threading.current_thread())

    def _start_listener(self) -> None:
        with self._lock:
            if not self.listen or self._listening:
                return
            self._listening = True
        self._spawn("get", self._run_get_stream, _Stream(None, None), None)

    def _run_post_stream(self, stream: _Stream, response: requests.Response) -> None:
        """Read a POST's SSE answer until its response, resuming it with GET when it drops."""
        empty = 0
        while True:
            got_events = self._pump(stream, response)
            if stream.answered or stream.cancel.is_set():
                return
            empty = 0 if got_events else empty + 1
            try:
                if not stream.last_event_id:
                    raise _GiveUp(f"the server closed the SSE stream of request {stream.request_id!r} before "
                                  "its response and gave no event id to resume from")
                if stream.expired():
                    return  # the client has given up on this request already
                response = self._reconnect(stream, empty)
            except _GiveUp as give_up:
                if give_up.args and give_up.args[0] and not stream.cancel.is_set():
                    self._deliver_error(stream.request_id, f"MCP server at {self.url}: {give_up.args[0]}")
                return
            if response is None:
                return

    def _run_get_stream(self, stream: _Stream, response: Optional[requests.Response]) -> None:
        """Read the server's GET stream for as long as the transport lives."""
        empty = 0
        first = True
        while not stream.cancel.is_set():
            try:
                response = self._reconnect(stream, empty, first=first)
            except _GiveUp as give_up:
                if give_up.args and give_up.args[0]:
                    logger.debug("MCP server at %s: GET stream ends: %s", self.url, give_up.args[0])
                return
            first = False
            if response is None:
                return
            got_events = self._pump(stream, response)
            response = None
            empty = 0 if got_events else empty + 1

    def _reconnect(self, stream: _Stream, empty: int, *, first: bool = False) -> Optional[requests.Response]:
        """Wait the retry delay, then GET with Last-Event-ID; None if cancelled meanwhile.

        Raises:
            _GiveUp: the stream cannot be resumed (the reason is its argument).
        """
        attempts = empty
        while True:
            if attempts > MAX_EMPTY_RECONNECTS:
                raise _GiveUp(f"{attempts} reconnections in a row brought no event")
            if not first:
                delay = DEFAULT_RECONNECT_DELAY if stream.retry_ms is None else stream.retry_ms / 1000.0
                if stream.cancel.wait(delay):
                    return None
            first = False
            headers = self._headers(_ACCEPT_GET)
            if stream.last_event_id:
                headers["Last-Event-ID"] = stream.last_event_id
            read_timeout = GET_HEADERS_TIMEOUT
            if stream.deadline is not None:
                read_timeout = max(0.001, min(read_timeout, stream.deadline - time.monotonic()))
            try:
                response = self._session.get(self.url, headers=headers,
                                             timeout=(CONNECT_TIMEOUT, read_timeout), stream=True)
            except _TRANSPORT_ERRORS as exc:
                if stream.cancel.is_set():
                    return None
                logger.debug("MCP server at %s: GET failed: %s", self.url, exc)
                if stream.request_id is not None and isinstance(exc, requests.ConnectionError) \
                        and not isinstance(exc, requests.Timeout):
                    # Nothing listens any more: waiting longer only delays the failure.
                    raise _GiveUp(f"cannot reach the server to resume the stream of request "
                                  f"{stream.request_id!r}: {exc}") from None
                attempts += 1
                continue
            status = response.status_code
            if status >= 500:
                _close_quietly(response)
                attempts += 1
                continue
            if status >= 300:
                try:
                    if status == 405:
                        raise _GiveUp("the server offers no GET stream (HTTP 405)")
                    error = self._status_error(response, "GET", "Mcp-Session-Id" in headers)
                    raise _GiveUp(error["message"])
                except McpConnectionError:
                    raise _GiveUp("") from None  # session lost: every pending call already failed
                finally:
                    _close_quietly(response)
            if _content_type(response) != "text/event-stream":
                _close_quietly(response)
                raise _GiveUp(f"the GET answer is {_content_type(response)!r}, not an event stream")
            if not stream.attach(response):
                return None
            if stream.deadline is None:
                sock = _socket_of(response)
                if sock is not None:
                    sock.settimeout(None)  # a stream may be quiet for a long time
            return response

    def _pump(self, stream: _Stream, response: requests.Response) -> bool:
        """Read ``response`` to its end (or the stream's answer); True if any event came."""
        if not stream.attach(response):
            return False
        parser = SseParser()
        got_events = False
        try:
            for chunk in self._chunks(response):
                for event in parser.feed(chunk):
                    got_events = True
                    self._on_event(stream, event)
                    if stream.answered:
                        return got_events
            for event in parser.close():
                got_events = True
                self._on_event(stream, event)
        except Exception as exc:  # noqa: BLE001 - see below
            # A stopped stream fails in whatever way the shut-down socket
            # makes http.client fail; anything else than a transport error
            # on a live stream is a bug for _reader_main to report.
            if not stream.cancel.is_set() and not isinstance(exc, _TRANSPORT_ERRORS):
                raise
            if not stream.cancel.is_set():
                logger.debug("MCP server at %s: SSE stream dropped: %s", self.url, exc)
        finally:
            stream.detach()
            _close_quietly(response)
            if parser.last_event_id:
                stream.last_event_id = parser.last_event_id
            if parser.reconnection_time is not None:
                stream.retry_ms = parser.reconnection_time
        return got_events

    @staticmethod
    def _chunks(response: requests.Response) -> Any:
        raw = response.raw
        read1 = getattr(raw, "read1", None)
        if read1 is None:  # urllib3 < 2.3
            yield from response.iter_content(chunk_size=None)
            return
        while True:
            chunk = read1(READ_SIZE, decode_content=True)
            if not chunk:
                return
            yield chunk

    def _on_event(self, stream: _Stream, event: SseEvent) -> None:
        if event.id:
            stream.last_event_id = event.id
        if event.retry is not None:
            stream.retry_ms = event.retry
        if event.event != "message" or not event.data.strip():
            return  # a priming event (id, empty data) or a type MCP does not use
        try:
            decoded = json.loads(event.data)
        except ValueError:
            logger.warning("MCP server at %s sent an SSE event that is not JSON; skipped", self.url)
            return
        items: List[Any] = decoded if isinstance(decoded, list) else [decoded]
        for item in items:
            if stream.request_id is not None and _is_response_to(item, stream.request_id):
                stream.answered = True
            self._deliver(item)
