"""BedrockProvider: Amazon Bedrock's Converse API over ``requests``, with event-stream streaming.

Requests go to ``{base_url}/model/{model id}/converse`` and
``/converse-stream`` (the model id URL-quoted whole: an ARN or an inference
profile such as ``us.anthropic.claude-sonnet-4-5-20250929-v1:0`` stays one
path segment). The body is the Converse JSON boto3's ``bedrock-runtime``
client sends (see :mod:`agcore_sync.llm._bedrock_wire`); a streamed answer
is AWS event-stream framing, decoded as it arrives by
:class:`~agcore_sync._http.eventstream.EventStreamDecoder` (both CRCs
checked, each message bounded by :attr:`max_event_size`).

Auth: a Bedrock API key (``api_key``, else ``AWS_BEARER_TOKEN_BEDROCK``) is
sent as ``Authorization: Bearer``; without one, each request is signed with
SigV4 by botocore (``pip install -e ".[bedrock]"``) from its credential
chain or the ``profile`` named. The region comes from ``region``,
``AWS_REGION``, ``AWS_DEFAULT_REGION``, then the profile's config.

The provider holds a ``requests.Session`` (its own unless one is given) and
no thread. The API key is kept out of ``repr``, logs and every error.
"""

from __future__ import annotations

import os
import urllib.parse
from typing import TYPE_CHECKING, Any, Dict, Iterator, Mapping, Optional

import requests

from agcore_sync import _check
from agcore_sync.llm._bedrock_wire import parse_response, request_body
from agcore_sync.llm._http_provider import HttpProvider, parse_retry_after
from agcore_sync.llm.cost import PricingArg
from agcore_sync.llm.errors import LlmError, ResponseParseError
from agcore_sync.llm.types import MessageRequest, MessageResponse

if TYPE_CHECKING:  # pragma: no cover - the stream modules load with the first stream
    from agcore_sync._http.body import BodyReader
    from agcore_sync._http.eventstream import EventStreamMessage
    from agcore_sync.llm._bedrock_auth import SigV4Signer
    from agcore_sync.llm.events import StreamEvent

__all__ = ["BedrockProvider", "base_url_for"]

#: The request id header Bedrock answers with (the response id here).
REQUEST_ID_HEADER = "x-amzn-RequestId"


def base_url_for(region: str) -> str:
    """Return the Bedrock runtime endpoint of ``region``."""
    return f"https://bedrock-runtime.{region}.amazonaws.com"


