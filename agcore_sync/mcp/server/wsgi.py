"""Streamable HTTP (MCP 2025-03-26 and later) as a WSGI application.

One endpoint (``path``): POST carries client messages, GET opens a stream
for server notifications (or resumes a stream with ``Last-Event-ID``),
DELETE ends a session. A POST of notifications or responses only gets 202.
A ``tools/call`` is answered as SSE (it may send progress, logs and
sampling or elicitation requests before its result): it runs on a server
worker while the request's thread streams its events; other requests are
answered inline with JSON. Every SSE answer starts with a comment line, so
the WSGI server sends the headers at once, then a priming event (an id, a
retry delay, no data). Each open SSE answer holds one WSGI thread: give
gunicorn ``--threads`` for the GET streams and calls you expect at once.

DNS-rebinding protection: a Host not allowed gets 421, an Origin not
allowed 403, before anything else.
"""

from __future__ import annotations

import base64
import json
import threading
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple
from urllib.parse import urlsplit

from agcore_sync import _instrument
from agcore_sync.mcp.server._dispatch import serve
from agcore_sync.mcp.server._session import ServerSession
from agcore_sync.mcp.server._streams import SSE_OPEN, EventStream, parse_event_id
from agcore_sync.mcp.shared import jsonrpc
from agcore_sync.mcp.shared import protocol as proto
from agcore_sync.mcp.transports.base import DEFAULT_MAX_MESSAGE_SIZE

# The server is typed Any here: _server imports this module (lazily), so
# importing _server back, even for typing, would be a cycle.
McpServer = Any

__all__ = ["McpWsgiApp", "LOOPBACK_HOSTS"]

logger = _instrument.get_logger("agcore_sync.mcp.serving")

#: The Host names allowed when ``allowed_hosts`` is None (any port).
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
_METADATA_ROOT = "/.well-known/oauth-protected-resource"
#: JSON-RPC error (2026-07-28): an Mcp-* header disagrees with the body.
HEADER_MISMATCH = -32020
# The body member each method mirrors in the Mcp-Name header.
_NAME_KEYS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
# Streams kept per session for resumption; the oldest finished ones go first.
_MAX_STREAMS = 200

Headers = List[Tuple[str, str]]
StartResponse = Callable[..., Any]


