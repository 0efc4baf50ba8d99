"""HTTP plumbing shared by the providers: the one place errors are mapped.

Everything ``requests`` or ``urllib3`` can raise is translated here into an
:class:`LlmError` (``raise ... from exc``), HTTP error statuses become the
typed :class:`ProviderError` subclasses, and the API key is masked in every
message and body. Bodies are read and connections given back by the shared
:mod:`agcore_sync._http.body`; :meth:`HttpProvider._stream` drives a pure
:class:`~agcore_sync.llm._stream_translator.StreamTranslator` over a
streamed response.

Connections: a provider that makes its own ``requests.Session`` keeps up to
:data:`~agcore_sync._http.connection.DEFAULT_POOL_SIZE` connections per
host, and every response whose body ended (a plain response read whole, a
stream past its end marker) gives its connection back, so sequential calls
and tool-loop rounds reuse one TCP (and TLS) connection.
"""

from __future__ import annotations

import email.utils
import json
import time
from typing import TYPE_CHECKING, Any, Dict, Iterator, Mapping, NoReturn, Optional

import requests
import urllib3.exceptions

from agcore_sync import _check, _instrument
from agcore_sync._http import peer_json
from agcore_sync._http.body import TRANSPORT_ERRORS, BodyReader, BodyTooLarge, read_limited
from agcore_sync._http.connection import new_session
from agcore_sync._http.masking import Masker, masked_url
from agcore_sync.llm import _response_headers
from agcore_sync.llm.cost import PricingArg
from agcore_sync.llm.errors import (
    AuthenticationError,
    LlmConnectionError,
    LlmError,
    LlmTimeoutError,
    ProviderError,
    RateLimitError,
    ResponseParseError,
    ServerError,
)
from agcore_sync.llm.provider import LlmProvider
from agcore_sync.llm.types import MessageRequest

if TYPE_CHECKING:  # pragma: no cover - the stream modules load with the first stream
    from agcore_sync._http.sse import SseEvent
    from agcore_sync.llm._stream_translator import StreamTranslator
    from agcore_sync.llm.events import StreamEvent

__all__ = ["HttpProvider", "error_for_status", "parse_retry_after", "ERROR_BODY_LIMIT", "ERROR_QUOTE_CHARS"]

logger = _instrument.get_logger("agcore_sync.llm")

#: The most bytes of an HTTP error body read; the rest is discarded (with
#: its connection), so a peer answering 500 with a huge body costs nothing.
ERROR_BODY_LIMIT = 64 * 1024

#: The most characters of an error body an error message quotes.
ERROR_QUOTE_CHARS = 2000


def parse_retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """Return a Retry-After header value in seconds (delta-seconds or HTTP-date)."""
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def error_for_status(status: int, message: str, *, retry_after: Optional[float] = None, body: Any = None) -> LlmError:
    """Return the typed error for an HTTP error ``status``."""
    if status in (401, 403):
        cls: type = AuthenticationError
    elif status == 429:
        cls = RateLimitError
    elif status >= 500:
        cls = ServerError
    else:
        cls = ProviderError
    return cls(message, status_code=status, retry_after=retry_after, body=body)


def _error_detail(body: Any) -> str:
    # Both OpenAI and Anthropic nest the human message as body["error"]["message"].
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return error["message"][:ERROR_QUOTE_CHARS]
        if isinstance(error, str):
            return error[:ERROR_QUOTE_CHARS]
    if isinstance(body, str):
        return body[:300]
    return ""


def _parses(data: str) -> bool:
    if data.strip() == "[DONE]":
        return True
    try:
        peer_json.loads(data, allow_constants=True)
    except ValueError:
        return False
    return True


