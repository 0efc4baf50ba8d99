"""OpenAIProvider: the Chat Completions API over ``requests``, with SSE streaming.

Works with OpenAI and with the servers that copy its wire format (vLLM,
llama.cpp, Ollama, LM Studio, DeepSeek...). Translation to and from the wire
happens here; sending, error mapping and key masking live in
:mod:`agcore_sync.llm._http_provider`.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterator, List, Mapping, Optional

import requests

from agcore_sync._http.sse import SseEvent
from agcore_sync.llm._http_provider import HttpProvider, error_for_status, mask
from agcore_sync.llm.cost import PricingArg
from agcore_sync.llm.errors import LlmError, ProviderError, ResponseParseError, ServerError
from agcore_sync.llm.events import (
    ContentBlockEnd,
    ContentBlockStart,
    CostUpdate,
    MessageComplete,
    MessageStart,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallArgumentsDelta,
    ToolCallEnd,
)
from agcore_sync.llm.partial import PartialMessageResponse, parse_tool_arguments
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
    Usage,
)

__all__ = ["OpenAIProvider", "DEFAULT_OPENAI_BASE_URL"]

#: The public endpoint, used when neither ``base_url`` nor ``OPENAI_BASE_URL`` is set.
DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"

_FINISH_REASONS = {
    "stop": StopReason.STOP,
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    "length": StopReason.LENGTH,
    "content_filter": StopReason.CONTENT_FILTER,
}

_DONE = "[DONE]"


class OpenAIProvider(HttpProvider):
    """A provider speaking the OpenAI Chat Completions API.

    Requests go to ``{base_url}/chat/completions``. The provider keeps no
    per-request state (a stream's state lives in its generator), so one
    provider may serve several threads as far as its ``requests.Session``
    does. ``close()`` closes the session if the provider created it.

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

    Translation back: ``reasoning_content`` (vLLM, DeepSeek) becomes a
    :class:`ThinkingBlock`; a ``refusal`` becomes text and the stop reason
    CONTENT_FILTER; a ``finish_reason`` not in the documented set becomes
    ERROR, and a missing one is TOOL_USE if there are tool calls, else STOP.

    Streaming: events follow the order DESIGN.md pins. Block indexes count
    from 0 in order of first appearance (not ``tool_calls[].index``).
    OpenAI interleaves, so blocks are closed by this rule: a text or
    thinking block ends when a block of another kind starts; tool blocks
    stay open (their argument pieces may interleave) and all end, in index
    order, when ``finish_reason`` arrives, or at ``[DONE]`` if it never
    did. A stream that ends before ``data: [DONE]`` raises
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
    ) -> None:
        if not isinstance(max_tokens_param, str) or not max_tokens_param:
            raise ValueError(f"max_tokens_param must be a non-empty string, got {max_tokens_param!r}")
        if api_key is None:
            api_key = os.environ.get("OPENAI_API_KEY")
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_OPENAI_BASE_URL
        super().__init__(model, api_key, base_url, timeout, session, extra_headers, pricing)
        #: The body key that carries ``MessageRequest.max_tokens``.
        self.max_tokens_param = max_tokens_param

    @property
    def url(self) -> str:
        """The Chat Completions endpoint, ``{base_url}/chat/completions``."""
        return f"{self.base_url}/chat/completions"

    def _auth_headers(self) -> Dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

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
        model = self._model_for(request)
        response = self._post(self.url, self._request_body(request, model, stream=True), stream=True)
        sse = self._sse_events(response)
        try:
            partial = PartialMessageResponse()
            assembler = _StreamAssembler(model)
            try:
                for item in sse:
                    if item.data.strip() == _DONE:
                        break
                    for event in assembler.feed(self._stream_chunk(item)):
                        partial.apply(event)
                        yield event
                else:
                    raise self._stream_cut()
            except LlmError:
                # The usage chunk arrived before the failure (a cut or a stall
                # before [DONE]): those tokens were billed, so report them.
                if assembler.usage is not None:
                    yield CostUpdate(assembler.usage, self._cost(assembler.usage, partial.model or model))
                raise
            for event in assembler.finish():
                partial.apply(event)
                yield event
            if assembler.usage is not None:
                event = CostUpdate(assembler.usage, self._cost(assembler.usage, partial.model or model))
                partial.apply(event)
                yield event
            partial.stop_reason = _stop_reason(assembler.finish_reason, assembler.refused)
            yield MessageComplete(partial.finalize())
        finally:
            sse.close()
            response.close()

    # -- request ------------------------------------------------------------

    def _request_body(self, request: MessageRequest, model: str, *, stream: bool) -> Dict[str, Any]:
        messages: List[Dict[str, Any]] = []
        if request.system is not None:
            messages.append({"role": "system", "content": request.system})
        for message in request.messages:
            messages.extend(_wire_messages(message))
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
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    # -- response -----------------------------------------------------------

    def _parse_response(self, data: Any, model: str) -> MessageResponse:
        if isinstance(data, dict) and data.get("error") and not data.get("choices"):
            raise self._error_from_body(data)
        choices = data.get("choices") if isinstance(data, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise ResponseParseError(f"{self.provider_name} sent a response without choices",
                                     body=self._masked(data))
        choice = choices[0]
        wire = choice.get("message")
        if not isinstance(wire, dict):
            raise ResponseParseError(f"{self.provider_name} sent a choice without a message",
                                     body=self._masked(data))
        blocks: List[ContentBlock] = []
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
                str(call.get("id") or ""),
                str(function.get("name") or ""),
                arguments if isinstance(arguments, dict) else parse_tool_arguments(arguments or ""),
            ))
        refused = isinstance(wire.get("refusal"), str) and bool(wire["refusal"])
        stop = _stop_reason(choice.get("finish_reason"), refused)
        message = Message(Role.ASSISTANT, blocks)
        if stop is None:
            stop = StopReason.TOOL_USE if message.tool_uses else StopReason.STOP
        return MessageResponse(str(data.get("id") or ""), str(data.get("model") or model), message, stop,
                               _usage(data.get("usage")))

    def _stream_chunk(self, item: SseEvent) -> Dict[str, Any]:
        chunk = self._chunk_json(item.data)
        if not isinstance(chunk, dict):
            raise ResponseParseError(f"{self.provider_name} sent a stream chunk that is not an object",
                                     body=mask(item.data[:1000], self._api_key))
        if chunk.get("error") and not chunk.get("choices"):
            raise self._error_from_body(chunk)
        return chunk

    def _error_from_body(self, data: Dict[str, Any]) -> LlmError:
        error = data.get("error")
        detail = error.get("message") if isinstance(error, dict) else error
        message = mask(f"{self.provider_name} reported an error: {detail}", self._api_key)
        code = error.get("code") if isinstance(error, dict) else None
        body = self._masked(data)
        if isinstance(code, int) and not isinstance(code, bool) and code >= 400:
            return error_for_status(code, message, body=body)
        if isinstance(error, dict) and error.get("type") == "server_error":
            return ServerError(message, body=body)
        return ProviderError(message, body=body)

    def _masked(self, data: Any) -> Any:
        if not self._api_key:
            return data
        try:
            return json.loads(mask(json.dumps(data), self._api_key))
        except (TypeError, ValueError):
            return mask(str(data), self._api_key)


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
    out: List[Dict[str, Any]] = [
        {"role": "tool", "tool_call_id": b.tool_use_id, "content": b.content}
        for b in message.content if isinstance(b, ToolResultBlock)
    ]
    if message.role is Role.SYSTEM:
        out.append({"role": "system", "content": text})
    elif message.role is Role.USER and (text or not out):
        # Results first: a tool message must follow the assistant's tool calls.
        out.append({"role": "user", "content": text})
    return out


