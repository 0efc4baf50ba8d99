"""Chat Completions streams translated into stream events (pure, no I/O).

:class:`OpenAIStreamTranslator` takes the SSE events of a ``stream: true``
Chat Completions response (``chat.completion.chunk`` objects, then
``data: [DONE]``) and returns the events of :mod:`agcore_sync.llm.events` in
the order DESIGN.md pins. The wire helpers both the streamed and the plain
response need (usage, stop reasons, error bodies) live in
:mod:`agcore_sync.llm._openai_wire`, so a plain ``chat`` loads no stream
events; :mod:`agcore_sync.llm.openai` does the sending.

Block rules: indexes count from 0 in order of first appearance (not
``tool_calls[].index``). OpenAI interleaves, so a text or thinking block ends
when a block of another kind starts; tool blocks stay open (their argument
pieces may interleave) and all end, in index order, when ``finish_reason``
arrives, or at ``[DONE]`` if it never did. Only choice 0 is read (the
provider never asks for ``n > 1``).
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from agcore_sync._http.masking import Masker
from agcore_sync._http.sse import SseEvent
from agcore_sync.llm._openai_wire import error_from_body, stop_reason, usage_from_wire
from agcore_sync.llm._stream_translator import StreamTranslator
from agcore_sync.llm._tool_calls import ToolCallIds, arguments_text
from agcore_sync.llm.cost import PricingArg
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

__all__ = ["OpenAIStreamTranslator", "DONE"]

#: The data of the event that ends a stream.
DONE = "[DONE]"


class _ToolCall:
    __slots__ = ("index", "id", "name", "parts", "done")

    def __init__(self, index: int, call_id: str, name: str) -> None:
        self.index = index
        self.id = call_id
        self.name = name
        self.parts: List[str] = []
        self.done = False


class OpenAIStreamTranslator(StreamTranslator):
    """Turns ``chat.completion.chunk`` events into stream events (see the module docstring).

    Args:
        model: the model asked for.
        pricing: prices for the ``CostUpdate``.
        masker: hides the API key in errors.
    """

    provider_name = "OpenAI"

    def __init__(self, model: str, *, pricing: PricingArg, masker: Masker) -> None:
        super().__init__(model, pricing=pricing, masker=masker)
        self._partial = PartialMessageResponse()
        self._ids = ToolCallIds("call_")
        self._started = False
        self._next_index = 0
        self._open_kind: Optional[str] = None
        self._open_index = -1
        self._tools: Dict[Any, _ToolCall] = {}  # keyed by tool_calls[].index; insertion = block order
        self._finish_reason: Optional[str] = None
        self._refused = False
        self._usage: Optional[Usage] = None

    def feed(self, event: SseEvent) -> List[StreamEvent]:
        """Translate one SSE event; ``[DONE]`` closes the response (see the base class)."""
        if event.data.strip() == DONE:
            self.done = True
            events = self._finish()
        else:
            chunk = self._decode(event.data)
            if chunk.get("error") and not chunk.get("choices"):
                raise error_from_body(chunk, self._masker)
            events = self._chunk(chunk)
        for item in events:
            self._partial.apply(item)
        if self.done:
            self._partial.stop_reason = stop_reason(self._finish_reason, self._refused)
            events.append(MessageComplete(self._partial.finalize()))
        return events

    def unreported_usage(self) -> Optional[Usage]:
        """Return the usage chunk's usage until ``[DONE]`` reported it."""
        return None if self.done else self._usage

    def _chunk(self, chunk: Dict[str, Any]) -> List[StreamEvent]:
        events: List[StreamEvent] = []
        if not self._started:
            self._started = True
            self.model = str(chunk.get("model") or self.model)
            events.append(MessageStart(str(chunk.get("id") or ""), self.model))
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            if isinstance(delta, dict):
                self._delta(delta, events)
            if choice.get("finish_reason"):
                self._finish_reason = choice["finish_reason"]
                self._close_all(events)
        if isinstance(chunk.get("usage"), dict):
            self._usage = usage_from_wire(chunk["usage"])
        return events

    def _finish(self) -> List[StreamEvent]:
        """Close what is still open at ``[DONE]`` and report the usage."""
        events: List[StreamEvent] = []
        if not self._started:
            self._started = True
            events.append(MessageStart("", self.model))
        self._close_all(events)
        if self._usage is not None:
            events.append(self.cost_update(self._usage))
        return events

    def _delta(self, delta: Dict[str, Any], events: List[StreamEvent]) -> None:
        reasoning = delta.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning:
            self._open("thinking", events)
            events.append(ThinkingDelta(reasoning))
        for key in ("content", "refusal"):
            piece = delta.get(key)
            if isinstance(piece, str) and piece:
                self._refused = self._refused or key == "refusal"
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
            key = ("no-index", len(self._tools)) if new_call else last
        function = wire.get("function")
        function = function if isinstance(function, dict) else {}
        call = self._tools.get(key)
        if call is None:
            self._close_open(events)
            call = self._tools[key] = _ToolCall(
                self._take_index(), self._ids.take(wire.get("id")), str(function.get("name") or ""))
            events.append(ContentBlockStart(call.index, "tool_use", tool_call_id=call.id, tool_name=call.name))
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
                events.append(ToolCallEnd(call.id, call.name, arguments_text("".join(call.parts))))
                events.append(ContentBlockEnd(call.index))
