"""Stream events and the accumulator that rebuilds a response from them.

Order within one provider response (DESIGN.md, Pinned details, Round 3)::

    MessageStart
    ( ContentBlockStart  (TextDelta* | ThinkingDelta* |
                          ToolCallArgumentsDelta* ToolCallEnd)  ContentBlockEnd )*
    CostUpdate?          (when usage is known)
    MessageComplete

Block indexes count from 0 in order of first appearance. The tool loops add
``ToolExecutionStarted`` / ``ToolExecutionCompleted`` between responses and
end a failed stream with ``Error``.
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar, Dict, List, Optional

import attrs

from agcore_sync.llm.types import (
    ContentBlock,
    Message,
    MessageResponse,
    Role,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
)

__all__ = [
    "StreamEvent",
    "MessageStart",
    "ContentBlockStart",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallArgumentsDelta",
    "ToolCallEnd",
    "ContentBlockEnd",
    "CostUpdate",
    "MessageComplete",
    "ToolExecutionStarted",
    "ToolExecutionCompleted",
    "Error",
    "PartialMessageResponse",
    "parse_tool_arguments",
]


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


# Field name -> value class, for the fields that hold nested values.
_NESTED: Dict[str, Any] = {"usage": Usage, "full_response": MessageResponse}


class StreamEvent:
    """Base class of every stream event.

    Each subclass has a ``type`` tag, the snake case of its class name.
    ``StreamEvent.from_dict(d)`` dispatches on ``d["type"]`` through the
    registry of known event classes.
    """

    __slots__ = ()

    #: The ``type`` tag written by ``to_dict()``.
    type: ClassVar[str] = ""
    _registry: ClassVar[Dict[str, type]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.type = _snake(cls.__name__)
        StreamEvent._registry[cls.type] = cls

    def to_dict(self) -> Dict[str, Any]:
        """Return a JSON-ready dict with a ``type`` tag."""
        data: Dict[str, Any] = {"type": self.type}
        for field in attrs.fields(type(self)):  # type: ignore[arg-type]
            value = getattr(self, field.name)
            data[field.name] = value.to_dict() if hasattr(value, "to_dict") else value
        return data

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> StreamEvent:
        """Build the event that ``data["type"]`` names.

        Raises:
            ValueError: the type tag is missing or unknown.
        """
        event_cls = StreamEvent._registry.get(data.get("type", ""))
        if event_cls is None or (cls is not StreamEvent and event_cls is not cls):
            raise ValueError(f"unknown stream event type: {data.get('type')!r}")
        kwargs = {}
        for key, value in data.items():
            if key == "type":
                continue
            nested = _NESTED.get(key)
            kwargs[key] = nested.from_dict(value) if nested is not None and value is not None else value
        return event_cls._from_fields(kwargs)

    @classmethod
    def _from_fields(cls, kwargs: Dict[str, Any]) -> StreamEvent:
        return cls(**kwargs)


@attrs.frozen
class MessageStart(StreamEvent):
    """A provider response begins; ``id`` is the provider's response id."""

    id: str
    model: str


@attrs.frozen
class ContentBlockStart(StreamEvent):
    """A content block begins at ``index``.

    ``block_type`` is ``"text"``, ``"tool_use"`` or ``"thinking"``; tool
    blocks carry their call id and name; ``redacted_data`` is set for a
    redacted thinking block.
    """

    index: int
    block_type: str
    tool_call_id: Optional[str] = None
    tool_name: Optional[str] = None
    redacted_data: Optional[str] = None


@attrs.frozen
class TextDelta(StreamEvent):
    """A piece of text of the open text block."""

    text: str


@attrs.frozen
class ThinkingDelta(StreamEvent):
    """A piece of reasoning text, or the block's signature."""

    text: str
    signature: Optional[str] = None


@attrs.frozen
class ToolCallArgumentsDelta(StreamEvent):
    """A piece of a tool call's JSON arguments; ``index`` is the block index."""

    index: int
    tool_call_id: str
    delta: str


@attrs.frozen
class ToolCallEnd(StreamEvent):
    """A tool call is complete; ``arguments`` is its whole JSON string."""

    tool_call_id: str
    tool_name: str
    arguments: str


@attrs.frozen
class ContentBlockEnd(StreamEvent):
    """The block at ``index`` ends."""

    index: int


@attrs.frozen
class CostUpdate(StreamEvent):
    """Usage of this response is known; ``cost_usd`` is None without a price."""

    usage: Usage
    cost_usd: Optional[float] = None


@attrs.frozen
class MessageComplete(StreamEvent):
    """A provider response ends; ``full_response`` is all of it."""

    full_response: MessageResponse


@attrs.frozen
class ToolExecutionStarted(StreamEvent):
    """A tool is about to run (tool loops only)."""

    tool_name: str
    tool_call_id: str
    arguments: str


@attrs.frozen
class ToolExecutionCompleted(StreamEvent):
    """A tool has returned (tool loops only).

    ``result_summary`` is at most the first 200 characters of the text sent
    to the model.
    """

    tool_name: str
    tool_call_id: str
    result_summary: str
    is_error: bool
    duration_s: float


