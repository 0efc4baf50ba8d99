"""Bedrock ConverseStream messages translated into stream events (pure, no I/O).

:class:`BedrockStreamTranslator` takes the decoded event-stream messages of
a ``converse-stream`` answer (:mod:`agcore_sync._http.eventstream`):
``messageStart``, ``contentBlockStart`` (tool uses only: text and reasoning
blocks open with their first delta), ``contentBlockDelta`` (``text``,
``toolUse.input``, ``reasoningContent`` text / signature /
redactedContent), ``contentBlockStop``, ``messageStop`` and ``metadata``
(usage, the last message), and the exception frames, which raise the typed
error :func:`~agcore_sync.llm._bedrock_wire.error_of_type` gives.

Two messages come from the provider, not the server (``:message-type``
``agcore-response`` with the request id, before the first frame, and
``agcore-end`` when the body ended between frames): the response id is
Bedrock's ``x-amzn-requestid``, and a body that ends after ``messageStop``
without ``metadata`` still completes (with no usage). Block indexes are
renumbered from 0 over the blocks translated; the closing
``MessageComplete`` is built from the very events returned.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional

from agcore_sync import _instrument
from agcore_sync._http.eventstream import EventStreamMessage
from agcore_sync._http.masking import Masker
from agcore_sync.llm._bedrock_wire import TOOL_ID_PREFIX, error_of_type, stop_reason, usage_from_wire
from agcore_sync.llm._stream_translator import StreamTranslator
from agcore_sync.llm._thinking_origin import BEDROCK, make_envelope
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

__all__ = ["BedrockStreamTranslator", "RESPONSE_MESSAGE", "END_MESSAGE"]

logger = _instrument.get_logger("agcore_sync.llm")

#: ``:message-type`` of the provider's first message (header ``request-id``).
RESPONSE_MESSAGE = "agcore-response"
#: ``:message-type`` of the provider's message for a body that ended between frames.
END_MESSAGE = "agcore-end"

_HANDLERS = frozenset(["messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop",
                       "messageStop", "metadata"])


class _OpenBlock:
    __slots__ = ("index", "kind", "tool_call_id", "tool_name", "parts")

    def __init__(self, index: int, kind: str, tool_call_id: Optional[str] = None,
                 tool_name: Optional[str] = None) -> None:
        self.index = index
        self.kind = kind
        self.tool_call_id = tool_call_id
        self.tool_name = tool_name
        self.parts: List[str] = []


class BedrockStreamTranslator(StreamTranslator):
    """Turns ConverseStream messages into stream events (see the module docstring).

    Args:
        model: the model id asked for.
        pricing: prices for the ``CostUpdate``.
        masker: hides the API key in errors.
    """

    provider_name = "Bedrock"

    def __init__(self, model: str, *, pricing: PricingArg, masker: Masker) -> None:
        super().__init__(model, pricing=pricing, masker=masker)
        self._partial = PartialMessageResponse()
        self._ids = ToolCallIds(TOOL_ID_PREFIX)
        self._request_id = ""
        self._blocks: Dict[Any, _OpenBlock] = {}
        self._next_index = 0
        self._stopped = False
        self._usage: Optional[Usage] = None

    def feed(self, event: EventStreamMessage) -> List[StreamEvent]:  # type: ignore[override]
        """Translate one event-stream message; ``metadata`` ends the response (see the base class)."""
        headers = event.headers
        message_type = headers.get(":message-type")
        if message_type == "event":
            kind = headers.get(":event-type")
        elif message_type == RESPONSE_MESSAGE:
            self._request_id = headers.get("request-id") or ""
            return []
        elif message_type == END_MESSAGE:
            return self._finish() if self._stopped else []
        elif message_type == "exception":
            raise self._exception(headers.get(":exception-type"), event.payload)
        elif message_type == "error":
            raise error_of_type(headers.get(":error-code"), f"Bedrock stream error {headers.get(':error-code')}: "
                                f"{headers.get(':error-message') or ''}", status=None, masker=self._masker)
        else:
            raise ResponseParseError(f"Bedrock sent an event-stream message of type {message_type!r}")
        if kind not in _HANDLERS:
            logger.debug("Bedrock: ignoring stream event %r", kind)
            return []
        data = self._decode(event.payload.decode("utf-8", "replace"))
        try:
            events: List[StreamEvent] = getattr(self, "_on_" + kind)(data)
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise ResponseParseError(f"Bedrock sent a {kind!r} event of an unknown shape",
                                     body=self._masker.json(data)) from exc
        for item in events:
            self._partial.apply(item)
        if kind == "metadata":
            events.extend(self._finish())
        return events

    def _finish(self) -> List[StreamEvent]:
        self.done = True
        return [MessageComplete(self._partial.finalize())]

    def _exception(self, exception_type: Any, payload: bytes) -> Exception:
        try:
            data = json.loads(payload)
        except ValueError:
            data = {}
        if not isinstance(data, dict):
            data = {}
        message = data.get("message") or data.get("Message") or ""
        return error_of_type(exception_type, f"Bedrock stream error {exception_type}: {message}",
                             status=None, masker=self._masker, body=data)

    def unreported_usage(self) -> Optional[Usage]:
        """Return the usage of ``metadata`` if no ``CostUpdate`` carried it (never: they arrive together)."""
        return None

    def _on_messageStart(self, data: Mapping[str, Any]) -> List[StreamEvent]:  # noqa: N802 - the wire's name
        return [MessageStart(self._request_id, self.model)]

    def _open(self, wire_index: Any, kind: str, **extra: Any) -> List[StreamEvent]:
        index = self._next_index
        self._next_index += 1
        block = _OpenBlock(index, kind, extra.get("tool_call_id"), extra.get("tool_name"))
        self._blocks[wire_index] = block
        return [ContentBlockStart(index, kind, **extra)]

    def _on_contentBlockStart(self, data: Mapping[str, Any]) -> List[StreamEvent]:  # noqa: N802
        start = data["start"]
        use = start.get("toolUse")
        if use is None:
            logger.debug("Bedrock: skipping a streamed content block starting with %r", list(start))
            return []
        call_id = self._ids.take(use.get("toolUseId"))
        return self._open(data["contentBlockIndex"], "tool_use", tool_call_id=call_id, tool_name=use["name"])

    def _on_contentBlockDelta(self, data: Mapping[str, Any]) -> List[StreamEvent]:  # noqa: N802
        wire_index = data["contentBlockIndex"]
        delta = data["delta"]
        block = self._blocks.get(wire_index)
        events: List[StreamEvent] = []
        if "text" in delta:
            if block is None:
                events = self._open(wire_index, "text")
            if delta["text"]:
                events.append(TextDelta(delta["text"]))
        elif "reasoningContent" in delta:
            reasoning = delta["reasoningContent"]
            redacted = reasoning.get("redactedContent")
            if block is None:
                events = self._open(wire_index, "thinking", **({"redacted_data": redacted} if redacted else {}))
            if redacted is not None:
                events.append(ThinkingDelta("", signature=make_envelope(BEDROCK, {"redactedContent": redacted},
                                                                        None)))
            if reasoning.get("text"):
                events.append(ThinkingDelta(reasoning["text"]))
            if reasoning.get("signature") is not None:
                events.append(ThinkingDelta("", signature=make_envelope(BEDROCK,
                                                                        {"signature": reasoning["signature"]},
                                                                        None)))
        elif "toolUse" in delta:
            if block is None or block.kind != "tool_use":
                raise ResponseParseError(f"Bedrock sent tool input for block {wire_index!r}, not a started tool use")
            piece = delta["toolUse"]["input"]
            if piece:
                block.parts.append(piece)
                events.append(ToolCallArgumentsDelta(block.index, block.tool_call_id or "", piece))
        else:
            logger.debug("Bedrock: ignoring a delta holding %r", list(delta))
        return events

    def _on_contentBlockStop(self, data: Mapping[str, Any]) -> List[StreamEvent]:  # noqa: N802
        block = self._blocks.get(data["contentBlockIndex"])
        if block is None:
            return []
        events: List[StreamEvent] = []
        if block.kind == "tool_use":
            events.append(ToolCallEnd(block.tool_call_id or "", block.tool_name or "",
                                      arguments_text("".join(block.parts))))
        events.append(ContentBlockEnd(block.index))
        return events

    def _on_messageStop(self, data: Mapping[str, Any]) -> List[StreamEvent]:  # noqa: N802
        self._stopped = True
        self._partial.stop_reason = stop_reason(data.get("stopReason"), False)
        return []

    def _on_metadata(self, data: Mapping[str, Any]) -> List[StreamEvent]:
        return [self.cost_update(usage_from_wire(data.get("usage") or {}))]
