"""Stream events: what a provider stream and the tool loops yield.

Order within one provider response (DESIGN.md, Pinned details, Round 3)::

    MessageStart
    ( ContentBlockStart  (TextDelta* | ThinkingDelta* |
                          ToolCallArgumentsDelta* ToolCallEnd)  ContentBlockEnd )*
    CostUpdate?          (when usage is known)
    MessageComplete

Block indexes count from 0 in order of first appearance. The tool loops add
``ToolExecutionStarted`` / ``ToolExecutionCompleted`` between responses, end
a failed stream with ``Error`` and a paused session turn with
``ApprovalRequired``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Dict, Optional, Tuple

import attrs

from agcore_sync._values import value_methods
from agcore_sync.llm.types import (
    MessageResponse,
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
    "ApprovalRequired",
    "ToolApprovalRequest",
]


def _snake(name: str) -> str:
    # "ToolCallStart" -> "tool_call_start" (no regex: this runs at import).
    return "".join("_" + c.lower() if c.isupper() and i else c.lower() for i, c in enumerate(name))


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
@value_methods
class MessageStart(StreamEvent):
    """A provider response begins; ``id`` is the provider's response id."""

    id: str
    model: str


@attrs.frozen
@value_methods
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
@value_methods
class TextDelta(StreamEvent):
    """A piece of text of the open text block."""

    text: str


@attrs.frozen
@value_methods
class ThinkingDelta(StreamEvent):
    """A piece of reasoning text, or the block's signature."""

    text: str
    signature: Optional[str] = None


@attrs.frozen
@value_methods
class ToolCallArgumentsDelta(StreamEvent):
    """A piece of a tool call's JSON arguments; ``index`` is the block index."""

    index: int
    tool_call_id: str
    delta: str


@attrs.frozen
@value_methods
class ToolCallEnd(StreamEvent):
    """A tool call is complete; ``arguments`` is its whole JSON string."""

    tool_call_id: str
    tool_name: str
    arguments: str


@attrs.frozen
@value_methods
class ContentBlockEnd(StreamEvent):
    """The block at ``index`` ends."""

    index: int


@attrs.frozen
@value_methods
class CostUpdate(StreamEvent):
    """Usage of this response is known; ``cost_usd`` is None without a price."""

    usage: Usage
    cost_usd: Optional[float] = None


@attrs.frozen
@value_methods
class MessageComplete(StreamEvent):
    """A provider response ends; ``full_response`` is all of it."""

    full_response: MessageResponse


@attrs.frozen
@value_methods
class ToolExecutionStarted(StreamEvent):
    """A tool is about to run (tool loops only).

    ``arguments`` is the call's JSON text, as the model sent it;
    :attr:`parsed_arguments` is the same parsed, the shape hooks see in
    ``HookContext.arguments``.
    """

    tool_name: str
    tool_call_id: str
    arguments: str

    @property
    def parsed_arguments(self) -> Any:
        """The arguments parsed: a dict for a well-formed call (``{}`` when empty).

        Text that is not valid JSON is returned as it is, as the registry
        sees it (and refuses it).

        .. versionadded:: 0.2
        """
        from agcore_sync.llm._tool_calls import parse_tool_arguments

        return parse_tool_arguments(self.arguments)


@attrs.frozen
@value_methods
class ToolExecutionCompleted(StreamEvent):
    """A tool has returned (tool loops only).

    ``result_summary`` is at most the first 200 characters of the text sent
    to the model; ``output`` is all of that text (within the tool-result cut,
    ``CycleConfig.max_tool_result_bytes``), for a UI that shows the result
    whole.

    .. versionchanged:: 0.3
       ``output``.
    """

    tool_name: str
    tool_call_id: str
    result_summary: str
    is_error: bool
    duration_s: float
    output: str = attrs.field(default="", kw_only=True)


@attrs.frozen
@value_methods
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


@attrs.frozen
@value_methods
class ToolApprovalRequest:
    """A tool call that waits for a human's decision.

    Listed by ``session.pending_approvals`` and by :class:`ApprovalRequired`.

    Args:
        tool_call_id: the call's id: the key of its decision.
        tool_name: the tool the model asked for.
        arguments: the call's parsed arguments (a dict; ``{}`` when the
            model sent arguments that are not a JSON object).

    .. versionadded:: 0.2
    """

    tool_call_id: str
    tool_name: str
    arguments: Dict[str, Any] = attrs.field(factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        """Return a JSON-ready dict."""
        return {"tool_call_id": self.tool_call_id, "tool_name": self.tool_name, "arguments": self.arguments}

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> ToolApprovalRequest:
        """Build a request from ``to_dict()`` output."""
        return cls(data["tool_call_id"], data["tool_name"], dict(data.get("arguments") or {}))


def _requests(value: Any) -> Tuple[ToolApprovalRequest, ...]:
    return tuple(value)


@attrs.frozen
@value_methods
class ApprovalRequired(StreamEvent):
    """A session turn paused: these calls wait for a human (the stream's last event).

    The round's other calls have run (their ``ToolExecutionCompleted`` came
    before this event). Each listed call was announced by a
    ``ToolExecutionStarted`` and gets no ``ToolExecutionCompleted`` in this
    stream: it is answered by this event, and once decided it gets a new
    Started / Completed pair in the stream of
    :meth:`AgentSession.resume_turn_stream
    <agcore_sync.agent.session.AgentSession.resume_turn_stream>`.

    .. versionadded:: 0.2
    """

    requests: Tuple[ToolApprovalRequest, ...] = attrs.field(converter=_requests)

    def to_dict(self) -> Dict[str, Any]:
        """Return a JSON-ready dict; the requests as a list of dicts."""
        return {"type": self.type, "requests": [request.to_dict() for request in self.requests]}

    @classmethod
    def _from_fields(cls, kwargs: Dict[str, Any]) -> StreamEvent:
        return cls(tuple(ToolApprovalRequest.from_dict(item) for item in kwargs.get("requests") or ()))
