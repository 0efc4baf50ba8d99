"""Reading Streamable HTTP event streams for :class:`~agcore_sync.mcp.transports.http.HttpTransport`.

One idea: an SSE stream the server opened (a POST's answer, or the GET
stream) read on its own thread until it ends, and resumed after a cut. A
reader thread (``agcore-mcp-sse-<n>`` / ``agcore-mcp-get-<n>``, daemons)
reads the body with the shared :class:`~agcore_sync._http.body.BodyReader`
and parses bytes as they arrive with :class:`~agcore_sync._http.sse.SseParser`,
delivers each JSON-RPC message, keeps the last event id and the ``retry`` the
server announced, and after a cut waits that long through the stream's
cancel Event before a GET with ``Last-Event-ID``. Stopping a stream shuts its
socket down, which is what wakes a blocked read. A stream that ended (or
whose response has arrived, after which the server ends it) gives its
connection back to the session's pool, as the providers' streams do; a cut or
stopped one closes it.

The transport owns a :class:`StreamReaders` per session, which owns these
threads: it gets from the transport, as arguments, only what reading needs
(the URL, the ``requests`` session, the size bound, and callables for the
request headers, the error of an HTTP status and the delivery of messages).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Set

import requests

from agcore_sync import _instrument
from agcore_sync._http.body import READ_TIMEOUTS, TRANSPORT_ERRORS, BodyReader
from agcore_sync._http.connection import abort, close_quietly, socket_of
from agcore_sync._http.sse import EventTooLarge, SseEvent, SseParser
from agcore_sync.mcp.errors import McpConnectionError

logger = _instrument.get_logger("agcore_sync.mcp")

#: Seconds to open a TCP connection to the server (every request).
CONNECT_TIMEOUT = 10.0
#: Seconds a GET (the server stream, or a resumption) waits for its headers.
GET_HEADERS_TIMEOUT = 10.0
#: Seconds ``notifications/initialized`` waits for the GET stream to open (or
#: be refused) before ``send`` returns; a slower server just gets it later.
LISTEN_READY_TIMEOUT = 2.0
#: Seconds to wait before reconnecting when the server announced no ``retry``.
DEFAULT_RECONNECT_DELAY = 1.0
#: Reconnections in a row that may bring no event before a stream is given up.
MAX_EMPTY_RECONNECTS = 5
#: The JSON-RPC code of the error delivered for a request whose stream was
#: lost for good (the SDKs' "connection closed" code).
CONNECTION_CLOSED = -32000

_ACCEPT_GET = "text/event-stream"
_thread_ids = itertools.count(1)



class _GiveUp(Exception):
    """A stream cannot go on; ``args[0]`` says why (already delivered if empty)."""


class Stream:
    """One SSE stream being read: a POST's answer (with its resumptions) or the GET stream."""

    def __init__(self, request_id: Any, deadline: Optional[float]) -> None:
        self.request_id = request_id
        self.deadline = deadline
        self.cancel = threading.Event()
        self.answered = False
        #: A read outlasted the request's timeout: the client has given up.
        self.timed_out = False
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
        close_quietly(response)
        return False

    def detach(self) -> None:
        """Forget the response being read (the reader closes it itself)."""
        with self._lock:
            self._response = None

    def stop(self) -> None:
        """Cancel the stream and unblock a read in progress; any thread, idempotent."""
        self.cancel.set()
        with self._lock:
            response = self._response
        if response is not None:
            abort(response)

    def expired(self) -> bool:
        """Whether the request's timeout has passed (never, without one)."""
        return self.deadline is not None and time.monotonic() >= self.deadline


def _is_response_to(message: Any, request_id: Any) -> bool:
    return (isinstance(message, dict) and "method" not in message and message.get("id") == request_id
            and ("result" in message or "error" in message))


def content_type(response: requests.Response) -> str:
    """Return the media type of ``response``, lower-cased, without parameters."""
    return response.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()


