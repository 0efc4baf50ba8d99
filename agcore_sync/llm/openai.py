"""OpenAIProvider: the Chat Completions API over ``requests``, with SSE streaming.

Works with OpenAI and with the servers that copy its wire format (vLLM,
llama.cpp, Ollama, LM Studio, DeepSeek...). Translation to and from the wire
happens here; sending, error mapping and key masking live in
:mod:`agcore_sync.llm._http_provider`.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional, Tuple

import requests

from agcore_sync import _check
from agcore_sync.llm._http_provider import HttpProvider
from agcore_sync.llm._media_wire import chat_part, chat_tool_result
from agcore_sync.llm._openai_wire import error_from_body, stop_reason, usage_from_wire
from agcore_sync.llm._tool_calls import ToolCallIds, parse_tool_arguments
from agcore_sync.llm.cost import PricingArg
from agcore_sync.llm.errors import ResponseParseError
from agcore_sync.llm.types import (
    ContentBlock,
    Message,
    MessageRequest,
    MessageResponse,
    Role,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolChoice,
    ToolResultBlock,
    ToolUseBlock,
)

if TYPE_CHECKING:  # pragma: no cover - the stream events load with the first stream
    from agcore_sync.llm.events import StreamEvent

__all__ = ["OpenAIProvider", "DEFAULT_OPENAI_BASE_URL", "AZURE_API_PATH", "openai_key_and_url", "openai_auth_headers"]

#: The public endpoint, used when neither ``base_url`` nor ``OPENAI_BASE_URL`` is set.
DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"

#: The path of Azure OpenAI's v1 API under a resource endpoint.
AZURE_API_PATH = "/openai/v1"


def openai_key_and_url(api_key: Optional[str], base_url: Optional[str], *, azure: bool,
                       owner: str = "OpenAIProvider") -> Tuple[Optional[str], str]:
    """Resolve the key and API root of an OpenAI provider from its arguments and the environment.

    OpenAI: ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, then the public
    endpoint. Azure OpenAI (``azure=True``): ``AZURE_OPENAI_API_KEY``, and
    ``AZURE_OPENAI_ENDPOINT`` with ``/openai/v1`` added (the v1 API, which
    takes the deployment name as ``model`` and needs no ``api-version``).

    Args:
        api_key: the key given, or None to read the environment.
        base_url: the API root given, or None to read the environment.
        azure: resolve for Azure OpenAI.
        owner: the class named in errors.

    Raises:
        ValueError: ``azure=True`` with neither ``base_url`` nor
            ``AZURE_OPENAI_ENDPOINT``.
    """
    if not azure:
        if api_key is None:
            api_key = os.environ.get("OPENAI_API_KEY")
        return api_key, base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_OPENAI_BASE_URL
    if api_key is None:
        api_key = os.environ.get("AZURE_OPENAI_API_KEY")
    if not base_url:
        endpoint = os.environ.get("AZURE_OPENAI_ENDPOINT", "").rstrip("/")
        if not endpoint:
            raise ValueError(f"{owner}: azure=True needs base_url (https://<resource>.openai.azure.com/openai/v1) "
                             "or the AZURE_OPENAI_ENDPOINT variable")
        base_url = endpoint if endpoint.endswith(AZURE_API_PATH) else endpoint + AZURE_API_PATH
    return api_key, base_url


def openai_auth_headers(api_key: Optional[str], *, azure: bool) -> Dict[str, str]:
    """Return the auth header: ``Authorization: Bearer`` (OpenAI) or ``api-key`` (Azure); none without a key."""
    if not api_key:
        return {}
    return {"api-key": api_key} if azure else {"Authorization": f"Bearer {api_key}"}


class OpenAIProvider(HttpProvider):
    """A provider speaking the OpenAI Chat Completions API.

    Requests go to ``{base_url}/chat/completions``. The provider keeps no
    per-request state (a stream's state lives in its generator), so one
    provider may serve several threads as far as its ``requests.Session``
    does. ``close()`` closes the session if the provider created it. A
    finished call, streamed or not, leaves its connection in the session's
    pool for the next one (see :class:`~agcore_sync.llm._http_provider.HttpProvider`).

    Translation to the wire:

    - ``MessageRequest.system`` is the first message, ``{"role": "system"}``.
    - An assistant message sends its text as ``content`` (``null`` when it
      has only tool calls), its tool calls as ``tool_calls`` with the
      arguments as a JSON string (arguments kept as a raw string because
      they were not valid JSON go back as they came), and the text of its
      thinking blocks as ``reasoning_content`` (redacted thinking, which
      only Anthropic produces, is not sent).
    - Each :class:`ToolResultBlock` becomes one ``{"role": "tool"}`` message,
      in order; a message holding several results sends several. The wire
      format has no error flag, so an ``is_error`` result is sent as its
      content unchanged: the tool layer's error text already names the tool
      and the failure.
    - ``tools`` and ``tool_choice`` are sent only when the request has tools;
      ``max_tokens`` goes under the key ``max_tokens_param``.
    - A user message with images or documents sends ``content`` as a list
      of parts (``image_url`` with a data URL or the image's URL, ``file``
      with ``file_data`` for a PDF, text for a text document). A ``tool``
      message takes text only, so the images of a round's tool results
      follow the round's tool messages in one ``user`` message (a text part
      naming the call before each call's images).
    - Request controls: ``output`` is ``response_format`` (``json_schema``,
      strict where the schema allows); ``reasoning_effort`` is sent as it
      is; ``prompt_cache`` and ``thinking`` have no Chat Completions field
      and are ignored (OpenAI caches prefixes by itself; pass
      ``prompt_cache_key`` in ``extra_body``); ``extra_body`` is merged
      last, its keys replacing the body's.

    Translation back: ``reasoning_content`` (vLLM, DeepSeek) becomes a
    :class:`ThinkingBlock`; a ``refusal`` becomes text and the stop reason
    CONTENT_FILTER; a ``finish_reason`` not in the documented set becomes
    ERROR, and a missing one is TOOL_USE if there are tool calls, else STOP.
    A tool call without an id (or with ``""``, or with the id of an earlier
    call of the same response) gets a new ``call_<hex>`` id, used in every
    event and block; empty arguments are ``"{}"`` and ``{}``.

    Streaming: events follow the order DESIGN.md pins; the translation is
    :class:`~agcore_sync.llm._openai_stream.OpenAIStreamTranslator` (which
    also states the block rules). A stream that ends before ``data: [DONE]`` raises
    :class:`~agcore_sync.llm.provider.LlmConnectionError`, also when the
    cut leaves half a JSON chunk; a chunk that is not JSON raises
    :class:`~agcore_sync.llm.provider.ResponseParseError`. An
    ``{"error": ...}`` chunk raises the typed error for its ``code``. When
    the usage chunk had arrived before such a failure, a ``CostUpdate``
    with it is yielded just before the error, so billed tokens are counted.

    Args:
        model: default model name, used when a request's ``model`` is None.
        api_key: the key, sent as ``Authorization: Bearer``; None reads
            ``OPENAI_API_KEY``; ``""`` sends no key even if the variable is
            set. With no key no ``Authorization`` header is sent (local
            servers need none).
        base_url: the API root including ``/v1``; None reads
            ``OPENAI_BASE_URL``, then uses :data:`DEFAULT_OPENAI_BASE_URL`.
        timeout: seconds allowed to connect and for each read.
        session: a ``requests.Session`` to use; the provider then does not
            close it.
        extra_headers: headers added to every request (after the auth
            header, so they may replace it).
        max_tokens_param: the body key for ``max_tokens``; newer OpenAI
            models want ``"max_completion_tokens"``.
        azure: talk to Azure OpenAI's v1 API: the key goes in an
            ``api-key`` header instead of ``Authorization: Bearer``, None
            reads ``AZURE_OPENAI_API_KEY``, ``base_url`` defaults to
            ``AZURE_OPENAI_ENDPOINT`` + ``/openai/v1``, and ``model`` is the
            deployment name. (With a Microsoft Entra token, leave
            ``azure=False`` and pass the token as ``api_key``: it is a Bearer
            token.)
        pricing: prices for ``CostUpdate.cost_usd``; None uses the built-in
            table (see :mod:`agcore_sync.llm.cost`).

    .. versionadded:: 0.1.0
    """

    provider_name = "OpenAI"

    def __init__(
        self,
        model: Optional[str] = None,
        api_key: Optional[str] = None,
        base_url: Optional[str] = None,
        timeout: float = 60.0,
        session: Optional[requests.Session] = None,
        extra_headers: Optional[Mapping[str, str]] = None,
        *,
        max_tokens_param: str = "max_tokens",
        pricing: PricingArg = None,
        azure: bool = False,
    ) -> None:
        if not isinstance(max_tokens_param, str) or not max_tokens_param:
            raise ValueError(f"max_tokens_param must be a non-empty string, got {max_tokens_param!r}")
        _check.instance(type(self).__name__, "azure", azure, bool, "True or False")
        api_key, base_url = openai_key_and_url(api_key, base_url, azure=azure, owner=type(self).__name__)
        super().__init__(model, api_key, base_url, timeout, session, extra_headers, pricing)
        #: The body key that carries ``MessageRequest.max_tokens``.
        self.max_tokens_param = max_tokens_param
        #: True when the provider talks to Azure OpenAI (``api-key`` header).
        self.azure = azure

    @property
    def url(self) -> str:
        """The Chat Completions endpoint, ``{base_url}/chat/completions``."""
        return f"{self.base_url}/chat/completions"

    def _auth_headers(self) -> Dict[str, str]:
        return openai_auth_headers(self._api_key, azure=self.azure)

    # -- the two calls --------------------------------------------------------

    def chat(self, request: MessageRequest) -> MessageResponse:
        """Send ``request`` and return the whole response.

        Usage is in the response; no cost is computed here.

        Raises:
            LlmError: no model on the request or the provider (nothing is
                sent), or any failure of the call, typed.
        """
        model = self._model_for(request)
        response = self._post(self.url, self._request_body(request, model, stream=False), stream=False)
        try:
            data = self._json(response)
        finally:
            response.close()
        return self._parse_response(data, model)

    def chat_stream(self, request: MessageRequest) -> Iterator[StreamEvent]:
        """Send ``request`` with ``stream: true`` and yield events as chunks arrive.

        Nothing is sent until the first ``next()``. Closing the generator
        closes the HTTP response.

        Raises:
            LlmError: from the iterator, at the point of failure.
        """
        from agcore_sync.llm._openai_stream import OpenAIStreamTranslator  # the stream events load here, once

        model = self._model_for(request)
        translator = OpenAIStreamTranslator(model, pricing=self.pricing, masker=self._masker)
        yield from self._stream(self.url, self._request_body(request, model, stream=True), translator)

    # -- request ------------------------------------------------------------

    def _request_body(self, request: MessageRequest, model: str, *, stream: bool) -> Dict[str, Any]:
        messages: List[Dict[str, Any]] = []
        if request.system is not None:
            messages.append({"role": "system", "content": request.system})
        for message in request.messages:
            messages.extend(_wire_messages(message))
        _move_tool_images(messages)
        body: Dict[str, Any] = {"model": model, "messages": messages}
        if request.tools:
            body["tools"] = [
                {"type": "function",
                 "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
                for t in request.tools
            ]
            choice = request.tool_choice
            if isinstance(choice, ToolChoice):
                body["tool_choice"] = {"type": "function", "function": {"name": choice.name}}
            else:
                body["tool_choice"] = choice
        if request.max_tokens is not None:
            body[self.max_tokens_param] = request.max_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.stop is not None:
            body["stop"] = list(request.stop)
        if request.output is not None:
            # Loaded here: a request with an output schema means the module is loaded already.
            from agcore_sync.llm.output import openai_response_format

            body["response_format"] = openai_response_format(request.output)
        if request.reasoning_effort is not None:
            body["reasoning_effort"] = request.reasoning_effort
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        if request.extra_body:
            body.update(request.extra_body)
        return body

    # -- response -----------------------------------------------------------

    def _parse_response(self, data: Any, model: str) -> MessageResponse:
        if isinstance(data, dict) and data.get("error") and not data.get("choices"):
            raise error_from_body(data, self._masker)
        choices = data.get("choices") if isinstance(data, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise ResponseParseError(f"{self.provider_name} sent a response without choices",
                                     body=self._masker.json(data))
        choice = choices[0]
        wire = choice.get("message")
        if not isinstance(wire, dict):
            raise ResponseParseError(f"{self.provider_name} sent a choice without a message",
                                     body=self._masker.json(data))
        blocks: List[ContentBlock] = []
        ids = ToolCallIds("call_")
        reasoning = wire.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning:
            blocks.append(ThinkingBlock(reasoning))
        text = "".join(p for p in (wire.get("content"), wire.get("refusal")) if isinstance(p, str))
        if text:
            blocks.append(TextBlock(text))
        for call in wire.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict):
                continue
            arguments = function.get("arguments")
            blocks.append(ToolUseBlock(
                ids.take(call.get("id")),
                str(function.get("name") or ""),
                arguments if isinstance(arguments, dict) else parse_tool_arguments(arguments or ""),
            ))
        refused = isinstance(wire.get("refusal"), str) and bool(wire["refusal"])
        stop = stop_reason(choice.get("finish_reason"), refused)
        message = Message(Role.ASSISTANT, blocks)
        if stop is None:
            stop = StopReason.TOOL_USE if message.tool_uses else StopReason.STOP
        return MessageResponse(str(data.get("id") or ""), str(data.get("model") or model), message, stop,
                               usage_from_wire(data.get("usage")))


def _user_content(message: Message) -> Any:
    """Return a user message's ``content``: its text, or a list of parts when it holds media."""
    parts = [b for b in message.content if not isinstance(b, _NOT_PARTS)]
    if all(isinstance(b, TextBlock) for b in parts):
        return "".join(b.text for b in parts)  # type: ignore[attr-defined]
    return [chat_part(b) for b in parts]


_NOT_PARTS = (ToolResultBlock, ToolUseBlock, ThinkingBlock)


def _wire_messages(message: Message) -> List[Dict[str, Any]]:
    """Translate one message; tool results become one ``tool`` message each."""
    text = "".join(b.text for b in message.content if isinstance(b, TextBlock))
    if message.role is Role.ASSISTANT:
        wire: Dict[str, Any] = {"role": "assistant"}
        calls = [
            {"id": b.id, "type": "function",
             "function": {"name": b.name, "arguments": b.input if isinstance(b.input, str) else json.dumps(b.input)}}
            for b in message.content if isinstance(b, ToolUseBlock)
        ]
        has_text = any(isinstance(b, TextBlock) for b in message.content)
        wire["content"] = text if has_text or not calls else None
        if calls:
            wire["tool_calls"] = calls
        reasoning = "".join(b.text for b in message.content if isinstance(b, ThinkingBlock))
        if reasoning:
            wire["reasoning_content"] = reasoning
        return [wire]
    out: List[Dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, ToolResultBlock):
            result_text, images = chat_tool_result(block.content)
            tool_message: Dict[str, Any] = {"role": "tool", "tool_call_id": block.tool_use_id, "content": result_text}
            if images:
                tool_message[_IMAGES_KEY] = images  # moved into a user message by _move_tool_images
            out.append(tool_message)
    if message.role is Role.SYSTEM:
        out.append({"role": "system", "content": text})
    elif message.role is Role.USER:
        content = _user_content(message)
        if content or not out:
            # Results first: a tool message must follow the assistant's tool calls.
            out.append({"role": "user", "content": content})
    return out


#: A private key on a wire ``tool`` message holding its images until :func:`_move_tool_images` moves them.
_IMAGES_KEY = "_agcore_images"


def _move_tool_images(messages: List[Dict[str, Any]]) -> None:
    """Move tool results' images into one ``user`` message after each run of ``tool`` messages.

    Chat Completions refuses images in a ``tool`` message; the model reads
    them in the user message that follows, each call's images after a text
    part naming the call.
    """
    i = 0
    while i < len(messages):
        if messages[i].get("role") != "tool":
            i += 1
            continue
        parts: List[Dict[str, Any]] = []
        while i < len(messages) and messages[i].get("role") == "tool":
            images = messages[i].pop(_IMAGES_KEY, None)
            if images:
                parts.append({"type": "text", "text": f"The tool call {messages[i]['tool_call_id']} returned:"})
                parts.extend(images)
            i += 1
        if parts:
            messages.insert(i, {"role": "user", "content": parts})
            i += 1