@attrs.frozen
class Error(StreamEvent):
    """A failure; nothing follows it in a stream.

    ``error`` is the exception, or None. It takes no part in equality and is
    written by ``to_dict()`` as ``{"class", "message"}``; ``from_dict()``
    gives ``error=None``.
    """

    message: str
    error: Optional[BaseException] = attrs.field(default=None, eq=False)

    def to_dict(self) -> Dict[str, Any]:
        """Return a JSON-ready dict; the exception as its class name and text."""
        err = self.error
        return {
            "type": self.type,
            "message": self.message,
            "error": None if err is None else {"class": type(err).__name__, "message": str(err)},
        }

    @classmethod
    def _from_fields(cls, kwargs: Dict[str, Any]) -> StreamEvent:
        return cls(kwargs["message"])


#: Events produced by the tool loops, not by a provider.
_META_EVENTS = (ToolExecutionStarted, ToolExecutionCompleted, Error)


def parse_tool_arguments(arguments: str) -> Any:
    """Parse a tool call's JSON argument string.

    An empty string is ``{}``; text that is not valid JSON is returned as
    it is, so the registry can refuse it with a clear error.
    """
    if not arguments.strip():
        return {}
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


class _BlockBuilder:
    __slots__ = ("kind", "parts", "tool_call_id", "tool_name", "signature", "redacted_data", "arguments")

    def __init__(self, kind: str, tool_call_id: Optional[str] = None, tool_name: Optional[str] = None,
                 redacted_data: Optional[str] = None) -> None:
        self.kind = kind
        self.parts: List[str] = []
        self.tool_call_id = tool_call_id
        self.tool_name = tool_name
        self.signature: Optional[str] = None
        self.redacted_data = redacted_data
        self.arguments: Optional[str] = None

    def build(self) -> ContentBlock:
        text = "".join(self.parts)
        if self.kind == "tool_use":
            args = self.arguments if self.arguments is not None else text
            return ToolUseBlock(self.tool_call_id or "", self.tool_name or "", parse_tool_arguments(args))
        if self.kind == "thinking":
            return ThinkingBlock(text, self.signature, self.redacted_data)
        return TextBlock(text)


class PartialMessageResponse:
    """Accumulates stream events into a :class:`MessageResponse`.

    Feed every event to :meth:`apply`; call :meth:`finalize` at the end.
    Providers build their ``MessageComplete`` with it, so a consumer that
    replays the events gets the same response. Not thread-safe: one stream,
    one accumulator.

    Attributes:
        stop_reason: set by the producer when it knows it; if still None at
            ``finalize()``, TOOL_USE when there are tool calls, else STOP.
    """

    def __init__(self) -> None:
        self.id = ""
        self.model = ""
        self.stop_reason: Optional[StopReason] = None
        self.usage = Usage()
        self._blocks: Dict[int, _BlockBuilder] = {}
        self._open: Optional[_BlockBuilder] = None
        self._complete: Optional[MessageResponse] = None

    def apply(self, event: StreamEvent) -> bool:
        """Take one event into the response.

        Returns:
            True if the event was used or is a meta event (tool execution,
            error) that the accumulator ignores; False otherwise.
        """
        if isinstance(event, TextDelta):
            self._builder_for("text").parts.append(event.text)
        elif isinstance(event, ToolCallArgumentsDelta):
            builder = self._blocks.get(event.index)
            if builder is None or builder.kind != "tool_use":
                return False
            builder.parts.append(event.delta)
        elif isinstance(event, ThinkingDelta):
            builder = self._builder_for("thinking")
            builder.parts.append(event.text)
            if event.signature is not None:
                builder.signature = event.signature
        elif isinstance(event, ContentBlockStart):
            builder = _BlockBuilder(event.block_type, event.tool_call_id, event.tool_name, event.redacted_data)
            self._blocks[event.index] = builder
            self._open = builder
        elif isinstance(event, ToolCallEnd):
            # The first call with this id that has not ended yet: some servers
            # give several calls of one response the same id.
            for builder in self._blocks.values():
                if (builder.kind == "tool_use" and builder.tool_call_id == event.tool_call_id
                        and builder.arguments is None):
                    builder.arguments = event.arguments
                    builder.tool_name = builder.tool_name or event.tool_name
                    return True
            return False
        elif isinstance(event, ContentBlockEnd):
            if self._open is self._blocks.get(event.index):
                self._open = None
        elif isinstance(event, MessageStart):
            self.id, self.model = event.id, event.model
        elif isinstance(event, CostUpdate):
            self.usage = event.usage
        elif isinstance(event, MessageComplete):
            self._complete = event.full_response
        elif not isinstance(event, _META_EVENTS):
            return False
        return True

    def _builder_for(self, kind: str) -> _BlockBuilder:
        # Deltas without an open block of their kind open one implicitly.
        if self._open is None or self._open.kind != kind:
            index = max(self._blocks, default=-1) + 1
            self._open = self._blocks[index] = _BlockBuilder(kind)
        return self._open

    @property
    def message(self) -> Message:
        """The assistant message built so far."""
        return Message(Role.ASSISTANT, tuple(self._blocks[i].build() for i in sorted(self._blocks)))

    def finalize(self) -> MessageResponse:
        """Return the response: the ``MessageComplete`` one if seen, else built."""
        if self._complete is not None:
            return self._complete
        message = self.message
        stop = self.stop_reason
        if stop is None:
            stop = StopReason.TOOL_USE if message.tool_uses else StopReason.STOP
        return MessageResponse(self.id, self.model, message, stop, self.usage)