class BedrockProvider(HttpProvider):
    """Amazon Bedrock's Converse API (``POST {base_url}/model/{model}/converse``).

    Args:
        model: the default model id (``anthropic.claude-...``, an inference
            profile ``us.anthropic...:0``, ``amazon.nova-...``, an ARN), used
            when a request's ``model`` is None.
        region: the AWS region; None reads ``AWS_REGION``, then
            ``AWS_DEFAULT_REGION``, then the profile's config.
        base_url: the endpoint; None is
            ``https://bedrock-runtime.{region}.amazonaws.com``.
        timeout: seconds for connecting and for each read.
        session: a ``requests.Session`` to use (left open); None creates one
            the provider owns.
        extra_headers: more headers for every request (signed too).
        pricing: prices for ``CostUpdate.cost_usd`` (None: the built-in table).
        api_key: a Bedrock API key; None reads ``AWS_BEARER_TOKEN_BEDROCK``.
            With a key no SigV4 signing (and no botocore) is needed.
        credentials: botocore credentials to sign with instead of the chain.
        profile: the AWS profile botocore reads credentials and region from.

    Raises:
        ValueError: no region anywhere (the message names ``AWS_REGION``),
            or a ``profile`` that does not exist.
        ImportError: SigV4 is needed and botocore is missing (names the
            ``bedrock`` extra).

    Missing credentials raise :class:`~agcore_sync.llm.errors.AuthenticationError`
    at the first call, naming the environment variables to set, before any
    request. The provider starts no thread; ``chat_stream`` returns a
    generator whose closing closes the HTTP response.

    .. versionadded:: 0.3
    """

    provider_name = "Bedrock"
    #: The OpenTelemetry ``gen_ai.provider.name``.
    telemetry_name = "aws.bedrock"
    stream_accept = None  # boto3 sends none either

    def __init__(
        self,
        model: Optional[str] = None,
        *,
        region: Optional[str] = None,
        base_url: Optional[str] = None,
        timeout: float = 60.0,
        session: Optional[requests.Session] = None,
        extra_headers: Optional[Mapping[str, str]] = None,
        pricing: PricingArg = None,
        api_key: Optional[str] = None,
        credentials: Any = None,
        profile: Optional[str] = None,
    ) -> None:
        owner = type(self).__name__
        for name, value in (("model", model), ("region", region), ("api_key", api_key), ("profile", profile)):
            _check.optional_str(owner, name, value)
        if base_url is not None:
            _check.http_url(owner, "base_url", base_url)
        _check.timeout(owner, timeout)
        _check.optional_instance(owner, "session", session, requests.Session, "a requests.Session")
        _check.str_mapping(owner, "extra_headers", extra_headers)
        if api_key is None:
            api_key = os.environ.get("AWS_BEARER_TOKEN_BEDROCK") or None
        if region is None:
            region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or None
        signer: Optional[SigV4Signer] = None
        if not api_key:
            from agcore_sync.llm._bedrock_auth import SigV4Signer

            signer = SigV4Signer(region or "", profile, credentials)
            if region is None:
                region = signer.config_region()
                signer.region = region or ""
        if region is None and (base_url is None or signer is not None):
            raise ValueError("BedrockProvider needs an AWS region: pass region= or set AWS_REGION "
                             "(or AWS_DEFAULT_REGION)")
        #: The AWS region (None only with a base_url and an API key).
        self.region = region
        self._signer = signer
        super().__init__(model, api_key, base_url or base_url_for(region or ""), timeout, session, extra_headers,
                         pricing)

    def __repr__(self) -> str:
        return f"BedrockProvider(model={self.model!r}, region={self.region!r}, base_url={self.base_url!r})"

    def url_for(self, model: str, *, stream: bool) -> str:
        """Return the URL of ``model``'s Converse (or ConverseStream) operation; the id is quoted whole."""
        return f"{self.base_url}/model/{urllib.parse.quote(model, safe='')}/" + (
            "converse-stream" if stream else "converse")

    def _auth_headers(self) -> Dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def _sign(self, url: str, data: str, headers: Dict[str, str]) -> Dict[str, str]:
        return headers if self._signer is None else self._signer.sign(url, data, headers)

    # -- errors ---------------------------------------------------------------

    def _status_error(self, response: requests.Response) -> LlmError:
        import json

        from agcore_sync._http.body import DRAIN_LIMIT, read_limited
        from agcore_sync.llm._bedrock_wire import error_of_type

        try:
            if getattr(response, "_content_consumed", False):  # a plain call: read already
                raw = response.content[:DRAIN_LIMIT]
            else:  # a stream's error: read at most DRAIN_LIMIT bytes of it
                raw = read_limited(response, DRAIN_LIMIT, cut=True)
            text = self._masker.text(raw.decode("utf-8", "replace"))
        except Exception:  # noqa: BLE001 - a body we cannot read is no reason to lose the status
            text = ""
        try:
            body: Any = json.loads(text)
        except ValueError:
            body = text
        error_type = response.headers.get("x-amzn-ErrorType") or ""
        detail = ""
        if isinstance(body, dict):
            error_type = error_type or str(body.get("__type") or "")
            detail = str(body.get("message") or body.get("Message") or "")
        elif isinstance(body, str):
            detail = body[:2000]
        name = error_type.split(":", 1)[0].rsplit("#", 1)[-1]
        message = f"Bedrock returned HTTP {response.status_code}" + (f" {name}" if name else "")
        if detail:
            message += f": {detail[:2000]}"
        if response.status_code in (403, 404):
            message += (f" (region {self.region!r} at {self.base_url}: a model or key of another region "
                        "needs region= / AWS_REGION set to that region)")
        return error_of_type(error_type, message, status=response.status_code, masker=self._masker,
                             retry_after=parse_retry_after(response.headers.get("Retry-After")), body=body)

    # -- calls ------------------------------------------------------------------

    def chat(self, request: MessageRequest) -> MessageResponse:
        """Send ``request`` to Converse and return the whole response.

        Raises:
            LlmError: no model anywhere or no credentials (before sending), or
                any failure, typed as the :mod:`agcore_sync.llm.provider` tree says.
            ValueError: an image or document by http(s) URL (Bedrock takes bytes or ``s3://``).
        """
        model = self._model_for(request)
        body = request_body(request, model)
        response = self._post(self.url_for(model, stream=False), body, stream=False)
        try:
            data = self._json(response)
        finally:
            response.close()
        if not isinstance(data, dict):
            raise ResponseParseError("Bedrock sent a response body that is not a JSON object",
                                     body=self._masker.json(data))
        return parse_response(data, request_id=response.headers.get(REQUEST_ID_HEADER) or "", model=model,
                              masker=self._masker)

    def chat_stream(self, request: MessageRequest) -> Iterator[StreamEvent]:
        """Send ``request`` to ConverseStream and yield events as the frames arrive.

        Nothing is sent until the first ``next()``. Closing the generator
        closes the HTTP response.

        Raises:
            LlmError: from the iterator: an HTTP error status, an exception
                frame (throttling: :class:`~agcore_sync.llm.errors.RateLimitError`;
                internal-server, service-unavailable, model-stream:
                :class:`~agcore_sync.llm.errors.ServerError`; validation and other client faults:
                :class:`~agcore_sync.llm.errors.ProviderError`), a corrupt or cut frame
                (:class:`~agcore_sync.llm.errors.ResponseParseError`), or a stream that ends
                before its last message (:class:`~agcore_sync.llm.errors.LlmConnectionError`).
        """
        from agcore_sync.llm._bedrock_stream import BedrockStreamTranslator  # loaded with the first stream

        model = self._model_for(request)
        body = request_body(request, model)
        translator = BedrockStreamTranslator(model, pricing=self.pricing, masker=self._masker)
        yield from self._stream(self.url_for(model, stream=True), body, translator)

    def _read_events(self, reader: BodyReader) -> Iterator[EventStreamMessage]:  # type: ignore[override]
        from agcore_sync._http.body import TRANSPORT_ERRORS
        from agcore_sync._http.eventstream import (
            EventStreamDecoder,
            EventStreamError,
            EventStreamMessage,
            EventStreamTooLarge,
        )
        from agcore_sync.llm._bedrock_stream import END_MESSAGE, RESPONSE_MESSAGE

        yield EventStreamMessage({":message-type": RESPONSE_MESSAGE,
                                  "request-id": reader.response.headers.get(REQUEST_ID_HEADER) or ""}, b"")
        decoder = EventStreamDecoder(self.max_event_size)
        try:
            for chunk in reader:
                yield from decoder.feed(chunk)
            decoder.close()
        except TRANSPORT_ERRORS as exc:
            self._raise_transport(exc)
        except EventStreamTooLarge as exc:
            raise ResponseParseError(
                f"Bedrock sent a stream message larger than {exc.limit} bytes "
                "(the provider's max_event_size); the stream was closed") from None
        except EventStreamError as exc:
            raise ResponseParseError(f"Bedrock sent a corrupt event stream: {exc}") from None
        yield EventStreamMessage({":message-type": END_MESSAGE}, b"")