class McpWsgiApp:
    """The WSGI callable :meth:`McpServer.wsgi_app` returns (see the module docstring).

    Attributes:
        server: the :class:`McpServer` served.
        path: the endpoint's path.
    """

    def __init__(self, server: Any, *, path: str = "/mcp", allowed_hosts: Optional[Sequence[str]] = None,
                 allowed_origins: Optional[Sequence[str]] = None, auth: Any = None, stateless: bool = False,
                 max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> None:
        if not isinstance(path, str) or not path.startswith("/"):
            raise ValueError(f"wsgi_app: path must start with '/', got {path!r}")
        self.server = server
        self.path = path.rstrip("/") or "/"
        self.allowed_hosts = [h.lower() for h in (allowed_hosts or LOOPBACK_HOSTS)]
        self.allowed_origins = None if allowed_origins is None else [o.rstrip("/").lower() for o in allowed_origins]
        self.auth = auth
        self.stateless = bool(stateless)
        self.max_message_size = max_message_size
        self._stream_ids = _Counter()

    # -- entry ---------------------------------------------------------------------------

    def __call__(self, environ: Dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        """Answer one HTTP request (the WSGI protocol)."""
        if not self._host_allowed(environ.get("HTTP_HOST", "")):
            return _plain(start_response, "421 Misdirected Request", "Host not allowed")
        origin = environ.get("HTTP_ORIGIN")
        if origin is not None and not self._origin_allowed(origin):
            return _plain(start_response, "403 Forbidden", "Origin not allowed")
        route = environ.get("PATH_INFO", "") or "/"
        method = environ.get("REQUEST_METHOD", "GET")
        if self.auth is not None and route in (self.auth.metadata_path, _METADATA_ROOT):
            if method not in ("GET", "OPTIONS"):
                return _plain(start_response, "405 Method Not Allowed", "use GET", [("Allow", "GET")])
            status, headers, body = self.auth.metadata_response()
            start_response(status, headers + [("Content-Length", str(len(body)))])
            return [body]
        if route.rstrip("/") != self.path.rstrip("/") and not (self.path == "/" and route == "/"):
            return _plain(start_response, "404 Not Found", "Not Found")
        if self.auth is not None:
            refusal, _ = self.auth.check(environ)
            if refusal is not None:
                status, headers, body = refusal
                start_response(status, headers + [("Content-Length", str(len(body)))])
                return [body]
        if method == "POST":
            return self._post(environ, start_response)
        if method == "GET":
            return self._get(environ, start_response)
        if method == "DELETE":
            return self._delete(environ, start_response)
        return _plain(start_response, "405 Method Not Allowed", "use POST, GET or DELETE",
                      [("Allow", "GET, POST, DELETE")])

    # -- checks ----------------------------------------------------------------------------

    def _host_allowed(self, host: str) -> bool:
        host = host.strip().lower()
        if not host:
            return False
        if host in self.allowed_hosts:
            return True
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        return name in self.allowed_hosts

    def _origin_allowed(self, origin: str) -> bool:
        origin = origin.rstrip("/").lower()
        if self.allowed_origins is not None:
            return origin in self.allowed_origins
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and self._host_allowed(parts.netloc)

    # -- POST ------------------------------------------------------------------------------

    def _post(self, environ: Dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        content_type = environ.get("CONTENT_TYPE", "")
        if "application/json" not in content_type.lower():
            return _rpc_error(start_response, "415 Unsupported Media Type", jsonrpc.INVALID_REQUEST,
                              "Content-Type must be application/json")
        accept = environ.get("HTTP_ACCEPT", "*/*").lower()
        wants_sse = "text/event-stream" in accept or "*/*" in accept
        if "application/json" not in accept and not wants_sse:
            return _rpc_error(start_response, "406 Not Acceptable", jsonrpc.INVALID_REQUEST,
                              "Accept must include application/json and text/event-stream")
        body = _read_body(environ, self.max_message_size)
        if body is None:
            return _rpc_error(start_response, "413 Payload Too Large", jsonrpc.INVALID_REQUEST,
                              f"the message is larger than {self.max_message_size} bytes")
        parsed = jsonrpc.parse_line(body)
        if isinstance(parsed, jsonrpc.ParseFailure):
            return _rpc_error(start_response, "400 Bad Request", jsonrpc.PARSE_ERROR, f"Parse error: {parsed.reason}")
        messages = parsed if isinstance(parsed, list) else [parsed]
        version = environ.get("HTTP_MCP_PROTOCOL_VERSION")
        if version is not None and version not in proto.KNOWN_VERSIONS:
            return _rpc_error(start_response, "400 Bad Request", jsonrpc.INVALID_REQUEST,
                              f"Unsupported protocol version: {version} (supported: {', '.join(proto.KNOWN_VERSIONS)})")
        mismatch = _header_mismatch(environ, messages)
        if mismatch is not None:
            return _rpc_error(start_response, "400 Bad Request", HEADER_MISMATCH, mismatch)
        is_init = any(m.get("method") == "initialize" for m in messages)
        if is_init and len(messages) > 1:
            return _rpc_error(start_response, "400 Bad Request", jsonrpc.INVALID_REQUEST,
                              "initialize must be sent alone")
        headers: Headers = []
        session, refusal = self._session_for(environ, messages, is_init, version, start_response)
        if session is None:
            return refusal  # type: ignore[return-value]
        if is_init and session.id is not None:
            headers.append(("Mcp-Session-Id", session.id))
        requests = [m for m in messages if jsonrpc.is_request(m)]
        if not requests:
            for message in messages:
                serve(self.server, session, message, _drop)
            self._forget_ephemeral(session)
            start_response("202 Accepted", headers + [("Content-Length", "0")])
            return [b""]
        streamed = wants_sse and any(m.get("method") == "tools/call" for m in requests)
        if not streamed:
            responses = []
            for message in messages:
                response = serve(self.server, session, message, _drop)
                if response is not None:
                    responses.append(response)
            self._forget_ephemeral(session)
            answer: Any = responses if isinstance(parsed, list) else responses[0]
            return _json(start_response, "200 OK", answer, headers)
        return self._stream_answer(session, messages, headers, start_response)

    def _session_for(self, environ: Dict[str, Any], messages: List[Dict[str, Any]], is_init: bool,
                     version: Optional[str], start_response: StartResponse) -> Tuple[Optional[ServerSession], Any]:
        modern = version == proto.MODERN_VERSION or any(
            m.get("method") == "server/discover" or _modern_meta(m) for m in messages)
        if self.stateless or (modern and not environ.get("HTTP_MCP_SESSION_ID")):
            return self.server.open_session(stateful=False), None
        session_id = environ.get("HTTP_MCP_SESSION_ID")
        if is_init:
            session = self.server.open_session()
            if session is None:
                return None, _rpc_error(start_response, "503 Service Unavailable", jsonrpc.INTERNAL_ERROR,
                                        "too many MCP sessions; try again later", [("Retry-After", "5")])
            self._track(session)
            return session, None
        if not session_id:
            return None, _rpc_error(start_response, "400 Bad Request", jsonrpc.INVALID_REQUEST,
                                    "Bad Request: Mcp-Session-Id header is required")
        session = self.server.find_session(session_id)
        if session is None:
            return None, _rpc_error(start_response, "404 Not Found", jsonrpc.INVALID_REQUEST, "Session not found")
        return session, None

    def _forget_ephemeral(self, session: ServerSession) -> None:
        if session.id is None:
            session.close()

    def _track(self, session: ServerSession) -> None:
        """Finish the session's streams when it ends, so their readers return."""
        def end_streams() -> None:
            for stream in list(session.streams.values()):
                stream.finish()
        session.close_hooks.append(end_streams)

    def _new_stream(self, session: ServerSession, standalone: bool = False) -> EventStream:
        stream = EventStream(f"{'g' if standalone else 'p'}{self._stream_ids.next()}")
        streams = session.streams
        streams[stream.id] = stream
        if len(streams) > _MAX_STREAMS:
            for key in list(streams)[: len(streams) - _MAX_STREAMS]:
                streams.pop(key, None)
        if session.closed:
            stream.finish()
        return stream

    def _stream_answer(self, session: ServerSession, messages: List[Dict[str, Any]], headers: Headers,
                       start_response: StartResponse) -> Iterable[bytes]:
        stream = self._new_stream(session)

        def work() -> None:
            last = None
            try:
                for message in messages:
                    if last is not None:
                        stream.push(last)
                    last = serve(self.server, session, message, stream.push, stream.cut)
            finally:
                stream.finish(last)  # the last answer and the end together: a sole answer can go as JSON
                self._forget_ephemeral(session)

        try:
            self.server.submit(work)
        except RuntimeError:
            return _rpc_error(start_response, "503 Service Unavailable", jsonrpc.INTERNAL_ERROR,
                              "the server is closing")
        # A call that sends nothing before its result is answered as JSON
        # (cheaper for both sides); one that logs, reports progress, asks
        # the client or cuts its stream first is answered as SSE.
        sole = stream.sole_answer() if len(messages) == 1 else None
        if sole is not None:
            session.streams.pop(stream.id, None)
            return _json(start_response, "200 OK", sole, headers)
        start_response("200 OK", headers + _SSE_HEADERS)
        return _sse(stream, 0, _closed_flag(session))

    # -- GET and DELETE ---------------------------------------------------------------------------

    def _get(self, environ: Dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if self.stateless:
            return _plain(start_response, "405 Method Not Allowed", "stateless server: no GET stream",
                          [("Allow", "POST")])
        if "text/event-stream" not in environ.get("HTTP_ACCEPT", "").lower():
            return _rpc_error(start_response, "406 Not Acceptable", jsonrpc.INVALID_REQUEST,
                              "Accept must include text/event-stream")
        session_id = environ.get("HTTP_MCP_SESSION_ID")
        if not session_id:
            return _rpc_error(start_response, "400 Bad Request", jsonrpc.INVALID_REQUEST,
                              "Bad Request: Mcp-Session-Id header is required")
        session = self.server.find_session(session_id)
        if session is None:
            return _rpc_error(start_response, "404 Not Found", jsonrpc.INVALID_REQUEST, "Session not found")
        last = environ.get("HTTP_LAST_EVENT_ID")
        if last:
            where = parse_event_id(last)
            stream = session.streams.get(where[0]) if where is not None else None
            if stream is None:
                return _rpc_error(start_response, "404 Not Found", jsonrpc.INVALID_REQUEST, "Unknown Last-Event-ID")
            if stream.id.startswith("g"):
                session.notify_sink = stream.push
            start_response("200 OK", _SSE_HEADERS)
            return _sse(stream, where[1], _closed_flag(session), prime=False)  # type: ignore[index]
        stream = self._new_stream(session, standalone=True)
        session.notify_sink = stream.push
        start_response("200 OK", _SSE_HEADERS)
        return _sse(stream, 0, _closed_flag(session))

    def _delete(self, environ: Dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if self.stateless:
            return _plain(start_response, "405 Method Not Allowed", "stateless server: no sessions",
                          [("Allow", "POST")])
        session_id = environ.get("HTTP_MCP_SESSION_ID")
        if not session_id:
            return _rpc_error(start_response, "400 Bad Request", jsonrpc.INVALID_REQUEST,
                              "Bad Request: Mcp-Session-Id header is required")
        if not self.server.end_session(session_id):
            return _rpc_error(start_response, "404 Not Found", jsonrpc.INVALID_REQUEST, "Session not found")
        start_response("200 OK", [("Content-Length", "0")])
        return [b""]


_SSE_HEADERS: Headers = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"),
                         ("X-Accel-Buffering", "no")]


class _Counter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._n = 0

    def next(self) -> int:
        with self._lock:
            self._n += 1
            return self._n


def _closed_flag(session: ServerSession) -> threading.Event:
    flag = threading.Event()
    if session.closed:
        flag.set()
    else:
        session.close_hooks.append(flag.set)
    return flag


def _sse(stream: EventStream, after: int, closed: threading.Event, prime: bool = True) -> Iterator[bytes]:
    yield SSE_OPEN
    if prime:
        yield stream.priming()
    yield from stream.follow(after, closed)


def _header_mismatch(environ: Dict[str, Any], messages: List[Dict[str, Any]]) -> Optional[str]:
    """2026-07-28 mirrors the method and the tool, prompt or resource in headers: they must match the body."""
    method = environ.get("HTTP_MCP_METHOD")
    name = environ.get("HTTP_MCP_NAME")
    if method is None and name is None:
        return None
    if len(messages) != 1:
        return "Mcp-Method and Mcp-Name headers need a single message"
    message = messages[0]
    if method is not None and method != message.get("method"):
        return "the Mcp-Method header does not match the request body's method"
    key = _NAME_KEYS.get(str(message.get("method")))
    params = message.get("params")
    value = params.get(key) if key is not None and isinstance(params, dict) else None
    if name is not None and value is not None and _header_value(name) != value:
        return f"the Mcp-Name header does not match the request body's {key!r}"
    return None


def _header_value(raw: str) -> str:
    """Decode a header value, ``=?base64?...?=`` for values that are not plain ASCII."""
    if raw.startswith("=?base64?") and raw.endswith("?="):
        try:
            return base64.b64decode(raw[9:-2]).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return raw
    # WSGI hands headers over as latin-1 text; UTF-8 bytes sent raw come back whole.
    try:
        return raw.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return raw


def _modern_meta(message: Dict[str, Any]) -> bool:
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    # Any per-request version (a known one or not) means the sessionless revision.
    return isinstance(meta, dict) and proto.PROTOCOL_VERSION_META_KEY in meta


def _drop(message: Dict[str, Any]) -> None:
    """Drop a message: the sink of a JSON answer: notifications have nowhere to go."""


def _read_body(environ: Dict[str, Any], limit: int) -> Optional[bytes]:
    try:
        length = int(environ.get("CONTENT_LENGTH") or -1)
    except ValueError:
        length = -1
    if length > limit:
        return None
    stream = environ["wsgi.input"]
    if length >= 0:
        return stream.read(length)
    data = stream.read(limit + 1)
    return None if len(data) > limit else data


def _plain(start_response: StartResponse, status: str, text: str, extra: Optional[Headers] = None) -> List[bytes]:
    body = text.encode("utf-8")
    start_response(status, [("Content-Type", "text/plain; charset=utf-8"),
                            ("Content-Length", str(len(body)))] + (extra or []))
    return [body]


def _json(start_response: StartResponse, status: str, value: Any, extra: Optional[Headers] = None) -> List[bytes]:
    body = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).encode("utf-8")
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))] + (extra or []))
    return [body]


def _rpc_error(start_response: StartResponse, status: str, code: int, message: str,
               extra: Optional[Headers] = None) -> List[bytes]:
    return _json(start_response, status, jsonrpc.error_response(None, code, message), extra)
