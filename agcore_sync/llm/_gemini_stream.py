"""Gemini ``streamGenerateContent?alt=sse`` streams translated into stream events (pure, no I/O).

Each SSE event is a whole ``GenerateContentResponse`` chunk; its parts are
read with the rule of :func:`agcore_sync.llm._gemini_read.blocks_of_part`,
and merged across chunks as the text arrives:

- text parts with no signature extend the open text block; thought parts
  extend the open thinking block (a signature on one updates that block's
  envelope);
- a text part with a ``thoughtSignature`` (the start of a new wire part)
  closes the open block, and its signature block comes before the new text
  block, as in a plain response;
- a ``functionCall`` arrives whole in one part: it is a tool block opened,
  given its arguments in one delta and closed at once (so parallel calls are
  blocks in order), after its signature block if it has one.

The end: Gemini's stream has no end marker after its last chunk; the chunk
whose candidate carries ``finishReason`` (or a ``promptFeedback.blockReason``
without candidates: a blocked prompt, an empty response with the
CONTENT_FILTER stop reason) is the last one, and sets :attr:`done`. Usage
is the last ``usageMetadata`` seen (each chunk repeats the running counts).
A body that ends before such a chunk is a cut stream
(:class:`~agcore_sync.llm.errors.LlmConnectionError`, raised by the driver);
an ``{"error": ...}`` chunk raises its typed error.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional

from agcore_sync._http.masking import Masker
from agcore_sync._http.sse import SseEvent
from agcore_sync.llm._gemini_read import (
    blocks_of_part,
    error_from_body,
    first_candidate,
    stop_reason,
    usage_from_wire,
)
from agcore_sync.llm._gemini_wire import TOOL_ID_PREFIX
from agcore_sync.llm._stream_translator import StreamTranslator
from agcore_sync.llm._tool_calls import ToolCallIds
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
from agcore_sync.llm.types import StopReason, TextBlock, ThinkingBlock, ToolUseBlock, Usage

__all__ = ["GeminiStreamTranslator"]


class GeminiStreamTranslator(StreamTranslator):
    """Turns Gemini SSE chunks into stream events (see the module docstring).

    Args:
        model: the model asked for.
        pricing: prices for the ``CostUpdate``.
        masker: hides the API key in errors.
        provider_name: "Gemini" or "Vertex AI", for error messages.
    """

    def __init__(self, model: str, *, pricing: PricingArg, masker: Masker, provider_name: str = "Gemini") -> None:
        super().__init__(model, pricing=pricing, masker=masker)
        self.provider_name = provider_name
        self._partial = PartialMessageResponse()
        self._ids = ToolCallIds(TOOL_ID_PREFIX)
        self._started = False
        self._next_index = 0
        self._open_kind: Optional[str] = None  # "text" or "thinking" while a block is open
        self._open_index = -1
        self._raw_usage: Optional[Dict[str, Any]] = None
        self._has_calls = False

    def feed(self, event: SseEvent) -> List[StreamEvent]:
        """Translate one chunk; the chunk with ``finishReason`` ends the response."""
        chunk = self._decode(event.data)
        if isinstance(chunk.get("error"), dict) and not chunk.get("candidates"):
            raise error_from_body(chunk, self.provider_name, self._masker)
        try:
            events = self._chunk(chunk)
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise ResponseParseError(f"{self.provider_name} sent a stream chunk of an unknown shape",
                                     body=self._masker.json(chunk)) from exc
        for item in events:
            self._partial.apply(item)
        if self.done:
            events.append(MessageComplete(self._partial.finalize()))
        return events

    def unreported_usage(self) -> Optional[Usage]:
        """Return the last ``usageMetadata`` until the final chunk reported it."""
        return None if self.done or self._raw_usage is None else usage_from_wire(self._raw_usage)

    # -- one chunk -----------------------------------------------------------

    def _chunk(self, chunk: Mapping[str, Any]) -> List[StreamEvent]:
        events: List[StreamEvent] = []
        if not self._started:
            self._started = True
            self.model = str(chunk.get("modelVersion") or self.model)
            events.append(MessageStart(str(chunk.get("responseId") or ""), self.model))
        if isinstance(chunk.get("usageMetadata"), dict):
            self._raw_usage = chunk["usageMetadata"]
        candidate = first_candidate(chunk)
        finish: Optional[str] = None
        if candidate is not None:
            content = candidate.get("content") or {}
            for part in content.get("parts") or ():
                self._part(part, events)
            finish = candidate.get("finishReason")
        blocked = candidate is None and bool((chunk.get("promptFeedback") or {}).get("blockReason"))
        if finish is None and not blocked:
            return events
        self._close_open(events)
        self.done = True
        self._partial.stop_reason = StopReason.CONTENT_FILTER if blocked else stop_reason(finish, self._has_calls)
        events.append(self.cost_update(usage_from_wire(self._raw_usage or {})))
        return events

    def _part(self, part: Mapping[str, Any], events: List[StreamEvent]) -> None:
        if self._open_kind == "text" and len(part) == 1:
            # The common chunk: a piece of plain text extending the open block (no block value built).
            text = part.get("text")
            if isinstance(text, str):
                if text:
                    events.append(TextDelta(text))
                return
        blocks = blocks_of_part(part, self._ids)
        if not blocks:
            return
        first = blocks[0]
        if len(blocks) == 1 and isinstance(first, TextBlock) and self._open_kind == "text":
            events.append(TextDelta(first.text))
            return
        if (len(blocks) == 1 and isinstance(first, ThinkingBlock) and first.text
                and self._open_kind == "thinking"):
            # A signature on a later piece of the thought updates the block's envelope.
            events.append(ThinkingDelta(first.text, signature=first.signature if "thoughtSignature" in part else None))
            return
        for block in blocks:
            self._close_open(events)
            if isinstance(block, ToolUseBlock):
                self._tool_call(block, events)
                continue
            kind = "thinking" if isinstance(block, ThinkingBlock) else "text"
            self._open_kind, self._open_index = kind, self._take_index()
            events.append(ContentBlockStart(self._open_index, kind))
            if isinstance(block, ThinkingBlock):
                events.append(ThinkingDelta(block.text, signature=block.signature))
                if not block.text:
                    self._close_open(events)  # a signature alone: nothing extends it
            elif isinstance(block, TextBlock):
                events.append(TextDelta(block.text))

    def _tool_call(self, block: ToolUseBlock, events: List[StreamEvent]) -> None:
        self._has_calls = True
        index = self._take_index()
        arguments = block.input if isinstance(block.input, str) else json.dumps(block.input, ensure_ascii=False)
        events.append(ContentBlockStart(index, "tool_use", tool_call_id=block.id, tool_name=block.name))
        events.append(ToolCallArgumentsDelta(index, block.id, arguments))
        events.append(ToolCallEnd(block.id, block.name, arguments))
        events.append(ContentBlockEnd(index))

    def _close_open(self, events: List[StreamEvent]) -> None:
        if self._open_kind is not None:
            events.append(ContentBlockEnd(self._open_index))
            self._open_kind = None

    def _take_index(self) -> int:
        index = self._next_index
        self._next_index += 1
        return index
