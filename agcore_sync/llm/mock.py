"""MockProvider: a scripted provider whose streams look like the real ones.

It is the test double the library ships (as httpx ships ``MockTransport``):
tests and demos script the answers, and ``chat_stream`` turns each scripted
:class:`MessageResponse` into the event sequence a real provider sends for
it, in the order DESIGN.md pins, so what holds on the mock holds on the wire.
"""

from __future__ import annotations

import collections
import itertools
import json
import threading
from typing import Any, Callable, Deque, Iterable, Iterator, List, Optional, Union

from agcore_sync.llm.cost import PricingArg, cost_usd
from agcore_sync.llm.errors import LlmError
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
from agcore_sync.llm.provider import LlmProvider
from agcore_sync.llm.types import (
    Message,
    MessageRequest,
    MessageResponse,
    Role,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
)

__all__ = ["MockProvider", "ScriptedResponse", "events_for"]

#: What a script entry may be: a response, a function of the request, or an
#: exception to raise.
ScriptedResponse = Union[MessageResponse, Callable[[MessageRequest], MessageResponse], BaseException]

#: Size in characters of the pieces text and tool arguments are streamed in.
DELTA_SIZE = 8

_ids = itertools.count(1)


def _pieces(text: str) -> List[str]:
    return [text[i:i + DELTA_SIZE] for i in range(0, len(text), DELTA_SIZE)] or [""]


class MockProvider(LlmProvider):
    """A provider that answers from a script.

    Args:
        responses: the answers, consumed in order: a :class:`MessageResponse`,
            a callable ``request -> MessageResponse``, or an exception to raise.
        pricing: prices for ``CostUpdate.cost_usd`` (see :mod:`~agcore_sync.llm.cost`).

    Attributes:
        requests: every request received, in order.

    Thread-safe: several threads may call it; each call takes the next entry.

    Example::

        provider = MockProvider([MockProvider.text("Hello!")])
        for event in provider.chat_stream(MessageRequest(None, [Message.user("hi")])):
            ...
    """

    def __init__(self, responses: Iterable[ScriptedResponse] = (), *, pricing: PricingArg = None,
                 model: str = "mock-model") -> None:
        self.model = model
        self.pricing = pricing
        self.requests: List[MessageRequest] = []
        self._script: Deque[ScriptedResponse] = collections.deque(responses)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"MockProvider(model={self.model!r}, remaining={len(self._script)})"

    def add(self, *responses: ScriptedResponse) -> None:
        """Append entries to the script."""
        with self._lock:
            self._script.extend(responses)

    @property
    def remaining(self) -> int:
        """How many scripted entries are left."""
        return len(self._script)

    # -- building scripted answers -------------------------------------------

    @staticmethod
    def text(text: str, *, usage: Optional[Usage] = None, model: str = "mock-model",
             stop_reason: StopReason = StopReason.STOP) -> MessageResponse:
        """Return a response holding ``text``."""
        return MessageResponse(f"mock-{next(_ids)}", model, Message.assistant(text), stop_reason,
                               usage or Usage(10, max(1, len(text) // 4)))

    @staticmethod
    def tool_calls(*calls: Any, text: str = "", usage: Optional[Usage] = None,
                   model: str = "mock-model") -> MessageResponse:
        """Return a response that calls tools.

        Args:
            calls: ``(name, arguments)`` or ``(id, name, arguments)`` tuples,
                or :class:`ToolUseBlock` objects.
            text: optional text before the calls.
            usage: the usage to report (a small default otherwise).
            model: the model name to report.
        """
        blocks: List[Any] = [TextBlock(text)] if text else []
        for call in calls:
            if isinstance(call, ToolUseBlock):
                blocks.append(call)
            elif len(call) == 2:
                blocks.append(ToolUseBlock(f"call_{next(_ids)}", call[0], dict(call[1])))
            else:
                blocks.append(ToolUseBlock(call[0], call[1], dict(call[2])))
        return MessageResponse(f"mock-{next(_ids)}", model, Message(Role.ASSISTANT, blocks),
                               StopReason.TOOL_USE, usage or Usage(20, 10))

    # -- LlmProvider ----------------------------------------------------------

    def _next(self, request: MessageRequest) -> MessageResponse:
        with self._lock:
            self.requests.append(request)
            if not self._script:
                raise LlmError(f"MockProvider has no scripted response left for request {len(self.requests)}: "
                               "add more with MockProvider([...]) or .add(...)")
            entry = self._script.popleft()
        if isinstance(entry, BaseException):
            raise entry
        if isinstance(entry, MessageResponse):
            return entry
        return entry(request)

    def chat(self, request: MessageRequest) -> MessageResponse:
        """Return the next scripted response (or raise the scripted exception)."""
        return self._next(request)

    def chat_stream(self, request: MessageRequest) -> Iterator[StreamEvent]:
        """Yield the events a real provider would send for the next scripted response."""
        return self._stream(request)

    def _stream(self, request: MessageRequest) -> Iterator[StreamEvent]:
        response = self._next(request)
        yield from events_for(response, cost_usd(response.usage, response.model, self.pricing))


def events_for(response: MessageResponse, cost: Optional[float] = None) -> Iterator[StreamEvent]:
    """Yield the provider event sequence that carries ``response``."""
    yield MessageStart(response.id, response.model)
    for index, block in enumerate(response.message.content):
        if isinstance(block, TextBlock):
            yield ContentBlockStart(index, "text")
            for piece in _pieces(block.text):
                yield TextDelta(piece)
        elif isinstance(block, ThinkingBlock):
            yield ContentBlockStart(index, "thinking", redacted_data=block.redacted_data)
            if block.text:
                for piece in _pieces(block.text):
                    yield ThinkingDelta(piece)
            if block.signature is not None:
                yield ThinkingDelta("", block.signature)
        elif isinstance(block, ToolUseBlock):
            arguments = block.input if isinstance(block.input, str) else json.dumps(block.input)
            yield ContentBlockStart(index, "tool_use", block.id, block.name)
            for piece in _pieces(arguments):
                yield ToolCallArgumentsDelta(index, block.id, piece)
            yield ToolCallEnd(block.id, block.name, arguments)
        else:  # a tool result in an assistant message is a scripting mistake
            raise LlmError(f"MockProvider cannot stream a {type(block).__name__} in an assistant message")
        yield ContentBlockEnd(index)
    yield CostUpdate(response.usage, cost)
    yield MessageComplete(response)

