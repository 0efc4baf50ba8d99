"""OpenAIResponsesProvider: the OpenAI Responses API over ``requests``, with SSE streaming.

Requests go to ``POST {base_url}/responses``. The translation to and from the
wire is in :mod:`agcore_sync.llm._responses_wire` (requests, plain responses)
and :mod:`agcore_sync.llm._responses_stream` (streams); sending, error
mapping, key masking and connection reuse are the shared
:class:`~agcore_sync.llm._http_provider.HttpProvider`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Iterator, Mapping, Optional

import requests

from agcore_sync import _check
from agcore_sync.llm._http_provider import HttpProvider
from agcore_sync.llm._responses_wire import is_reasoning_model, parse_response, request_body
from agcore_sync.llm.cost import PricingArg
from agcore_sync.llm.openai import openai_auth_headers, openai_key_and_url
from agcore_sync.llm.types import MessageRequest, MessageResponse

if TYPE_CHECKING:  # pragma: no cover - the stream events load with the first stream
    from agcore_sync.llm.events import StreamEvent

__all__ = ["OpenAIResponsesProvider"]

_SUMMARIES = (None, "auto", "concise", "detailed")


class OpenAIResponsesProvider(HttpProvider):
    """A provider speaking the OpenAI Responses API (``POST {base_url}/responses``).

    Stateless by default (``store=False``): every request carries the whole
    conversation, so a saved session resumes on any worker, against any
    deployment. Reasoning models return their reasoning as ``reasoning``
    items; with ``include: ["reasoning.encrypted_content"]`` each comes with
    an opaque ``encrypted_content`` that the next request of a tool loop
    must send back. Such an item is kept in a
    :class:`~agcore_sync.llm.types.ThinkingBlock`: its summary as ``text``,
    the item as the server sent it (and the id of the item after it, which
    the API pairs it with) in ``signature``, marked as this provider's (see
    :mod:`agcore_sync.llm._thinking_origin`). It goes back unchanged, also
    after ``to_dict`` / ``from_dict`` of a session. Other providers drop it,
    and this provider drops theirs.

    Request translation (details in :mod:`agcore_sync.llm._responses_wire`):
    ``system`` is ``instructions``; messages, tool calls and tool results
    are ``input`` items; tools are function tools with ``"strict": false``
    (our schemas are not strict-mode schemas; a tool object with a
    ``strict`` attribute set to True is sent strict); ``max_tokens`` is
    ``max_output_tokens``; ``parallel_tool_calls: true`` goes with tools;
    the request's ``reasoning_effort`` and the constructor's
    ``reasoning_summary`` make ``reasoning``; a native structured-output
    schema is ``text.format``; images and documents are ``input_image`` /
    ``input_file`` parts; ``extra_body`` is merged last. The API has no stop
    sequences, so ``MessageRequest.stop`` is not sent.

    Translation back: a ``message`` item is a text block (a refusal is its
    text, with the stop reason CONTENT_FILTER), a ``function_call`` a tool
    call (``call_id`` is the id), a ``reasoning`` item a thinking block;
    built-in tool items are skipped. ``completed`` is STOP or TOOL_USE;
    ``incomplete`` is LENGTH (``max_output_tokens``) or CONTENT_FILTER;
    ``failed`` raises the error for its ``code``. Usage: ``input_tokens``
    (cached ones included, ``cached_tokens`` as ``cache_read_tokens``) and
    ``output_tokens`` (reasoning tokens included).

    Streaming: :class:`~agcore_sync.llm._responses_stream.ResponsesStreamTranslator`
    (which states the event rules). A stream that ends before
    ``response.completed`` / ``response.incomplete`` raises
    :class:`~agcore_sync.llm.errors.LlmConnectionError`; ``response.failed``
    and ``error`` events raise the typed error, after a ``CostUpdate`` when
    the failed response reported usage.

    The provider keeps no per-request state and starts no thread;
    ``close()`` closes the ``requests.Session`` if the provider made it.

    Args:
        model: default model name, used when a request's ``model`` is None
            (on Azure, the deployment name).
        api_key: the key; None reads ``OPENAI_API_KEY`` (``AZURE_OPENAI_API_KEY``
            with ``azure=True``); ``""`` sends none. Never in a repr, log or
            error.
        base_url: the API root including ``/v1``; None reads
            ``OPENAI_BASE_URL``, then uses the public endpoint (Azure: see
            ``azure``).
        timeout: seconds allowed to connect and for each read.
        session: a ``requests.Session`` to use; the provider then does not
            close it.
        extra_headers: headers added to every request.
        store: sent as ``store``: False (the default) keeps nothing on
            OpenAI's side.
        encrypted_reasoning: whether to send ``include:
            ["reasoning.encrypted_content"]``. None sends it for reasoning
            models only, judged by name (o1, o3, o4..., gpt-5..., codex-mini):
            other models answer it with a 400. True / False force it (an Azure
            deployment name says nothing about its model).
        pricing: prices for ``CostUpdate.cost_usd``; None uses the built-in
            table.
        reasoning_summary: ``reasoning.summary`` to ask for: ``"auto"``,
            ``"concise"``, ``"detailed"``, or None (not sent; some
            organisations must be verified before OpenAI returns summaries).
        azure: talk to Azure OpenAI's v1 API (``api-key`` header; see
            :class:`~agcore_sync.llm.openai.OpenAIProvider`).

    Raises:
        TypeError: an argument of the wrong type (one line naming it).
        ValueError: ``reasoning_summary`` is not one of the values above,
            ``azure=True`` without an endpoint, or a bad ``base_url`` or
            ``timeout``.

    .. versionadded:: 0.2.0
    """

    provider_name = "OpenAI Responses"

    def __init__(
        self,
        model: Optional[str] = None,
        api_key: Optional[str] = None,
        base_url: Optional[str] = None,
        timeout: float = 60.0,
        session: Optional[requests.Session] = None,
        extra_headers: Optional[Mapping[str, str]] = None,
        store: bool = False,
        encrypted_reasoning: Optional[bool] = None,
        pricing: PricingArg = None,
        *,
        reasoning_summary: Optional[str] = None,
        azure: bool = False,
    ) -> None:
        owner = type(self).__name__
        if reasoning_summary not in _SUMMARIES:
            raise ValueError(f"{owner}: reasoning_summary must be one of {_SUMMARIES}, got {reasoning_summary!r}")
        _check.optional_instance(owner, "encrypted_reasoning", encrypted_reasoning, bool, "True, False or None")
        _check.instance(owner, "store", store, bool, "True or False")
        _check.instance(owner, "azure", azure, bool, "True or False")
        api_key, base_url = openai_key_and_url(api_key, base_url, azure=azure, owner=owner)
        super().__init__(model, api_key, base_url, timeout, session, extra_headers, pricing)
        #: Sent as ``store``.
        self.store = store
        #: None: ``include`` encrypted reasoning for reasoning models only; True/False: always/never.
        self.encrypted_reasoning = encrypted_reasoning
        #: ``reasoning.summary`` to ask for, or None.
        self.reasoning_summary = reasoning_summary
        #: True when the provider talks to Azure OpenAI (``api-key`` header).
        self.azure = azure

    @property
    def url(self) -> str:
        """The endpoint, ``{base_url}/responses``."""
        return f"{self.base_url}/responses"

    def _auth_headers(self) -> Dict[str, str]:
        return openai_auth_headers(self._api_key, azure=self.azure)

    def _body(self, request: MessageRequest, model: str, *, stream: bool) -> Dict[str, Any]:
        include = self.encrypted_reasoning
        if include is None:
            include = is_reasoning_model(model)
        return request_body(request, model, stream=stream, store=self.store, include_encrypted=include,
                            reasoning_summary=self.reasoning_summary)

    def chat(self, request: MessageRequest) -> MessageResponse:
        """Send ``request`` and return the whole response.

        Raises:
            LlmError: no model on the request or the provider (nothing is
                sent), or any failure of the call, typed.
        """
        model = self._model_for(request)
        response = self._post(self.url, self._body(request, model, stream=False), stream=False)
        try:
            data = self._json(response)
        finally:
            response.close()
        return parse_response(data, model, self._masker)

    def chat_stream(self, request: MessageRequest) -> Iterator[StreamEvent]:
        """Send ``request`` with ``stream: true`` and yield events as they arrive.

        Nothing is sent until the first ``next()``. Closing the generator
        closes the HTTP response.

        Raises:
            LlmError: from the iterator, at the point of failure.
        """
        from agcore_sync.llm._responses_stream import ResponsesStreamTranslator  # the stream events load here, once

        model = self._model_for(request)
        translator = ResponsesStreamTranslator(model, pricing=self.pricing, masker=self._masker)
        yield from self._stream(self.url, self._body(request, model, stream=True), translator)
