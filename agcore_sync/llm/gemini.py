"""GeminiProvider: Google's Gemini API, or Vertex AI, over ``requests``, with SSE streaming.

Gemini API: ``POST {base_url}/v1beta/models/{model}:generateContent`` (and
``:streamGenerateContent?alt=sse``) with the key in ``x-goog-api-key``.
Vertex AI (``vertex=True``): ``POST
{base_url}/v1/projects/{project}/locations/{location}/publishers/google/models/{model}:...``
with ``Authorization: Bearer <token>``, on the host google-genai picks for
the location. The model id is one URL path segment: a slash or a colon in
it is quoted, never a path of its own.

Both take the same body, built by :mod:`agcore_sync.llm._gemini_wire`
(which states the translation); plain responses are read by
:mod:`agcore_sync.llm._gemini_read`, streams by
:class:`~agcore_sync.llm._gemini_stream.GeminiStreamTranslator`. Sending,
error mapping, key masking and connection reuse are the shared
:class:`~agcore_sync.llm._http_provider.HttpProvider`'s; a 429 without a
``Retry-After`` header takes its wait from the body's ``RetryInfo``
``retryDelay``.

The provider starts no thread. A Vertex token from google-auth credentials
is refreshed under a lock when it expires, so threads sharing the provider
refresh it once.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, Dict, Iterator, Mapping, Optional
from urllib.parse import quote

import requests

from agcore_sync import _check
from agcore_sync._http.masking import Masker
from agcore_sync.llm._gemini_read import parse_response, retry_delay
from agcore_sync.llm._gemini_wire import request_body
from agcore_sync.llm._http_provider import HttpProvider
from agcore_sync.llm.cost import PricingArg
from agcore_sync.llm.errors import AuthenticationError, LlmError
from agcore_sync.llm.types import MessageRequest, MessageResponse

if TYPE_CHECKING:  # pragma: no cover - the stream events load with the first stream
    from agcore_sync.llm.events import StreamEvent

__all__ = ["GeminiProvider", "DEFAULT_BASE_URL", "API_KEY_VARIABLES", "VERTEX_SCOPE", "vertex_base_url"]

#: The Gemini API's public endpoint (the version is in the path).
DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"

#: The variables read for the Gemini API key, in google-genai's order.
API_KEY_VARIABLES = ("GOOGLE_API_KEY", "GEMINI_API_KEY")

#: The OAuth scope asked for when google-auth finds the credentials.
VERTEX_SCOPE = "https://www.googleapis.com/auth/cloud-platform"

#: Vertex AI locations served from a multi-region host.
_MULTI_REGIONS = ("us", "eu")


def vertex_base_url(location: str) -> str:
    """Return the Vertex AI host google-genai uses for ``location``."""
    if location == "global":
        return "https://aiplatform.googleapis.com"
    if location in _MULTI_REGIONS:
        return f"https://aiplatform.{location}.rep.googleapis.com"
    return f"https://{location}-aiplatform.googleapis.com"


def _segment(value: str) -> str:
    return quote(value, safe="")


class GeminiProvider(HttpProvider):
    """Google's Gemini models, through the Gemini API or Vertex AI.

    Gemini API: the key is ``api_key``, else ``GOOGLE_API_KEY``, else
    ``GEMINI_API_KEY`` (google-genai's order), sent as ``x-goog-api-key``.
    Vertex AI (``vertex=True``): ``project`` (else ``GOOGLE_CLOUD_PROJECT``)
    and ``location`` (else ``GOOGLE_CLOUD_LOCATION``, else ``"global"``);
    the token comes from ``credentials``: a callable returning a bearer
    token (called for every request), or google-auth credentials
    (refreshed when expired); None finds the application default
    credentials with google-auth (``pip install -e ".[vertex]"``), on the
    first request.

    Translation (details in :mod:`agcore_sync.llm._gemini_wire` and
    :mod:`agcore_sync.llm._gemini_read`): messages are ``contents`` (roles
    ``user`` / ``model``), tools ``functionDeclarations`` with
    ``parametersJsonSchema``, tool results ``functionResponse`` parts,
    images and PDFs ``inlineData``; a native structured output is
    ``responseMimeType: application/json`` with ``responseJsonSchema``;
    ``thinking`` is ``thinkingConfig`` (``includeThoughts`` and
    ``thinkingBudget``; ``"adaptive"`` is the dynamic budget -1),
    ``reasoning_effort`` its ``thinkingLevel``. Thought parts and every
    ``thoughtSignature`` are kept in :class:`~agcore_sync.llm.types.ThinkingBlock`
    values marked as Gemini's and go back unchanged in the next request,
    also after ``to_dict`` / ``from_dict``; other providers drop them.
    Calls without an id get a unique ``gcall_...`` id, which is not sent
    back. Stop reasons: ``MAX_TOKENS`` is LENGTH; ``SAFETY``,
    ``RECITATION``, ``BLOCKLIST``, ``PROHIBITED_CONTENT``, ``SPII`` and the
    image safety reasons are CONTENT_FILTER, as is a prompt blocked by
    ``promptFeedback.blockReason`` (an empty response, not an error).
    Usage: prompt = ``promptTokenCount`` + ``toolUsePromptTokenCount``,
    completion = ``candidatesTokenCount`` + ``thoughtsTokenCount``,
    cache read = ``cachedContentTokenCount``. ``prompt_cache`` sends
    nothing: Gemini caches repeated prefixes implicitly.

    Args:
        model: the default model, used when a request's ``model`` is None.
        api_key: the Gemini API key; None reads the variables above; ``""``
            sends none (a local server or a proxy that adds it). Never in a
            repr, log or error.
        base_url: the API root without the version; None uses the public
            endpoint (Vertex AI: the host of ``location``).
        timeout: seconds to connect and for each read.
        session: a ``requests.Session`` to use; the provider then does not
            close it.
        extra_headers: headers added to every request.
        pricing: prices for ``CostUpdate.cost_usd``; None uses the built-in
            table.
        vertex: talk to Vertex AI instead of the Gemini API.
        project: the Google Cloud project (Vertex AI).
        location: the Vertex AI location (``global``, ``us``, ``eu``,
            ``us-central1``, ...).
        credentials: Vertex AI only: a callable returning a token, or
            google-auth credentials.

    Raises:
        ValueError: no key for the Gemini API, or no project for Vertex AI
            (the message names the variable to set); a bad ``base_url`` or
            ``timeout``.
        TypeError: an argument of the wrong type.

    .. versionadded:: 0.2.0
    """

    provider_name = "Gemini"

    def __init__(
        self,
        model: Optional[str] = None,
        api_key: Optional[str] = None,
        base_url: Optional[str] = None,
        timeout: float = 60.0,
        session: Optional[requests.Session] = None,
        extra_headers: Optional[Mapping[str, str]] = None,
        *,
        pricing: PricingArg = None,
        vertex: bool = False,
        project: Optional[str] = None,
        location: Optional[str] = None,
        credentials: Any = None,
    ) -> None:
        owner = type(self).__name__
        _check.instance(owner, "vertex", vertex, bool, "True or False")
        _check.optional_str(owner, "project", project)
        _check.optional_str(owner, "location", location)
        #: True when the provider talks to Vertex AI.
        self.vertex = vertex
        #: The Google Cloud project (Vertex AI), else None.
        self.project: Optional[str] = None
        #: The Vertex AI location, else None.
        self.location: Optional[str] = None
        self._credentials = credentials
        self._token_lock = threading.Lock()
        # A stream takes its token before its translator takes the masker; the request it then
        # sends (same thread) uses that token instead of asking the credentials twice.
        self._taken = threading.local()
        if vertex:
            if api_key:
                raise ValueError(f"{owner}: vertex=True authenticates with credentials=, not api_key "
                                 "(leave api_key out)")
            self.project = project or os.environ.get("GOOGLE_CLOUD_PROJECT") or None
            if not self.project:
                raise ValueError(f"{owner}: vertex=True needs a project: pass project= or set "
                                 "GOOGLE_CLOUD_PROJECT")
            self.location = location or os.environ.get("GOOGLE_CLOUD_LOCATION") or "global"
            if credentials is not None and not callable(credentials) and not hasattr(credentials, "refresh"):
                raise TypeError(f"{owner}: credentials must be a callable returning a token or google-auth "
                                f"credentials, got {type(credentials).__name__}")
            base_url = base_url or vertex_base_url(self.location)
            self.provider_name = "Vertex AI"
        else:
            if credentials is not None:
                raise ValueError(f"{owner}: credentials= is for vertex=True; the Gemini API takes api_key")
            if api_key is None:
                api_key = next((os.environ[v] for v in API_KEY_VARIABLES if os.environ.get(v)), None)
            keyless = api_key is None and base_url is None
            base_url = DEFAULT_BASE_URL if base_url is None else base_url
        super().__init__(model, api_key, base_url, timeout, session, extra_headers, pricing)  # checks each argument
        if not vertex and keyless:
            raise ValueError(f"{owner}: no API key: pass api_key= or set GOOGLE_API_KEY (or GEMINI_API_KEY)")

    @property
    def telemetry_name(self) -> str:
        """The ``gen_ai.provider.name`` of this provider: ``gcp.gemini`` or ``gcp.vertex_ai``."""
        return "gcp.vertex_ai" if self.vertex else "gcp.gemini"

    def url(self, model: str, *, stream: bool) -> str:
        """Return the endpoint of ``model``: ``...:generateContent`` or ``...:streamGenerateContent?alt=sse``."""
        method = "streamGenerateContent?alt=sse" if stream else "generateContent"
        if self.vertex:
            return (f"{self.base_url}/v1/projects/{_segment(self.project or '')}/locations/"
                    f"{_segment(self.location or '')}/publishers/google/models/{_segment(model)}:{method}")
        return f"{self.base_url}/v1beta/models/{_segment(model)}:{method}"

    # -- auth -----------------------------------------------------------------

    def _auth_headers(self) -> Dict[str, str]:
        if not self.vertex:
            return {"x-goog-api-key": self._api_key} if self._api_key else {}
        token = getattr(self._taken, "token", None) or self._take_token()
        self._taken.token = None
        return {"Authorization": f"Bearer {token}"}

    def _take_token(self) -> str:
        token = self._token()
        self._masker = Masker(token)  # the token is the secret to keep out of errors now
        return token

    def _token(self) -> str:
        credentials = self._credentials
        if callable(credentials) and not hasattr(credentials, "refresh"):
            token = credentials()
            if not isinstance(token, str) or not token:
                raise AuthenticationError(f"{self.provider_name}: the credentials callable returned no token")
            return token
        with self._token_lock:
            if credentials is None:
                credentials = self._credentials = _default_credentials()
            if not getattr(credentials, "valid", False) or not getattr(credentials, "token", None):
                _refresh(credentials, self.provider_name)
            return str(credentials.token)

    # -- calls ----------------------------------------------------------------

    def _status_error(self, response: requests.Response) -> LlmError:
        error = super()._status_error(response)
        if error.retry_after is None:
            error.retry_after = retry_delay(error.body)
        return error

    def chat(self, request: MessageRequest) -> MessageResponse:
        """Send ``request`` and return the whole response.

        Raises:
            LlmError: no model on the request or the provider (nothing is
                sent), or any failure of the call, typed.
        """
        model = self._model_for(request)
        response = self._post(self.url(model, stream=False), request_body(request), stream=False)
        try:
            data = self._json(response)
        finally:
            response.close()
        return parse_response(data, model, self.provider_name, self._masker)

    def chat_stream(self, request: MessageRequest) -> Iterator[StreamEvent]:
        """Send ``request`` to ``:streamGenerateContent?alt=sse`` and yield events as they arrive.

        Nothing is sent until the first ``next()``. Closing the generator
        closes the HTTP response.

        Raises:
            LlmError: from the iterator, at the point of failure: an HTTP
                error status, an ``error`` chunk (typed by its code), a chunk
                that is not JSON, or a stream that ends before the chunk
                with ``finishReason`` (:class:`~agcore_sync.llm.errors.LlmConnectionError`).
        """
        from agcore_sync.llm._gemini_stream import GeminiStreamTranslator  # the stream events load here, once

        model = self._model_for(request)
        if self.vertex:
            self._taken.token = self._take_token()  # so the translator masks this request's token
        translator = GeminiStreamTranslator(model, pricing=self.pricing, masker=self._masker,
                                            provider_name=self.provider_name)
        yield from self._stream(self.url(model, stream=True), request_body(request), translator)


def _default_credentials() -> Any:
    try:
        import google.auth
    except ImportError as exc:
        raise ImportError('Vertex AI credentials need google-auth: pip install -e ".[vertex]" '
                          "(or pass credentials= a callable returning a token)") from exc
    credentials, _project = google.auth.default(scopes=[VERTEX_SCOPE])
    return credentials


def _refresh(credentials: Any, provider_name: str) -> None:
    try:
        import google.auth.transport.requests
    except ImportError as exc:
        raise ImportError('Refreshing google-auth credentials needs google-auth: pip install -e ".[vertex]"') from exc
    try:
        credentials.refresh(google.auth.transport.requests.Request())
    except Exception as exc:  # noqa: BLE001 - google-auth's errors translated once, here
        raise AuthenticationError(f"{provider_name}: refreshing the Google credentials failed "
                                  f"({type(exc).__name__}); check the service account or run "
                                  "`gcloud auth application-default login`") from exc