class HttpProvider(LlmProvider):
    """Base of the HTTP providers: session, headers, posting, stream reading.

    Subclasses fill :meth:`_auth_headers` and the translation to and from
    their wire format (a :class:`~agcore_sync.llm._stream_translator.StreamTranslator`
    for streams). The API key is kept out of ``repr`` and masked in every
    error.

    The session: with ``session=None`` the provider makes one that keeps up
    to :data:`~agcore_sync._http.connection.DEFAULT_POOL_SIZE` (1000)
    connections per host, so that many threads sharing the provider reuse
    their connections; ``close()`` closes it. A session passed in is used as
    it is (mount an ``HTTPAdapter(pool_maxsize=N)`` on it for more threads
    than ``requests``' default 10) and is left open.
    """

    #: Name used in error messages and logs.
    provider_name = "provider"

    #: The most characters one event of a streamed answer may hold (32 MiB by
    #: default). A server that sends a longer one (a broken proxy, a hostile
    #: peer) ends the stream with :class:`ResponseParseError` instead of
    #: growing memory without bound. Set it on a provider, or a subclass, to
    #: change it.
    #:
    #: .. versionadded:: 0.2
    max_event_size: int = 32 * 1024 * 1024  # _http.sse.DEFAULT_MAX_EVENT_SIZE; not imported: the parser loads
    # with the first stream (tests/hardening/test_bounded_memory.py checks that the two agree)

    #: The most bytes of a non-streamed response body (32 MiB by default,
    #: like :attr:`max_event_size`). A longer body (or one declaring a longer
    #: ``Content-Length``) raises :class:`ResponseParseError` once that much
    #: has been read; memory stays within about twice this. Set it on a
    #: provider, or a subclass, to change it.
    max_response_size: int = 32 * 1024 * 1024

    def __init__(
        self,
        model: Optional[str],
        api_key: Optional[str],
        base_url: str,
        timeout: float,
        session: Optional[requests.Session],
        extra_headers: Optional[Mapping[str, str]],
        pricing: PricingArg,
    ) -> None:
        owner = type(self).__name__
        _check.optional_str(owner, "model", model)
        _check.optional_str(owner, "api_key", api_key)
        _check.http_url(owner, "base_url", base_url)
        _check.timeout(owner, timeout)
        _check.optional_instance(owner, "session", session, requests.Session, "a requests.Session")
        _check.str_mapping(owner, "extra_headers", extra_headers)
        self.model = model
        self._api_key = api_key or None
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._owns_session = session is None
        self.session = session if session is not None else new_session()
        self.extra_headers = dict(extra_headers or {})
        # The key, a password in base_url's userinfo, credential headers: masked alike everywhere.
        self._masker = Masker.of(self._api_key, self.base_url, self.extra_headers)
        self.pricing = pricing

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={masked_url(self.base_url)!r})"

    def close(self) -> None:
        """Close the ``requests.Session`` if this provider created it."""
        if self._owns_session:
            self.session.close()

    def _auth_headers(self) -> Dict[str, str]:
        return {}

    #: The ``Accept`` header of a streamed request (None: no such header).
    stream_accept: Optional[str] = "text/event-stream"

    def _sign(self, url: str, data: str, headers: Dict[str, str]) -> Dict[str, str]:
        """Return the headers to POST ``data`` to ``url`` with; a provider that signs requests adds its signature."""
        return headers

    def _model_for(self, request: MessageRequest) -> str:
        model = request.model or self.model
        if not model:
            raise LlmError(f"{self.provider_name}: no model given: set it on the request or the provider")
        return model

    # -- sending ------------------------------------------------------------

    def _post(self, url: str, body: Dict[str, Any], *, stream: bool) -> requests.Response:
        headers = {"Content-Type": "application/json", **self._auth_headers(), **self.extra_headers}
        if stream and self.stream_accept:
            headers["Accept"] = self.stream_accept
        data = json.dumps(body)
        headers = self._sign(url, data, headers)
        logger.debug("POST %s model=%s stream=%s", self._masker.text(masked_url(url)), body.get("model"), stream)
        _instrument.on_http_request(url)
        try:
            # Always streamed: every body is read through a bound (see _json, _status_error).
            response = self.session.post(url, data=data, headers=headers, timeout=self.timeout, stream=True)
        except Exception as exc:  # noqa: BLE001 - translated once, here
            self._raise_transport(exc)
        _response_headers.report(response.headers)  # rate-limit headers, for a RateLimitedProvider around us
        if response.status_code >= 400:
            try:
                raise self._status_error(response)
            finally:
                response.close()
        return response

    def _status_error(self, response: requests.Response) -> LlmError:
        try:
            # At most ERROR_BODY_LIMIT bytes; a body read to its end gives the connection back.
            raw = read_limited(response, ERROR_BODY_LIMIT, cut=True)
            text = self._masker.text(raw.decode(response.encoding or "utf-8", errors="replace"))
        except Exception:  # noqa: BLE001 - a body we cannot read is no reason to lose the status
            text = ""
        try:
            body: Any = peer_json.loads(text, allow_constants=True)
        except ValueError:
            body = text
        detail = _error_detail(body)
        message = f"{self.provider_name} returned HTTP {response.status_code}"
        if detail:
            message += f": {detail}"
        retry_after = parse_retry_after(response.headers.get("Retry-After"))
        return error_for_status(response.status_code, self._masker.text(message),
                                retry_after=retry_after, body=body)

    def _raise_transport(self, exc: BaseException) -> NoReturn:
        """Translate a ``requests`` / ``urllib3`` / socket exception and raise it."""
        text = self._masker.text(str(exc))
        timeouts = (requests.Timeout, urllib3.exceptions.TimeoutError, TimeoutError)
        # requests reports a read timeout while it reads the body as a
        # ConnectionError wrapping urllib3's ReadTimeoutError.
        cause = exc.args[0] if isinstance(exc, requests.ConnectionError) and exc.args else None
        if isinstance(exc, timeouts) or isinstance(cause, timeouts):
            raise LlmTimeoutError(f"{self.provider_name} timed out after {self.timeout}s: {text}") from exc
        if isinstance(exc, (requests.ConnectionError, requests.exceptions.ChunkedEncodingError,
                            urllib3.exceptions.HTTPError, OSError)):
            raise LlmConnectionError(f"{self.provider_name} connection failed: {text}") from exc
        if isinstance(exc, requests.RequestException):
            raise LlmConnectionError(f"{self.provider_name} request failed: {text}", retryable=False) from exc
        raise exc

    def _json(self, response: requests.Response) -> Any:
        """Read a whole JSON body (at most :attr:`max_response_size` bytes; it gives the connection back), parse it."""
        limit = self.max_response_size
        try:
            raw = read_limited(response, limit)
        except BodyTooLarge:
            raise ResponseParseError(
                f"{self.provider_name} sent a response body larger than {limit} bytes "
                "(the provider's max_response_size); the connection was closed") from None
        except Exception as exc:  # noqa: BLE001 - translated once, here
            self._raise_transport(exc)
        text = raw.decode(response.encoding or "utf-8", errors="replace")
        try:
            return peer_json.loads(text, allow_constants=True)
        except ValueError as exc:
            raise ResponseParseError(f"{self.provider_name} sent a body that is not JSON ({exc})",
                                     body=self._masker.text(text[:1000])) from None

    # -- reading streams ----------------------------------------------------

    def _stream(self, url: str, body: Dict[str, Any], translator: StreamTranslator) -> Iterator[StreamEvent]:
        """POST ``body`` with ``stream: true``; yield ``translator``'s events as the bytes arrive.

        The one stream loop of both providers. When the translator sees the
        end marker, the rest of the body is drained and the connection goes
        back to the pool before the last events are yielded (so a consumer
        that stops at ``MessageComplete`` without closing the generator frees
        it too); any other end (a failure, a cut, a close before the end
        marker) closes the connection. A failure after the server reported
        usage yields that usage as a ``CostUpdate`` just before the error:
        those tokens were billed.

        Raises:
            LlmError: a transport failure, a cut stream
                (:class:`LlmConnectionError`), or what the translator raises.
        """
        response = self._post(url, body, stream=True)
        reader = BodyReader(response)
        events_of = self._read_events(reader)
        try:
            try:
                for sse in events_of:
                    events = translator.feed(sse)
                    if translator.done:
                        reader.release()
                        yield from events
                        return
                    yield from events
                raise self._stream_cut()
            except LlmError:
                usage = translator.unreported_usage()
                if usage is not None:
                    yield translator.cost_update(usage)
                raise
        finally:
            events_of.close()
            reader.discard()  # does nothing after release()

    def _read_events(self, reader: BodyReader) -> Iterator[SseEvent]:
        from agcore_sync._http.sse import EventTooLarge, SseParser  # loaded with the first stream

        parser = SseParser(self.max_event_size)
        try:
            for chunk in reader:
                yield from parser.feed(chunk)
        except TRANSPORT_ERRORS as exc:
            self._raise_transport(exc)
        except EventTooLarge as exc:
            raise ResponseParseError(
                f"{self.provider_name} sent a stream event larger than {exc.limit} characters "
                "(the provider's max_event_size); the stream was closed") from None
        for event in parser.close():
            # An event without its closing blank line whose data does not
            # parse is half a chunk: the connection dropped mid-event.
            if not _parses(event.data):
                raise self._stream_cut()
            yield event

    def _stream_cut(self) -> LlmConnectionError:
        return LlmConnectionError(f"{self.provider_name} stream ended before its end marker")