class StreamReaders:
    """The SSE reader threads of one session of an :class:`~agcore_sync.mcp.transports.http.HttpTransport`.

    Owned by the transport (a restarted transport makes a new one for the
    new session); it starts, runs, resumes and forgets reader threads, and
    :meth:`close` stops and joins them.

    Args:
        url: the server's endpoint.
        session: the transport's ``requests`` session (its connection pool).
        max_message_size: the largest SSE event accepted, in characters.
        listen: whether :meth:`start_listener` opens the GET stream.
        headers: ``headers(accept, with_session=True)``, the headers of a
            request to the server.
        status_error: ``status_error(response, what, had_session)``, the
            JSON-RPC error of an HTTP error status (raises
            :class:`~agcore_sync.tools.error.McpConnectionError` when the
            session is lost).
        deliver: ``deliver(message)`` hands one server message to the client.
        deliver_error: ``deliver_error(request_id, message, code=...)`` fails
            one request with a JSON-RPC error.
    """

    def __init__(
        self,
        url: str,
        session: requests.Session,
        max_message_size: int,
        *,
        listen: bool,
        headers: Callable[..., Dict[str, str]],
        status_error: Callable[[requests.Response, str, bool], Dict[str, Any]],
        deliver: Callable[[Any], None],
        deliver_error: Callable[..., None],
    ) -> None:
        self.url = url
        self.max_message_size = max_message_size
        self.listen = listen
        self._session = session
        self._headers = headers
        self._status_error = status_error
        self._deliver = deliver
        self._deliver_error = deliver_error
        self._lock = threading.Lock()
        #: Stopped (the transport closed, restarted or lost its session): no new reader starts.
        self._stopped = False
        self._streams: Dict[int, Stream] = {}
        self._threads: Set[threading.Thread] = set()
        self._listening = False
        # Set once the GET stream's first attempt is settled (open, refused or given up).
        self._listener_settled = threading.Event()

    def read_answer(self, stream: Stream, response: requests.Response) -> None:
        """Read a POST's SSE answer on a reader thread (resumed with GET when it drops)."""
        self._spawn("sse", self._run_post_stream, stream, response)

    def stop_request(self, request_id: Any) -> None:
        """Stop reading the stream of ``request_id`` (after ``notifications/cancelled``)."""
        if request_id is None:
            return
        with self._lock:
            streams = [s for s in self._streams.values() if s.request_id == request_id]
        for stream in streams:
            stream.stop()

    def stop(self) -> None:
        """Stop every stream (their readers end by themselves) and start no new one; any thread, idempotent."""
        with self._lock:
            self._stopped = True
            streams = list(self._streams.values())
        self._listener_settled.set()
        for stream in streams:
            stream.stop()

    def close(self, join_timeout: float) -> None:
        """Stop every stream and join each reader within ``join_timeout``; idempotent, never raises."""
        self.stop()
        with self._lock:
            threads = list(self._threads)
        current = threading.current_thread()
        for thread in threads:
            if thread is not current:
                thread.join(join_timeout)
                if thread.is_alive():
                    logger.warning("MCP HTTP reader %s did not stop within %ss", thread.name, join_timeout)

    def _spawn(self, role: str, target: Any, stream: Stream, response: Optional[requests.Response]) -> None:
        thread = threading.Thread(target=self._reader_main, args=(target, stream, response),
                                  name=f"agcore-mcp-{role}-{next(_thread_ids)}", daemon=True)
        with self._lock:
            if self._stopped:
                if response is not None:
                    close_quietly(response)
                if stream.request_id is None:
                    self._listener_settled.set()
                return
            self._streams[id(stream)] = stream
            self._threads.add(thread)
        thread.start()

    def _reader_main(self, target: Any, stream: Stream, response: Optional[requests.Response]) -> None:
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

    def start_listener(self) -> None:
        """Open the GET stream and wait (bounded) until it is open or refused.

        Waiting matters: a server drops what it sends outside a request while
        no GET stream is open, so a request made right after the handshake
        (one whose handling makes the server ask the client something) would
        otherwise race the stream and could lose that message.
        """
        with self._lock:
            if not self.listen or self._listening:
                return
            self._listening = True
        self._spawn("get", self._run_get_stream, Stream(None, None), None)
        if not self._listener_settled.wait(LISTEN_READY_TIMEOUT):
            logger.debug("MCP server at %s: GET stream not open after %ss; going on", self.url, LISTEN_READY_TIMEOUT)

    def _run_post_stream(self, stream: Stream, response: requests.Response) -> None:
        """Read a POST's SSE answer until its response, resuming it with GET when it drops."""
        empty = 0
        while True:
            try:
                got_events = self._pump(stream, response)
            except _GiveUp as give_up:  # not resumed: the same event would come again
                if not stream.cancel.is_set():
                    self._deliver_error(stream.request_id, f"MCP server at {self.url}: {give_up.args[0]}")
                return
            if stream.answered or stream.cancel.is_set() or stream.timed_out or stream.expired():
                return  # answered, cancelled, or the client's own wait has timed out
            empty = 0 if got_events else empty + 1
            try:
                if not stream.last_event_id:
                    raise _GiveUp(f"the server closed the SSE stream of request {stream.request_id!r} before "
                                  "its response and gave no event id to resume from")
                response = self._reconnect(stream, empty)
            except _GiveUp as give_up:
                if give_up.args and give_up.args[0] and not stream.cancel.is_set():
                    self._deliver_error(stream.request_id, f"MCP server at {self.url}: {give_up.args[0]}")
                return
            if response is None:
                return

    def _run_get_stream(self, stream: Stream, response: Optional[requests.Response]) -> None:
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
            finally:
                self._listener_settled.set()
            first = False
            if response is None:
                return
            try:
                got_events = self._pump(stream, response)
            except _GiveUp as give_up:
                logger.warning("MCP server at %s: GET stream ends: %s", self.url, give_up.args[0])
                return
            response = None
            empty = 0 if got_events else empty + 1

    def _reconnect(self, stream: Stream, empty: int, *, first: bool = False) -> Optional[requests.Response]:
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
            except TRANSPORT_ERRORS as exc:
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
                close_quietly(response)
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
                    close_quietly(response)
            if content_type(response) != "text/event-stream":
                close_quietly(response)
                raise _GiveUp(f"the GET answer is {content_type(response)!r}, not an event stream")
            if not stream.attach(response):
                return None
            if stream.deadline is None:
                sock = socket_of(response)
                if sock is not None:
                    sock.settimeout(None)  # a stream may be quiet for a long time
            return response

    def _pump(self, stream: Stream, response: requests.Response) -> bool:
        """Read ``response`` to its end (or the stream's answer); True if any event came.

        Raises :class:`_GiveUp` for an event larger than ``max_message_size``.
        A body that ended, or whose stream has its answer (the server ends it
        right after), gives its connection back; a cut or stopped one closes it.
        """
        if not stream.attach(response):
            return False
        reader = BodyReader(response)
        parser = SseParser(self.max_message_size)
        got_events = False
        try:
            for chunk in reader:
                for event in parser.feed(chunk):
                    got_events = True
                    if self._on_event(stream, event, reader):
                        return got_events
            for event in parser.close():
                got_events = True
                self._on_event(stream, event, reader)
        except EventTooLarge:
            raise _GiveUp(f"the server sent an SSE event larger than {self.max_message_size} characters "
                          "(the transport's max_message_size); the stream was closed") from None
        except Exception as exc:  # noqa: BLE001 - see below
            # A stopped stream fails in whatever way the shut-down socket
            # makes http.client fail; anything else than a transport error
            # on a live stream is a bug for _reader_main to report.
            if not stream.cancel.is_set() and not isinstance(exc, TRANSPORT_ERRORS):
                raise
            if isinstance(exc, READ_TIMEOUTS) and stream.deadline is not None:
                stream.timed_out = True
            if not stream.cancel.is_set():
                logger.debug("MCP server at %s: SSE stream dropped: %s", self.url, exc)
        finally:
            self._settle(stream, reader)
            stream.detach()
            if parser.last_event_id:
                stream.last_event_id = parser.last_event_id
            if parser.reconnection_time is not None:
                stream.retry_ms = parser.reconnection_time
        return got_events

    @staticmethod
    def _settle(stream: Stream, reader: BodyReader) -> None:
        """Give the connection back if the body is complete, else close it (the first call decides)."""
        # Done while the response is still attached, so stop() can cut a slow drain short.
        if (reader.ended or stream.answered) and not stream.cancel.is_set():
            reader.release()
        else:
            reader.discard()

    def _on_event(self, stream: Stream, event: SseEvent, reader: BodyReader) -> bool:
        """Deliver the messages of one event; True once the stream's answer is delivered."""
        if event.id:
            stream.last_event_id = event.id
        if event.retry is not None:
            stream.retry_ms = event.retry
        if event.event != "message" or not event.data.strip():
            return False  # a priming event (id, empty data) or a type MCP does not use
        try:
            decoded = json.loads(event.data)
        except ValueError:
            logger.warning("MCP server at %s sent an SSE event that is not JSON; skipped", self.url)
            return False
        items: List[Any] = decoded if isinstance(decoded, list) else [decoded]
        for item in items:
            if stream.request_id is not None and _is_response_to(item, stream.request_id):
                stream.answered = True
                # The server ends the stream after the answer: drain it and give
                # the connection back before the answer wakes its caller, whose
                # next request then finds the connection in the pool.
                self._settle(stream, reader)
            self._deliver(item)
        return stream.answered