def _stop_reason(finish_reason: Any, refused: bool) -> Optional[StopReason]:
    if refused:
        return StopReason.CONTENT_FILTER
    if finish_reason is None:
        return None
    return _FINISH_REASONS.get(finish_reason, StopReason.ERROR)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _usage(data: Any) -> Usage:
    if not isinstance(data, dict):
        return Usage()
    details = data.get("prompt_tokens_details")
    details = details if isinstance(details, dict) else {}
    return Usage(
        prompt_tokens=_count(data.get("prompt_tokens")),
        completion_tokens=_count(data.get("completion_tokens")),
        cache_read_tokens=_count(details.get("cached_tokens")),
        cache_write_tokens=_count(details.get("cache_write_tokens")),
    )


class _ToolCall:
    __slots__ = ("index", "id", "name", "parts", "done")

    def __init__(self, index: int, call_id: str, name: str) -> None:
        self.index = index
        self.id = call_id
        self.name = name
        self.parts: List[str] = []
        self.done = False


class _StreamAssembler:
    """Turns ``chat.completion.chunk`` objects into stream events (pure, no I/O).

    Only choice 0 is read (the provider never asks for ``n > 1``).
    """

    def __init__(self, model: str) -> None:
        self._model = model
        self._started = False
        self._next_index = 0
        self._open_kind: Optional[str] = None
        self._open_index = -1
        self._tools: Dict[int, _ToolCall] = {}  # keyed by tool_calls[].index; insertion = block order
        self.finish_reason: Optional[str] = None
        self.refused = False
        self.usage: Optional[Usage] = None

    def feed(self, chunk: Dict[str, Any]) -> List[StreamEvent]:
        events: List[StreamEvent] = []
        if not self._started:
            self._started = True
            events.append(MessageStart(str(chunk.get("id") or ""), str(chunk.get("model") or self._model)))
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            if isinstance(delta, dict):
                self._delta(delta, events)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
                self._close_all(events)
        if isinstance(chunk.get("usage"), dict):
            self.usage = _usage(chunk["usage"])
        return events

    def finish(self) -> List[StreamEvent]:
        """Close what is still open at ``[DONE]``."""
        events: List[StreamEvent] = []
        if not self._started:
            self._started = True
            events.append(MessageStart("", self._model))
        self._close_all(events)
        return events

    def _delta(self, delta: Dict[str, Any], events: List[StreamEvent]) -> None:
        reasoning = delta.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning:
            self._open("thinking", events)
            events.append(ThinkingDelta(reasoning))
        for key in ("content", "refusal"):
            piece = delta.get(key)
            if isinstance(piece, str) and piece:
                self.refused = self.refused or key == "refusal"
                self._open("text", events)
                events.append(TextDelta(piece))
        for wire in delta.get("tool_calls") or ():
            if isinstance(wire, dict):
                self._tool_delta(wire, events)

    def _open(self, kind: str, events: List[StreamEvent]) -> None:
        if self._open_kind == kind:
            return
        self._close_open(events)
        self._open_kind, self._open_index = kind, self._take_index()
        events.append(ContentBlockStart(self._open_index, kind))

    def _close_open(self, events: List[StreamEvent]) -> None:
        if self._open_kind is not None:
            events.append(ContentBlockEnd(self._open_index))
            self._open_kind = None

    def _take_index(self) -> int:
        index = self._next_index
        self._next_index += 1
        return index

    def _tool_delta(self, wire: Dict[str, Any], events: List[StreamEvent]) -> None:
        key = wire.get("index")
        if not isinstance(key, int):
            # Some compatible servers omit the index: a new id is a new call,
            # a piece without one belongs to the last call.
            last = next(reversed(self._tools), None)
            known = {t.id for t in self._tools.values()}
            new_call = last is None or (wire.get("id") and wire["id"] not in known)
            key = len(self._tools) if new_call else last
        function = wire.get("function")
        function = function if isinstance(function, dict) else {}
        call = self._tools.get(key)
        if call is None:
            self._close_open(events)
            index = self._take_index()
            call = self._tools[key] = _ToolCall(
                index, str(wire.get("id") or f"call_{index}"), str(function.get("name") or ""))
            events.append(ContentBlockStart(index, "tool_use", tool_call_id=call.id, tool_name=call.name))
        if call.done:
            return
        piece = function.get("arguments")
        if isinstance(piece, dict):
            piece = json.dumps(piece)
        if isinstance(piece, str) and piece:
            call.parts.append(piece)
            events.append(ToolCallArgumentsDelta(call.index, call.id, piece))

    def _close_all(self, events: List[StreamEvent]) -> None:
        self._close_open(events)
        for call in sorted(self._tools.values(), key=lambda c: c.index):
            if not call.done:
                call.done = True
                events.append(ToolCallEnd(call.id, call.name, "".join(call.parts)))
                events.append(ContentBlockEnd(call.index))
