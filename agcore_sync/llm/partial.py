"""The accumulator that rebuilds a :class:`MessageResponse` from stream events.

:class:`PartialMessageResponse` is pure: events in, a response out. Providers
build their ``MessageComplete`` with it and the loops use it to keep what a
stream delivered, so a consumer that replays the events gets the same response.
"""

from __future__ import annotations

from typing import Dict, List, Optional

from agcore_sync.llm._tool_calls import parse_tool_arguments  # defined there, still importable from here
from agcore_sync.llm.events import (
    ApprovalRequired,
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
    ToolExecutionCompleted,
    ToolExecutionStarted,
)
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

__all__ = ["PartialMessageResponse", "parse_tool_arguments"]


#: Events produced by the tool loops, not by a provider: ignored, yet accepted.
#: ``Error`` is not one of them: it is neither part of a message nor a meta
#: event, so :meth:`PartialMessageResponse.apply` refuses it.
_META_EVENTS = (ToolExecutionStarted, ToolExecutionCompleted, ApprovalRequired)


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
            True if the event was used or is a meta event (tool execution)
            that the accumulator ignores; False otherwise, for an ``Error``
            among others (a failure is not a part of the message).
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
