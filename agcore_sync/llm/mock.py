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

import attrs

from agcore_sync.llm.cost import PricingArg, cost_usd
from agcore_sync.llm.errors import LlmConnectionError, LlmError
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

__all__ = ["MockProvider", "MockStream", "ScriptedResponse", "events_for"]


@attrs.frozen
class MockStream:
    """A script entry that streams events of its own instead of a response's.

    Build one with :meth:`MockProvider.failing_stream` (a stream that breaks
    half-way, as a dropped connection does) or :meth:`MockProvider.stream`
    (any events, for a test that must hold or count them).

    ``chat_stream`` yields what ``events(request)`` yields, exceptions
    included, and closing the provider's stream closes that iterator.
    ``chat`` runs the same events to their end and returns the response of
    their ``MessageComplete`` (it raises what the events raise, and an
    :class:`~agcore_sync.LlmError` if they end without one).

    Attributes:
        events: a function of the request returning the events to stream
            (typically a generator function).

    .. versionadded:: 0.1.0
    """

    events: Callable[[MessageRequest], Iterable[StreamEvent]]


#: What a script entry may be: a response, a function of the request, a
#: :class:`MockStream`, or an exception to raise.
ScriptedResponse = Union[MessageResponse, Callable[[MessageRequest], MessageResponse], MockStream, BaseException]

#: Size in characters of the pieces text and tool arguments are streamed in.
DELTA_SIZE = 8

_ids = itertools.count(1)


def _pieces(text: str) -> List[str]:
    return [text[i:i + DELTA_SIZE] for i in range(0, len(text), DELTA_SIZE)] or [""]


class MockProvider(LlmProvider):
    """A provider that answers from a script.

    Args:
        responses: the answers, consumed in order: a :class:`MessageResponse`,
            a callable ``request -> MessageResponse``, a :class:`MockStream`
            (a stream of its own, such as :meth:`failing_stream`), or an
            exception to raise.
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

    @staticmethod
    def failing_stream(response: MessageResponse, *, after_events: int,
                       error: Optional[BaseException] = None) -> MockStream:
        """Return an entry whose stream sends the first events of ``response``, then raises ``error``.

        It is what a connection dropped half-way looks like to the caller:
        ``after_events`` events of the exact sequence ``response`` streams
        as (``MessageStart`` first), then the error from the iterator. Its
        ``CostUpdate``, if reached, prices by the built-in table.
        ``chat`` raises ``error`` without a response.

        Args:
            response: the response whose events come first.
            after_events: how many of them to send, from 0 up to one less
                than the whole sequence (the stream never completes).
            error: the exception to raise; by default a retryable
                :class:`~agcore_sync.LlmConnectionError`.

        Raises:
            ValueError: ``after_events`` is negative or not less than the
                number of events ``response`` streams as.
            TypeError: ``error`` is not an exception instance.

        Example::

            provider = MockProvider([
                MockProvider.failing_stream(MockProvider.text("Hello, world"), after_events=3),
            ])

        .. versionadded:: 0.1.0
        """
        events = list(events_for(response, cost_usd(response.usage, response.model, None)))
        if isinstance(after_events, bool) or not isinstance(after_events, int) \
                or not 0 <= after_events < len(events):
            raise ValueError(f"after_events must be an int from 0 to {len(events) - 1} for this response "
                             f"({len(events)} events), not {after_events!r}")
        if error is None:
            error = LlmConnectionError(f"MockProvider stream cut after {after_events} events")
        elif not isinstance(error, BaseException):
            raise TypeError(f"error must be an exception instance, not {type(error).__name__}")
        head = events[:after_events]
        failure = error

        def cut(request: MessageRequest) -> Iterator[StreamEvent]:
            yield from head
            raise failure

        return MockStream(cut)

    @staticmethod
    def stream(events: Callable[[MessageRequest], Iterable[StreamEvent]]) -> MockStream:
        """Return an entry that streams ``events(request)``: for a test that holds or counts events.

        Example::

            release = threading.Event()

            def held(request):
                events = list(events_for(MockProvider.text("Hello, world")))
                yield from events[:3]  # MessageStart, ContentBlockStart, TextDelta
                release.wait(5.0)  # a slow network read, until the test lets it go
                yield from events[3:]

            provider = MockProvider([MockProvider.stream(held)])

        .. versionadded:: 0.1.0
        """
        return MockStream(events)

    # -- LlmProvider ----------------------------------------------------------

    def _take(self, request: MessageRequest) -> Union[MessageResponse, MockStream]:
        """Record ``request`` and return its entry: a response or a stream (raise a scripted exception)."""
        with self._lock:
            self.requests.append(request)
            if not self._script:
                raise LlmError(f"MockProvider has no scripted response left for request {len(self.requests)}: "
                               "add more with MockProvider([...]) or .add(...)")
            entry = self._script.popleft()
        if isinstance(entry, BaseException):
            raise entry
        if isinstance(entry, (MessageResponse, MockStream)):
            return entry
        return entry(request)

    def chat(self, request: MessageRequest) -> MessageResponse:
        """Return the next scripted response (or raise the scripted exception)."""
        entry = self._take(request)
        if not isinstance(entry, MockStream):
            return entry
        for event in entry.events(request):
            if isinstance(event, MessageComplete):
                return event.full_response
        raise LlmError("MockProvider: a scripted stream ended without a MessageComplete")

    def chat_stream(self, request: MessageRequest) -> Iterator[StreamEvent]:
        """Yield the events a real provider would send for the next scripted response."""
        return self._stream(request)

    def _stream(self, request: MessageRequest) -> Iterator[StreamEvent]:
        entry = self._take(request)
        if isinstance(entry, MockStream):
            yield from entry.events(request)
        else:
            yield from events_for(entry, cost_usd(entry.usage, entry.model, self.pricing))


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

