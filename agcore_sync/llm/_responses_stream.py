"""Responses API streams translated into stream events (pure, no I/O).

:class:`ResponsesStreamTranslator` takes the SSE events of a ``stream: true``
``POST /responses`` and returns the events of :mod:`agcore_sync.llm.events`
in the order DESIGN.md pins; the closing ``MessageComplete`` is built from the
very events returned, so replaying them gives the same response.

Each output item is one block, in output order: a ``message`` item a text
block (its ``output_text`` and ``refusal`` deltas), a ``reasoning`` item a
thinking block (its summary and reasoning-text deltas, parts joined with a
blank line), a ``function_call`` item a tool_use block. A reasoning block
ends with a ``ThinkingDelta`` whose signature keeps the whole item from
``response.output_item.done`` (its ``encrypted_content`` complete only
there) and the id of the item after it, so it is closed when that next item
is added, or when the response ends. Other item types (built-in tools) are
skipped.

End markers: ``response.completed`` and ``response.incomplete`` (stop
reason LENGTH for ``max_output_tokens``, CONTENT_FILTER for
``content_filter``). ``response.failed`` and ``error`` raise the typed error
(after the driver reports any usage the failed response carried).
Event types not named here (``response.in_progress``, keepalives, content
part and annotation events, future types) are ignored.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from agcore_sync import _instrument
from agcore_sync._http.masking import Masker
from agcore_sync._http.sse import SseEvent
from agcore_sync.llm._responses_wire import (
    PART_SEPARATOR,
    error_from_payload,
    reasoning_block,
    stop_reason,
    usage_from_wire,
)
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

__all__ = ["ResponsesStreamTranslator"]

logger = _instrument.get_logger("agcore_sync.llm")

_BLOCK_KINDS = {"message": "text", "reasoning": "thinking", "function_call": "tool_use"}


class _Item:
    """One output item being streamed."""

    __slots__ = ("kind", "index", "item_id", "call_id", "name", "parts", "part_key", "done")

    def __init__(self, kind: str, index: int, item_id: Optional[str]) -> None:
        self.kind = kind
        self.index = index
        self.item_id = item_id
        self.call_id = ""
        self.name = ""
        # Pieces streamed so far: argument pieces of a call, text of a message
        # or reasoning item (a list: appending to one growing str is quadratic).
        self.parts: List[str] = []
        self.part_key: Any = None  # the reasoning part the last delta belonged to
        self.done = False


class ResponsesStreamTranslator(StreamTranslator):
    """Turns Responses API stream events into stream events (see the module docstring).

    Args:
        model: the model asked for.
        pricing: prices for the ``CostUpdate``.
        masker: hides the API key in errors.
    """

    provider_name = "OpenAI Responses"

    def __init__(self, model: str, *, pricing: PricingArg, masker: Masker) -> None:
        super().__init__(model, pricing=pricing, masker=masker)
        self._partial = PartialMessageResponse()
        self._ids = ToolCallIds("call_")
        self._started = False
        self._next_index = 0
        self._items: Dict[Any, _Item] = {}  # by output_index
        self._by_id: Dict[str, _Item] = {}
        self._pending: Optional[tuple] = None  # (reasoning _Item, its final item dict)
        self._refused = False
        self._usage: Optional[Usage] = None
        self._handlers: Dict[str, Callable[[Dict[str, Any], List[StreamEvent]], None]] = {
            "response.created": self._on_start,
            "response.in_progress": self._on_start,
            "response.queued": self._on_start,
            "response.output_item.added": self._on_item_added,
            "response.output_item.done": self._on_item_done,
            "response.output_text.delta": self._on_text,
            "response.refusal.delta": self._on_text,
            "response.reasoning_summary_text.delta": self._on_reasoning,
            "response.reasoning_text.delta": self._on_reasoning,
            "response.function_call_arguments.delta": self._on_arguments,
            "response.completed": self._on_end,
            "response.incomplete": self._on_end,
            "response.failed": self._on_failed,
            "error": self._on_error,
        }

    def feed(self, event: SseEvent) -> List[StreamEvent]:
        """Translate one SSE event; ``response.completed`` / ``.incomplete`` end it (see the base class)."""
        data = self._decode(event.data)
        kind = data.get("type") or event.event
        handler = self._handlers.get(kind if isinstance(kind, str) else "")
        events: List[StreamEvent] = []
        if handler is None:
            return events
        if not self._started and kind not in ("error", "response.failed"):
            self._on_start(data, events)
        handler(data, events)
        for item in events:
            self._partial.apply(item)
        if self.done:
            events.append(MessageComplete(self._partial.finalize()))
        return events

    def unreported_usage(self) -> Optional[Usage]:
        """Return the usage a failed response reported, until a ``CostUpdate`` carried it."""
        return None if self.done else self._usage

    # -- handlers -------------------------------------------------------------

    def _on_start(self, data: Dict[str, Any], events: List[StreamEvent]) -> None:
        if self._started:
            return
        self._started = True
        response = data.get("response")
        response = response if isinstance(response, dict) else {}
        self.model = str(response.get("model") or self.model)
        events.append(MessageStart(str(response.get("id") or ""), self.model))

    def _item(self, data: Dict[str, Any], kind: str, events: List[StreamEvent]) -> _Item:
        """Return the item a delta belongs to; one never announced is opened now."""
        item = self._items.get(data.get("output_index"))
        if item is None and isinstance(data.get("item_id"), str):
            item = self._by_id.get(data["item_id"])
        if item is None:
            wire = {"type": kind, "id": data.get("item_id")}
            item = self._open(data.get("output_index"), wire, events)
        return item

    def _on_item_added(self, data: Dict[str, Any], events: List[StreamEvent]) -> None:
        wire = data.get("item")
        if isinstance(wire, dict) and wire.get("type") in _BLOCK_KINDS:
            self._open(data.get("output_index"), wire, events)
        elif isinstance(wire, dict):
            # The item after the reasoning is one we do not keep: no id to pair.
            self._flush_reasoning(None, events)
            logger.debug("OpenAI Responses: skipping an output item of type %r", wire.get("type"))

    def _open(self, output_index: Any, wire: Dict[str, Any], events: List[StreamEvent]) -> _Item:
        item_id = wire.get("id") if isinstance(wire.get("id"), str) else None
        self._flush_reasoning(item_id if wire["type"] != "reasoning" else None, events)
        kind = _BLOCK_KINDS[wire["type"]]
        item = _Item(kind, self._next_index, item_id)
        self._next_index += 1
        key = output_index if output_index is not None else ("no-index", item.index)
        self._items[key] = item
        if item_id:
            self._by_id[item_id] = item
        if kind == "tool_use":
            item.call_id = self._ids.take(wire.get("call_id"))
            item.name = str(wire.get("name") or "")
            events.append(ContentBlockStart(item.index, kind, tool_call_id=item.call_id, tool_name=item.name))
        else:
            events.append(ContentBlockStart(item.index, kind))
        return item

    def _on_text(self, data: Dict[str, Any], events: List[StreamEvent]) -> None:
        piece = data.get("delta")
        item = self._item(data, "message", events)
        if data.get("type") == "response.refusal.delta":
            self._refused = True
        if isinstance(piece, str) and piece and not item.done:
            item.parts.append(piece)
            events.append(TextDelta(piece))

    def _on_reasoning(self, data: Dict[str, Any], events: List[StreamEvent]) -> None:
        piece = data.get("delta")
        item = self._item(data, "reasoning", events)
        if not isinstance(piece, str) or not piece or item.done:
            return
        key = (data.get("type"), data.get("summary_index", data.get("content_index")))
        if key != item.part_key and item.parts:
            piece = PART_SEPARATOR + piece
        item.part_key = key
        item.parts.append(piece)
        events.append(ThinkingDelta(piece))

    def _on_arguments(self, data: Dict[str, Any], events: List[StreamEvent]) -> None:
        piece = data.get("delta")
        item = self._item(data, "function_call", events)
        if isinstance(piece, str) and piece and not item.done:
            item.parts.append(piece)
            events.append(ToolCallArgumentsDelta(item.index, item.call_id, piece))

    def _on_item_done(self, data: Dict[str, Any], events: List[StreamEvent]) -> None:
        wire = data.get("item")
        if not isinstance(wire, dict) or wire.get("type") not in _BLOCK_KINDS:
            return
        item = self._item({"output_index": data.get("output_index"), "item_id": wire.get("id")},
                          wire["type"], events)
        if item.done:
            return
        if item.kind == "thinking":
            block = reasoning_block(wire, None)
            self._catch_up(item, block.text, ThinkingDelta, events)
            item.done = True
            self._pending = (item, wire)  # closed when the next item is added
            return
        item.done = True
        if item.kind == "text":
            text = "".join(p.get("refusal") or p.get("text") or "" for p in wire.get("content") or ()
                           if isinstance(p, dict))
            self._refused = self._refused or any(isinstance(p, dict) and p.get("type") == "refusal"
                                                 for p in wire.get("content") or ())
            self._catch_up(item, text, TextDelta, events)
        else:
            arguments = wire.get("arguments")
            if not isinstance(arguments, str):
                arguments = "".join(item.parts)
            events.append(ToolCallEnd(item.call_id, item.name, arguments_text(arguments)))
        events.append(ContentBlockEnd(item.index))

    @staticmethod
    def _catch_up(item: _Item, final: str, event_cls: Any, events: List[StreamEvent]) -> None:
        # A server that sends an item's text only in output_item.done (or
        # fewer deltas than its text) still gives the whole text.
        streamed = "".join(item.parts)
        if final.startswith(streamed) and len(final) > len(streamed):
            rest = final[len(streamed):]
            item.parts.append(rest)
            events.append(event_cls(rest))

    def _flush_reasoning(self, next_item_id: Any, events: List[StreamEvent]) -> None:
        if self._pending is None:
            return
        item, wire = self._pending
        self._pending = None
        block = reasoning_block(wire, next_item_id if isinstance(next_item_id, str) else None)
        events.append(ThinkingDelta("", block.signature))
        events.append(ContentBlockEnd(item.index))

    def _close_all(self, events: List[StreamEvent]) -> None:
        self._flush_reasoning(None, events)
        for item in sorted(self._items.values(), key=lambda i: i.index):
            if item.done:
                continue
            item.done = True
            if item.kind == "tool_use":
                events.append(ToolCallEnd(item.call_id, item.name, arguments_text("".join(item.parts))))
            events.append(ContentBlockEnd(item.index))

    def _on_end(self, data: Dict[str, Any], events: List[StreamEvent]) -> None:
        response = data.get("response")
        response = response if isinstance(response, dict) else {}
        if not self._items:
            # Nothing streamed item by item: take the items from the final response.
            for position, wire in enumerate(response.get("output") or ()):
                if isinstance(wire, dict) and wire.get("type") in _BLOCK_KINDS:
                    self._on_item_added({"output_index": position, "item": wire}, events)
                    self._on_item_done({"output_index": position, "item": wire}, events)
        self._close_all(events)
        self.done = True
        if isinstance(response.get("usage"), dict):
            self._usage = usage_from_wire(response["usage"])
            events.append(self.cost_update(self._usage))
        has_calls = any(item.kind == "tool_use" for item in self._items.values())
        self._partial.stop_reason = stop_reason(response, has_tool_calls=has_calls, refused=self._refused)

    def _on_failed(self, data: Dict[str, Any], events: List[StreamEvent]) -> None:
        response = data.get("response")
        response = response if isinstance(response, dict) else {}
        if isinstance(response.get("usage"), dict):
            self._usage = usage_from_wire(response["usage"])
        raise error_from_payload(response.get("error") or {"message": "the response failed"},
                                 self._masker, where="stream")

    def _on_error(self, data: Dict[str, Any], events: List[StreamEvent]) -> None:
        error = data.get("error") if isinstance(data.get("error"), dict) else data
        raise error_from_payload(error, self._masker, where="stream")
