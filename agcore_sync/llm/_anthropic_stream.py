"""Anthropic Messages streams translated into stream events (pure, no I/O).

:class:`AnthropicStreamTranslator` takes the SSE events of a ``stream: true``
Messages response (``message_start``, ``content_block_start`` /
``_delta`` / ``_stop``, ``message_delta``, ``message_stop``, ``ping``,
``error``) and returns the events of :mod:`agcore_sync.llm.events`; the
closing ``MessageComplete`` is built from the very events returned, so
replaying them gives the same response. The wire helpers the plain response
needs as well (usage, stop reasons, error payloads) live in
:mod:`agcore_sync.llm._anthropic_wire`, so a plain ``chat`` loads no stream
events; :mod:`agcore_sync.llm.anthropic` does the sending.

Block indexes are renumbered from 0 over the blocks translated, which keeps
Anthropic's own indexes unless the stream holds a block type we skip (a
server tool block, say). A tool call with no arguments (``input: {}`` and no
or only empty ``input_json_delta``) ends with ``"{}"``; one without an id
gets a new ``toolu_<hex>`` id.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional

from agcore_sync import _instrument
from agcore_sync._http.masking import Masker
from agcore_sync._http.sse import SseEvent
from agcore_sync.llm._anthropic_wire import TOOL_ID_PREFIX, api_error, stop_reason, usage_from_wire
from agcore_sync.llm._stream_translator import StreamTranslator
from agcore_sync.llm._tool_calls import ToolCallIds, arguments_text
from agcore_sync.llm.cost import PricingArg
from agcore_sync.llm.errors import ResponseParseError
from agcore_sync.llm.events import (
    ContentBlockEnd,
    ContentBlockStart,
    MessageComplete,
    MessageStart,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallArgumentsDelta,
    ToolCallEnd,
)
from agcore_sync.llm.partial import PartialMessageResponse
from agcore_sync.llm.types import Usage

__all__ = ["AnthropicStreamTranslator"]

logger = _instrument.get_logger("agcore_sync.llm")

# The stream event types AnthropicStreamTranslator has an ``_on_<type>`` method for.
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


class AnthropicStreamTranslator(StreamTranslator):
    """Turns Anthropic stream events into stream events (see the module docstring).

    Args:
        model: the model asked for.
        pricing: prices for the ``CostUpdate``.
        masker: hides the API key in errors.
    """

    provider_name = "Anthropic"

    def __init__(self, model: str, *, pricing: PricingArg, masker: Masker) -> None:
        super().__init__(model, pricing=pricing, masker=masker)
        self._partial = PartialMessageResponse()
        self._ids = ToolCallIds(TOOL_ID_PREFIX)
        self._raw_usage: Dict[str, Any] = {}
        self._blocks: Dict[Any, Optional[_OpenBlock]] = {}
        self._next_index = 0

    def feed(self, event: SseEvent) -> List[StreamEvent]:
        """Translate one SSE event; ``message_stop`` ends the response (see the base class)."""
        data = self._decode(event.data)
        kind = data.get("type") or event.event
        if kind == "error":
            raise api_error(data, streaming=True, masker=self._masker)
        if kind not in _STREAM_HANDLERS:
            if kind != "ping":
                logger.debug("Anthropic: ignoring stream event %r", kind)
            return []
        try:
            events: List[StreamEvent] = getattr(self, "_on_" + kind)(data)
        except (KeyError, TypeError, AttributeError) as exc:
            raise ResponseParseError(f"Anthropic sent a {kind!r} event of an unknown shape",
                                     body=self._masker.json(data)) from exc
        for item in events:
            self._partial.apply(item)
        if kind == "message_stop":
            self.done = True
            events.append(MessageComplete(self._partial.finalize()))
        return events

    def unreported_usage(self) -> Optional[Usage]:
        """Return the usage of ``message_start`` / ``message_delta`` until ``message_stop`` reported it."""
        return usage_from_wire(self._raw_usage) if self._raw_usage and not self.done else None

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
            call_id = self._ids.take(block.get("id"))
            self._blocks[wire_index] = _OpenBlock(index, kind, call_id, block["name"], block.get("input"))
            return [ContentBlockStart(index, "tool_use", tool_call_id=call_id, tool_name=block["name"])]
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
            if not arguments.strip() and isinstance(block.start_input, dict) and block.start_input:
                # Arguments given whole in content_block_start, never streamed.
                arguments = json.dumps(block.start_input)
            events.append(ToolCallEnd(block.tool_call_id or "", block.tool_name or "", arguments_text(arguments)))
        events.append(ContentBlockEnd(block.index))
        return events

    def _on_message_delta(self, data: Mapping[str, Any]) -> List[StreamEvent]:
        stop = (data.get("delta") or {}).get("stop_reason")
        if stop is not None:
            self._partial.stop_reason = stop_reason(stop, False)
        # Counts here are cumulative: they replace those of message_start.
        self._raw_usage.update({k: v for k, v in (data.get("usage") or {}).items() if v is not None})
        return []

    def _on_message_stop(self, data: Mapping[str, Any]) -> List[StreamEvent]:
        return [self.cost_update(usage_from_wire(self._raw_usage))]
