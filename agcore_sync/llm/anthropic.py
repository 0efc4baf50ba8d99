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
- Images and documents are ``image`` / ``document`` blocks (a ``base64``,
  ``url`` or ``text`` source); a tool result's images stay inside its
  ``tool_result``.
- Request controls: ``output`` and ``reasoning_effort`` share one
  ``output_config`` (``format``, ``effort``); ``thinking`` is
  ``{"type": "enabled", "budget_tokens": n}`` or ``{"type": "adaptive"}``
  (with no ``max_tokens`` on the request, ``max_tokens`` is the budget plus
  :data:`DEFAULT_MAX_TOKENS`); ``prompt_cache`` places at most four
  ``cache_control`` breakpoints: the last tool, the system prompt, the last
  message, and the message that was last in the previous round of a tool
  loop (so each round reads the previous round's cache); ``extra_body`` is
  merged last, its keys replacing the body's.
- Streams are read as their bytes arrive and translated event by event by
  :class:`~agcore_sync.llm._anthropic_stream.AnthropicStreamTranslator`; the
  closing ``MessageComplete`` is built from the very events yielded, so
  replaying them gives the same response.
- A ``tool_use`` block without an id (some Anthropic-compatible servers)
  gets a new ``toolu_<hex>`` id, used in every event and block after.

The provider holds a ``requests.Session`` (its own unless one is given) and no
thread; a finished call, streamed or not, leaves its connection in the
session's pool for the next one. The API key is kept out of ``repr``, logs and
every error.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional, Tuple

import requests

from agcore_sync import _instrument
from agcore_sync.llm._anthropic_wire import TOOL_ID_PREFIX, api_error, stop_reason, usage_from_wire
from agcore_sync.llm._http_provider import HttpProvider
from agcore_sync.llm._media_wire import anthropic_block, anthropic_tool_result_content
from agcore_sync.llm._thinking_origin import ANTHROPIC, origin_of
from agcore_sync.llm._tool_calls import ToolCallIds, wire_tool_id
from agcore_sync.llm.cost import PricingArg
from agcore_sync.llm.errors import ResponseParseError
from agcore_sync.llm.types import (
    ContentBlock,
    Message,
    MessageRequest,
    MessageResponse,
    Role,
    TextBlock,
    ThinkingBlock,
    ToolChoice,
    ToolResultBlock,
    ToolUseBlock,
)

if TYPE_CHECKING:  # pragma: no cover - the stream events load with the first stream
    from agcore_sync.llm.events import StreamEvent

__all__ = [
    "AnthropicProvider",
    "DEFAULT_BASE_URL",
    "DEFAULT_ANTHROPIC_VERSION",
    "DEFAULT_MAX_TOKENS",
]

logger = _instrument.get_logger("agcore_sync.llm")

#: The public endpoint, without ``/v1``.
DEFAULT_BASE_URL = "https://api.anthropic.com"

#: The ``anthropic-version`` header sent unless the constructor says otherwise.
DEFAULT_ANTHROPIC_VERSION = "2023-06-01"

#: ``max_tokens`` sent when the request has none: the API requires the field.
DEFAULT_MAX_TOKENS = 4096

def _tool_input(value: Any) -> Any:
    # The API documents an object; anything else is kept as raw JSON text so
    # the registry refuses it instead of running the tool with a guess.
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    return json.dumps(value)


def _block_from_wire(block: Mapping[str, Any], ids: ToolCallIds) -> Optional[ContentBlock]:
    kind = block["type"]
    if kind == "text":
        return TextBlock(block["text"])
    if kind == "tool_use":
        return ToolUseBlock(ids.take(block.get("id")), block["name"], _tool_input(block.get("input")))
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
        # The API refuses empty and whitespace-only text blocks ("\n\n" before a tool call from another provider).
        return {"type": "text", "text": block.text} if block.text.strip() else None
    if isinstance(block, ToolUseBlock):
        tool_input = block.input if isinstance(block.input, dict) else {}
        return {"type": "tool_use", "id": wire_tool_id(block.id), "name": block.name, "input": tool_input}
    if isinstance(block, ToolResultBlock):
        return {"type": "tool_result", "tool_use_id": wire_tool_id(block.tool_use_id),
                "content": anthropic_tool_result_content(block.content), "is_error": block.is_error}
    if isinstance(block, ThinkingBlock):
        if origin_of(block) != ANTHROPIC:
            # Unsigned reasoning, or another provider's blob (a Responses
            # reasoning item): the API would refuse it.
            return None
        if block.redacted_data is not None:
            return {"type": "redacted_thinking", "data": block.redacted_data}
        return {"type": "thinking", "thinking": block.text, "signature": block.signature}
    if block.type in ("image", "document"):
        return anthropic_block(block)
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


#: The ``cache_control`` of every breakpoint (the default five-minute cache).
CACHE_CONTROL = {"type": "ephemeral"}


def _place_cache_breakpoints(body: Dict[str, Any]) -> None:
    """Put ``cache_control`` breakpoints on a request body, at most four.

    1. the last tool definition (caches every tool);
    2. the system prompt (sent as one text block);
    3. the last block of the last message: this request's whole prefix is
       written to the cache;
    4. the last block of the message two before it (the user message that
       ended the previous request of a tool loop: ``user``, ``assistant``,
       ``user``): the next round reads the previous round's cache there,
       however many blocks the round added.

    Tools, system and earlier messages are sent identically round after
    round, so the cached prefix stays valid. Thinking blocks are never
    marked (the API refuses ``cache_control`` on them); an empty block list
    is left alone.
    """
    tools = body.get("tools")
    if tools:
        tools[-1] = {**tools[-1], "cache_control": dict(CACHE_CONTROL)}
    system = body.get("system")
    if isinstance(system, str) and system:
        body["system"] = [{"type": "text", "text": system, "cache_control": dict(CACHE_CONTROL)}]
    messages = body.get("messages") or []
    for index in (len(messages) - 1, len(messages) - 3):
        if index < 0:
            continue
        content = messages[index]["content"]
        for position in range(len(content) - 1, -1, -1):
            if content[position].get("type") not in ("thinking", "redacted_thinking"):
                content[position] = {**content[position], "cache_control": dict(CACHE_CONTROL)}
                break


def _thinking_to_wire(thinking: Any) -> Dict[str, Any]:
    if thinking == "adaptive":
        return {"type": "adaptive"}
    return {"type": "enabled", "budget_tokens": int(thinking)}


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
        max_tokens = request.max_tokens
        if max_tokens is None:
            budget = request.thinking if isinstance(request.thinking, int) else 0
            max_tokens = DEFAULT_MAX_TOKENS + budget  # the budget must stay below max_tokens
        body: Dict[str, Any] = {"model": model, "max_tokens": max_tokens}
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
        if request.thinking is not None:
            body["thinking"] = _thinking_to_wire(request.thinking)
        output_config: Dict[str, Any] = {}
        if request.output is not None:
            # Loaded here: a request with an output schema means the module is loaded already.
            from agcore_sync.llm.output import anthropic_output_format

            output_config["format"] = anthropic_output_format(request.output)
        if request.reasoning_effort is not None:
            output_config["effort"] = request.reasoning_effort
        if output_config:
            body["output_config"] = output_config
        if request.prompt_cache:
            _place_cache_breakpoints(body)
        if stream:
            body["stream"] = True
        if request.extra_body:
            body.update(request.extra_body)
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
        from agcore_sync.llm._anthropic_stream import AnthropicStreamTranslator  # the stream events load here, once

        body = self._request_body(request, stream=True)
        translator = AnthropicStreamTranslator(body["model"], pricing=self.pricing, masker=self._masker)
        yield from self._stream(self.messages_url, body, translator)

    # -- responses ------------------------------------------------------------

    def _parse_response(self, data: Any) -> MessageResponse:
        if isinstance(data, dict) and data.get("type") == "error":
            raise api_error(data, streaming=False, masker=self._masker)
        try:
            ids = ToolCallIds(TOOL_ID_PREFIX)
            blocks = [b for b in (_block_from_wire(block, ids) for block in data["content"]) if b is not None]
            message = Message(Role.ASSISTANT, blocks)
            return MessageResponse(
                data["id"],
                data["model"],
                message,
                stop_reason(data.get("stop_reason"), bool(message.tool_uses)),
                usage_from_wire(data.get("usage") or {}),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ResponseParseError("Anthropic sent a response body of an unknown shape",
                                     body=self._masker.json(data)) from exc
