"""AnthropicProvider: the Anthropic Messages API over ``requests``, with SSE streaming.

Requests go to ``{base_url}/v1/messages`` with the ``x-api-key`` and
``anthropic-version`` headers. Our provider-neutral values map onto the wire
format at this edge only:

- ``MessageRequest.system`` (and the text of any ``system`` role message) is
  the top-level ``system`` string; ``tool`` role messages become ``user``
  messages of ``tool_result`` blocks; consecutive messages of one role are
  merged, since the API requires user and assistant turns to alternate.
- Thinking blocks go back unchanged: ``thinking`` with its ``signature``,
  ``redacted_thinking`` with its ``data``.
- Streams are read as their bytes arrive and translated event by event into
  the order of :mod:`agcore_sync.llm.events`; the closing ``MessageComplete``
  is built from the very events yielded, so replaying them gives the same
  response.

The provider holds a ``requests.Session`` (its own unless one is given) and no
thread. The API key is kept out of ``repr``, logs and every error.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple, Type

import requests

from agcore_sync.llm._http_provider import HttpProvider, mask
from agcore_sync.llm.cost import PricingArg
from agcore_sync.llm.errors import (
    AuthenticationError,
    LlmError,
    ProviderError,
    RateLimitError,
    ResponseParseError,
    ServerError,
)
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
from agcore_sync.llm.partial import PartialMessageResponse
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

__all__ = ["AnthropicProvider", "DEFAULT_BASE_URL", "DEFAULT_ANTHROPIC_VERSION", "DEFAULT_MAX_TOKENS"]

logger = logging.getLogger("agcore_sync.llm")

#: The public endpoint, without ``/v1``.
DEFAULT_BASE_URL = "https://api.anthropic.com"

#: The ``anthropic-version`` header sent unless the constructor says otherwise.
DEFAULT_ANTHROPIC_VERSION = "2023-06-01"

#: ``max_tokens`` sent when the request has none: the API requires the field.
DEFAULT_MAX_TOKENS = 4096

_STOP_REASONS: Mapping[str, StopReason] = {
    "end_turn": StopReason.STOP,
    "stop_sequence": StopReason.STOP,
    "pause_turn": StopReason.STOP,
    "tool_use": StopReason.TOOL_USE,
    "max_tokens": StopReason.LENGTH,
    "model_context_window_exceeded": StopReason.LENGTH,
    "refusal": StopReason.CONTENT_FILTER,
}

# error.type -> (error class, the HTTP status the API documents for that type).
_ERROR_TYPES: Mapping[str, Tuple[Type[LlmError], int]] = {
    "invalid_request_error": (ProviderError, 400),
    "authentication_error": (AuthenticationError, 401),
    "billing_error": (ProviderError, 402),
    "permission_error": (AuthenticationError, 403),
    "not_found_error": (ProviderError, 404),
    "request_too_large": (ProviderError, 413),
    "rate_limit_error": (RateLimitError, 429),
    "api_error": (ServerError, 500),
    "timeout_error": (ProviderError, 504),
    "overloaded_error": (ServerError, 529),
}


def _mask_value(value: Any, secret: Optional[str]) -> Any:
    """Return ``value`` (parsed JSON) with ``secret`` masked in every string."""
    if not secret:
        return value
    if isinstance(value, str):
        return mask(value, secret)
    if isinstance(value, dict):
        return {mask(str(k), secret): _mask_value(v, secret) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_value(v, secret) for v in value]
    return value


def _stop_reason(value: Optional[str], has_tool_calls: bool) -> StopReason:
    if value is None:
        return StopReason.TOOL_USE if has_tool_calls else StopReason.STOP
    return _STOP_REASONS.get(value, StopReason.ERROR)


def _count(raw: Mapping[str, Any], key: str) -> int:
    value = raw.get(key)
    return value if isinstance(value, int) else 0


def _usage(raw: Mapping[str, Any]) -> Usage:
    cache_read = _count(raw, "cache_read_input_tokens")
    cache_write = _count(raw, "cache_creation_input_tokens")
    return Usage(
        prompt_tokens=_count(raw, "input_tokens") + cache_read + cache_write,
        completion_tokens=_count(raw, "output_tokens"),
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
    )


def _tool_input(value: Any) -> Any:
    # The API documents an object; anything else is kept as raw JSON text so
    # the registry refuses it instead of running the tool with a guess.
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    return json.dumps(value)


def _block_from_wire(block: Mapping[str, Any]) -> Optional[ContentBlock]:
    kind = block["type"]
    if kind == "text":
        return TextBlock(block["text"])
    if kind == "tool_use":
        return ToolUseBlock(block["id"], block["name"], _tool_input(block.get("input")))
    if kind == "thinking":
        return ThinkingBlock(block["thinking"], block.get("signature"))
    if kind == "redacted_thinking":
        return ThinkingBlock("", None, block["data"])
    # Server tool blocks, citations-only blocks and future types have no
    # provider-neutral form; they are left out of the message.
    logger.debug("Anthropic: skipping a content block of type %r", kind)
    return None


def _block_to_wire(block: ContentBlock) -> Optional[Dict[str, Any]]:
    if isinstance(block, TextBlock):
        # The API refuses empty text blocks.
        return {"type": "text", "text": block.text} if block.text else None
    if isinstance(block, ToolUseBlock):
        tool_input = block.input if isinstance(block.input, dict) else {}
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": tool_input}
    if isinstance(block, ToolResultBlock):
        return {"type": "tool_result", "tool_use_id": block.tool_use_id, "content": block.content,
                "is_error": block.is_error}
    if isinstance(block, ThinkingBlock):
        if block.redacted_data is not None:
            return {"type": "redacted_thinking", "data": block.redacted_data}
        if block.signature is not None:
            return {"type": "thinking", "thinking": block.text, "signature": block.signature}
        # Unsigned reasoning (from another provider) would be refused by the API.
        return None
    raise TypeError(f"Anthropic: cannot send a content block of type {type(block).__name__}")


def _messages_to_wire(messages: Tuple[Message, ...]) -> Tuple[List[str], List[Dict[str, Any]]]:
    """Return the text of system messages and the alternating wire messages."""
    system: List[str] = []
    wire: List[Dict[str, Any]] = []
    for message in messages:
        if message.role is Role.SYSTEM:
            if message.text:
                system.append(message.text)
            continue
        role = "assistant" if message.role is Role.ASSISTANT else "user"
        blocks = [b for b in (_block_to_wire(block) for block in message.content) if b is not None]
        if not blocks:
            continue
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})
    return system, wire


def _tool_choice_to_wire(choice: Any) -> Dict[str, Any]:
    if isinstance(choice, ToolChoice):
        return {"type": "tool", "name": choice.name}
    if choice == "required":
        return {"type": "any"}
    return {"type": choice}  # "auto" or "none"


# The stream event types that _StreamTranslator has an ``_on_<type>`` method for.
_STREAM_HANDLERS = frozenset(
    ["message_start", "content_block_start", "content_block_delta", "content_block_stop",
     "message_delta", "message_stop"]
)


class _OpenBlock:
    __slots__ = ("index", "kind", "tool_call_id", "tool_name", "parts", "start_input")

    def __init__(self, index: int, kind: str, tool_call_id: Optional[str] = None,
                 tool_name: Optional[str] = None, start_input: Any = None) -> None:
        self.index = index
        self.kind = kind
        self.tool_call_id = tool_call_id
        self.tool_name = tool_name
        self.parts: List[str] = []
        self.start_input = start_input


class _StreamTranslator:
    """Turns the decoded Anthropic stream events into our events (no I/O).

    Block indexes are renumbered from 0 over the blocks we translate, which
    keeps Anthropic's own indexes unless the stream holds a block type we
    skip (a server tool block, say).
    """

    def __init__(self, provider: AnthropicProvider, model: str) -> None:
        self._provider = provider
        self.partial = PartialMessageResponse()
        self.model = model
        self.done = False
        self._raw_usage: Dict[str, Any] = {}
        self._blocks: Dict[int, Optional[_OpenBlock]] = {}
        self._next_index = 0

    def feed(self, data: Mapping[str, Any], sse_event: str) -> List[StreamEvent]:
        kind = data.get("type") or sse_event
        if kind == "error":
            raise self._provider._api_error(data, streaming=True)
        if kind not in _STREAM_HANDLERS:
            if kind != "ping":
                logger.debug("Anthropic: ignoring stream event %r", kind)
            return []
        events: List[StreamEvent] = getattr(self, "_on_" + kind)(data)
        for event in events:
            self.partial.apply(event)
        return events

    def _on_message_start(self, data: Mapping[str, Any]) -> List[StreamEvent]:
        message = data["message"]
        self.model = message.get("model") or self.model
        self._raw_usage.update(message.get("usage") or {})
        return [MessageStart(message["id"], self.model)]

    def _on_content_block_start(self, data: Mapping[str, Any]) -> List[StreamEvent]:
        block = data["content_block"]
        kind = block["type"]
        wire_index = data["index"]
        if kind not in ("text", "tool_use", "thinking", "redacted_thinking"):
            logger.debug("Anthropic: skipping a streamed content block of type %r", kind)
            self._blocks[wire_index] = None
            return []
        index = self._next_index
        self._next_index += 1
        if kind == "tool_use":
            open_block = _OpenBlock(index, kind, block["id"], block["name"], block.get("input"))
            self._blocks[wire_index] = open_block
            return [ContentBlockStart(index, "tool_use", tool_call_id=block["id"], tool_name=block["name"])]
        if kind == "redacted_thinking":
            self._blocks[wire_index] = _OpenBlock(index, "thinking")
            return [ContentBlockStart(index, "thinking", redacted_data=block["data"])]
        self._blocks[wire_index] = _OpenBlock(index, kind)
        events: List[StreamEvent] = [ContentBlockStart(index, kind)]
        initial = block.get("text" if kind == "text" else "thinking")
        if initial:
            events.append(TextDelta(initial) if kind == "text" else ThinkingDelta(initial))
        return events

    def _open(self, data: Mapping[str, Any]) -> Optional[_OpenBlock]:
        wire_index = data["index"]
        if wire_index not in self._blocks:
            raise ResponseParseError(f"Anthropic sent {data.get('type')} for block {wire_index!r}, never started")
        return self._blocks[wire_index]

    def _on_content_block_delta(self, data: Mapping[str, Any]) -> List[StreamEvent]:
        block = self._open(data)
        if block is None:
            return []
        delta = data["delta"]
        kind = delta["type"]
        if kind == "text_delta" and delta["text"]:
            return [TextDelta(delta["text"])]
        if kind == "input_json_delta" and block.kind == "tool_use" and delta["partial_json"]:
            block.parts.append(delta["partial_json"])
            return [ToolCallArgumentsDelta(block.index, block.tool_call_id or "", delta["partial_json"])]
        if kind == "thinking_delta" and delta["thinking"]:
            return [ThinkingDelta(delta["thinking"])]
        if kind == "signature_delta":
            return [ThinkingDelta("", signature=delta["signature"])]
        return []

    def _on_content_block_stop(self, data: Mapping[str, Any]) -> List[StreamEvent]:
        block = self._open(data)
        if block is None:
            return []
        events: List[StreamEvent] = []
        if block.kind == "tool_use":
            arguments = "".join(block.parts)
            if not block.parts and isinstance(block.start_input, dict) and block.start_input:
                arguments = json.dumps(block.start_input)
            events.append(ToolCallEnd(block.tool_call_id or "", block.tool_name or "", arguments))
        events.append(ContentBlockEnd(block.index))
        return events

    def _on_message_delta(self, data: Mapping[str, Any]) -> List[StreamEvent]:
        stop = (data.get("delta") or {}).get("stop_reason")
        if stop is not None:
            self.partial.stop_reason = _stop_reason(stop, False)
        # Counts here are cumulative: they replace those of message_start.
        self._raw_usage.update({k: v for k, v in (data.get("usage") or {}).items() if v is not None})
        return []

    def usage_so_far(self) -> Optional[Usage]:
        """Return the usage reported before the stream ended, or None."""
        return _usage(self._raw_usage) if self._raw_usage and not self.done else None

    def _on_message_stop(self, data: Mapping[str, Any]) -> List[StreamEvent]:
        self.done = True
        usage = _usage(self._raw_usage)
        cost = CostUpdate(usage, self._provider._cost(usage, self.model))
        self.partial.apply(cost)
        return [cost, MessageComplete(self.partial.finalize())]



class AnthropicProvider(HttpProvider):
    """The Anthropic Messages API (``POST {base_url}/v1/messages``).

    Args:
        model: the default model, used when a request's ``model`` is None.
        api_key: the key; None reads ``ANTHROPIC_API_KEY`` (here, once). With
            no key no auth header is sent.
        base_url: the API root without ``/v1``; None reads
            ``ANTHROPIC_BASE_URL``, then uses :data:`DEFAULT_BASE_URL`.
        timeout: seconds for connecting and for each read.
        session: a ``requests.Session`` to use (not closed by :meth:`~agcore_sync.llm.provider.LlmProvider.close`);
            None creates one the provider owns.
        extra_headers: more headers for every request.
        anthropic_version: the ``anthropic-version`` header.
        pricing: prices for ``CostUpdate.cost_usd`` (None: the built-in table).

    The provider starts no thread. ``chat_stream`` returns a generator; closing
    it closes the HTTP response.

    .. versionadded:: 0.1
    """

    provider_name = "Anthropic"

    def __init__(
        self,
        model: Optional[str] = None,
        api_key: Optional[str] = None,
        base_url: Optional[str] = None,
        timeout: float = 60.0,
        session: Optional[requests.Session] = None,
        extra_headers: Optional[Mapping[str, str]] = None,
        *,
        anthropic_version: str = DEFAULT_ANTHROPIC_VERSION,
        pricing: PricingArg = None,
    ) -> None:
        if api_key is None:
            api_key = os.environ.get("ANTHROPIC_API_KEY")
        if base_url is None:
            base_url = os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL
        super().__init__(model, api_key, base_url, timeout, session, extra_headers, pricing)
        #: The ``anthropic-version`` header value.
        self.anthropic_version = anthropic_version

    @property
    def messages_url(self) -> str:
        """The URL requests are posted to."""
        return f"{self.base_url}/v1/messages"

    def _auth_headers(self) -> Dict[str, str]:
        # _post sends Content-Type; the version header rides along with the key.
        headers = {"anthropic-version": self.anthropic_version}
        if self._api_key:
            headers["x-api-key"] = self._api_key
        return headers

    # -- requests -------------------------------------------------------------

    def _request_body(self, request: MessageRequest, *, stream: bool) -> Dict[str, Any]:
        model = self._model_for(request)
        system, messages = _messages_to_wire(request.messages)
        if request.system:
            system.insert(0, request.system)
        body: Dict[str, Any] = {
            "model": model,
            "max_tokens": DEFAULT_MAX_TOKENS if request.max_tokens is None else request.max_tokens,
        }
        if system:
            body["system"] = "\n\n".join(system)
        body["messages"] = messages
        if request.tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in request.tools
            ]
            body["tool_choice"] = _tool_choice_to_wire(request.tool_choice)
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.stop:
            body["stop_sequences"] = list(request.stop)
        if stream:
            body["stream"] = True
        return body

    def chat(self, request: MessageRequest) -> MessageResponse:
        """Send ``request`` and return the whole response.

        Raises:
            LlmError: no model anywhere (before sending), or any failure,
                typed as the :mod:`agcore_sync.llm.provider` tree says.
        """
        body = self._request_body(request, stream=False)
        response = self._post(self.messages_url, body, stream=False)
        try:
            data = self._json(response)
        finally:
            response.close()
        return self._parse_response(data)

    def chat_stream(self, request: MessageRequest) -> Iterator[StreamEvent]:
        """Send ``request`` with ``stream: true`` and yield events as they arrive.

        Nothing is sent until the first ``next()``. Closing the generator
        closes the HTTP response.

        Raises:
            LlmError: from the iterator: an HTTP error status, an ``error``
                event (typed by its ``error.type``), a chunk that is not JSON
                (:class:`ResponseParseError`), or a stream that ends before
                ``message_stop`` (:class:`LlmConnectionError`).
        """
        body = self._request_body(request, stream=True)
        response = self._post(self.messages_url, body, stream=True)
        translator = _StreamTranslator(self, body["model"])
        try:
            yield from self._translate(response, translator)
        except LlmError:
            # message_start reported the input tokens: they are billed even
            # though the stream failed, so report them before the error.
            usage = translator.usage_so_far()
            if usage is not None:
                yield CostUpdate(usage, self._cost(usage, translator.model))
            raise
        finally:
            response.close()

    def _translate(self, response: requests.Response, translator: _StreamTranslator) -> Iterator[StreamEvent]:
        """Yield the events of ``response``'s SSE stream, translated."""
        for sse in self._sse_events(response):
            data = self._chunk_json(sse.data)
            if not isinstance(data, dict):
                raise ResponseParseError("Anthropic sent a stream chunk that is not a JSON object",
                                         body=mask(sse.data[:1000], self._api_key))
            try:
                events = translator.feed(data, sse.event)
            except (KeyError, TypeError, AttributeError) as exc:
                raise ResponseParseError(f"Anthropic sent a {data.get('type')!r} event of an unknown shape",
                                         body=_mask_value(data, self._api_key)) from exc
            yield from events
            if translator.done:
                return
        raise self._stream_cut()

    # -- responses ------------------------------------------------------------

    def _parse_response(self, data: Any) -> MessageResponse:
        if isinstance(data, dict) and data.get("type") == "error":
            raise self._api_error(data, streaming=False)
        try:
            blocks = [b for b in (_block_from_wire(block) for block in data["content"]) if b is not None]
            message = Message(Role.ASSISTANT, blocks)
            return MessageResponse(
                data["id"],
                data["model"],
                message,
                _stop_reason(data.get("stop_reason"), bool(message.tool_uses)),
                _usage(data.get("usage") or {}),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ResponseParseError("Anthropic sent a response body of an unknown shape",
                                     body=_mask_value(data, self._api_key)) from exc

    def _api_error(self, data: Mapping[str, Any], *, streaming: bool) -> LlmError:
        """Return the typed error for an ``{"type": "error", "error": {...}}`` payload."""
        error = data.get("error")
        error = error if isinstance(error, dict) else {}
        error_type = error.get("type")
        cls, status = _ERROR_TYPES.get(error_type, (ProviderError, None))  # type: ignore[arg-type]
        where = "stream" if streaming else "response"
        message = f"Anthropic {where} error {error_type or 'unknown'}"
        if isinstance(error.get("message"), str):
            message += f": {error['message']}"
        return cls(mask(message, self._api_key), status_code=status, body=_mask_value(dict(data), self._api_key))
