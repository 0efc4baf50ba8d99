"""LlmCycle: a conversation with one provider, and its tool loops.

The cycle holds the history, builds each :class:`MessageRequest` from it,
applies compaction and hooks around every provider call, and retries with
``CycleConfig.retry``. The tool loops themselves live in
:mod:`agcore_sync.loop.tool_loop`; the cycle only starts them and keeps what
they return. This module does no I/O of its own.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional

import attrs

from agcore_sync.hooks import HookContext, HookEvent, Hooks
from agcore_sync.llm.events import (
    MessageComplete,
    StreamEvent,
)
from agcore_sync.llm.partial import PartialMessageResponse
from agcore_sync.llm.provider import LlmProvider
from agcore_sync.llm.retry import RetryConfig, Sleep, call_with_retry, stream_with_retry
from agcore_sync.llm.types import Message, MessageRequest, MessageResponse, ToolDef

if TYPE_CHECKING:  # pragma: no cover
    from agcore_sync.loop.tool_stream import ToolLoopStream
    from agcore_sync.tools.registry import ToolRegistry

__all__ = ["CycleConfig", "LlmCycle", "DEFAULT_MAX_TOOL_TURNS"]

#: ``max_tool_turns=None`` means this many rounds, as in the seed.
DEFAULT_MAX_TOOL_TURNS = 10


def _retry_converter(value: Any) -> Optional[RetryConfig]:
    if isinstance(value, dict):
        return RetryConfig.from_dict(value)
    return value


@attrs.frozen
class CycleConfig:
    """Settings of an :class:`LlmCycle` (change with ``attrs.evolve``).

    Args:
        model: the model name (None: the provider's ``model``).
        max_tokens: the completion limit sent with each request.
        temperature: sampling temperature.
        max_turns: the seed's older name for ``max_tool_turns``; wins when given.
        retry: retry settings for every provider call; None turns retry off
            (use that when the provider already is a ``RetryProvider``).
        max_tool_turns: at most this many provider calls in one tool loop
            (None: 10).
        tool_timeout_secs: one deadline for each round's tool calls (None: no limit).
        max_tool_result_bytes: tool results longer than this (UTF-8 bytes)
            are cut, with a marker (None: no limit).
        max_repeated_tool_calls: a call identical to the previous N calls in
            a row is refused (None: no guard).
    """

    model: Optional[str] = None
    max_tokens: Optional[int] = None
    temperature: Optional[float] = None
    max_turns: Optional[int] = None
    retry: Optional[RetryConfig] = attrs.field(default=RetryConfig(), converter=_retry_converter)
    max_tool_turns: Optional[int] = 10
    tool_timeout_secs: Optional[float] = 30.0
    max_tool_result_bytes: Optional[int] = 100_000
    max_repeated_tool_calls: Optional[int] = 3

    @property
    def tool_turn_limit(self) -> int:
        """The effective round limit (``max_turns``, else ``max_tool_turns``, else 10)."""
        if self.max_turns is not None:
            return self.max_turns
        return DEFAULT_MAX_TOOL_TURNS if self.max_tool_turns is None else self.max_tool_turns

    def to_dict(self) -> Dict[str, Any]:
        """Return a JSON-ready dict."""
        data = attrs.asdict(self, recurse=False)
        data["retry"] = None if self.retry is None else self.retry.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> CycleConfig:
        """Build a config from ``to_dict()`` output."""
        return cls(**data)


def render_system_prompt(system_prompt: Any) -> Optional[str]:
    """Return the system prompt as text: a str as is, else its ``render()``."""
    if system_prompt is None or isinstance(system_prompt, str):
        return system_prompt
    render = getattr(system_prompt, "render", None)
    if render is None:
        raise TypeError(f"system_prompt must be a str, a PromptTemplate or a PromptBuilder, "
                        f"not {type(system_prompt).__name__}")
    return render()


def _close(events: Iterator[StreamEvent]) -> None:
    close = getattr(events, "close", None)
    if close is not None:
        close()


class LlmCycle:
    """A conversation with one provider: history, requests, retries, hooks.

    Args:
        provider: the model to talk to.
        config: settings (model, limits, retry).
        system_prompt: a str, or an object with ``render()`` (a
            ``PromptBuilder`` or a bound ``PromptTemplate``); rendered once,
            sent as ``MessageRequest.system``, never part of ``messages()``.
        hooks: PRE_REQUEST / POST_REQUEST (and tool) hooks.
        compact: a callable ``(request, provider) -> request`` applied before
            every provider call (``agent.compact.CompactConfig`` is one).

    Not thread-safe: one conversation, one caller at a time.
    """

    def __init__(self, provider: LlmProvider, config: Optional[CycleConfig] = None, system_prompt: Any = None,
                 hooks: Optional[Hooks] = None, compact: Optional[Callable[..., MessageRequest]] = None) -> None:
        self.provider = provider
        self.config = config if config is not None else CycleConfig()
        self.system_prompt = render_system_prompt(system_prompt)
        self.hooks = hooks if hooks is not None else Hooks()
        self.compact = compact
        #: The session turn, given to hooks (None outside a session).
        self.turn_index: Optional[int] = None
        self._history: List[Message] = []

    # -- history --------------------------------------------------------------

    def messages(self) -> List[Message]:
        """Return a copy of the history."""
        return list(self._history)

    def push_message(self, message: Message) -> None:
        """Append ``message`` to the history."""
        if not isinstance(message, Message):
            raise TypeError(f"push_message takes a Message, not {type(message).__name__}")
        self._history.append(message)

    def extend_messages(self, messages: List[Message]) -> None:
        """Append several messages to the history."""
        for message in messages:
            self.push_message(message)

    def use_history(self, messages: List[Message]) -> None:
        """Make ``messages`` (a list, kept, not copied) the history the cycle reads and extends.

        A session binds its current slot's list here before each turn.
        """
        self._history = messages

    def clear(self) -> None:
        """Forget the history (the system prompt stays)."""
        self._history.clear()

    # -- requests -------------------------------------------------------------

    def build_request(self, messages: List[Message], tools: List[ToolDef] = ()) -> MessageRequest:
        """Return the request for ``messages`` (after compaction, if configured)."""
        request = MessageRequest(
            model=self.config.model,
            messages=tuple(messages),
            system=self.system_prompt,
            tools=tuple(tools),
            max_tokens=self.config.max_tokens,
            temperature=self.config.temperature,
        )
        if self.compact is not None:
            request = self.compact(request, self.provider)
        return request

    def fire(self, event: HookEvent, **fields: Any) -> Any:
        """Fire ``event`` hooks with this cycle's turn index; return a Deny or None."""
        if not self.hooks.has(event):
            return None
        return self.hooks.fire(HookContext(event=event, turn_index=self.turn_index, **fields))

    def call_provider(self, request: MessageRequest, sleep: Sleep = time.sleep) -> MessageResponse:
        """Send ``request`` with hooks and retry; return the response."""
        self.fire(HookEvent.PRE_REQUEST, request=request)
        if self.config.retry is None:
            response = self.provider.chat(request)
        else:
            response = call_with_retry(lambda: self.provider.chat(request), self.config.retry, sleep)
        self.fire(HookEvent.POST_REQUEST, request=request, response=response)
        return response

    def open_stream(self, request: MessageRequest, sleep: Sleep = time.sleep) -> Iterator[StreamEvent]:
        """Fire PRE_REQUEST and open the provider's stream, with retry.

        The caller fires POST_REQUEST when it sees ``MessageComplete`` and
        must close the returned iterator.
        """
        self.fire(HookEvent.PRE_REQUEST, request=request)
        if self.config.retry is None:
            return self.provider.chat_stream(request)
        return stream_with_retry(lambda: self.provider.chat_stream(request), self.config.retry, sleep)

    def stream_provider(self, request: MessageRequest, sleep: Sleep = time.sleep) -> Iterator[StreamEvent]:
        """Stream ``request`` with hooks and retry (only before the first event).

        POST_REQUEST fires after ``MessageComplete``.
        """
        events = self.open_stream(request, sleep)
        try:
            for event in events:
                yield event
                if isinstance(event, MessageComplete):
                    self.fire(HookEvent.POST_REQUEST, request=request, response=event.full_response)
        finally:
            _close(events)

    # -- the four ways to submit ------------------------------------------------

    def submit(self, prompt: str) -> MessageResponse:
        """Send ``prompt`` with the history; on success append both to the history.

        A failed call leaves the history as it was, so the same prompt can
        be sent again.

        Raises:
            LlmError: the provider failed (after retries).
        """
        user = Message.user(prompt)
        response = self.call_provider(self.build_request([*self._history, user]))
        self._history.extend((user, response.message))
        return response

    def submit_stream(self, prompt: str) -> Iterator[StreamEvent]:
        """Yield the events of the answer to ``prompt``; lazy.

        Nothing is sent until the first ``next()``. Retries happen only
        before the first event. The user message and the answer are appended
        to the history once the stream is exhausted; a failed or abandoned
        stream leaves the history as it was.

        Raises:
            LlmError: from the iterator, at the point of failure.
        """
        user = Message.user(prompt)
        partial = PartialMessageResponse()
        for event in self.stream_provider(self.build_request([*self._history, user])):
            partial.apply(event)
            yield event
        self._history.extend((user, partial.finalize().message))

    def submit_with_tools(self, prompt: str, registry: ToolRegistry) -> MessageResponse:
        """Run the automatic tool loop for ``prompt`` and return the final response.

        Each round sends the history with ``registry.definitions()``, runs
        every tool call of the answer through ``registry.invoke_all`` (in
        parallel) and appends the assistant message and one tool result per
        call, in call order, until an answer has no tool calls. The history
        keeps the user message and every complete round, also on failure.

        Raises:
            MaxToolTurnsExceeded: more than ``max_tool_turns`` rounds.
            ToolError: an unrecoverable tool failure (e.g. a timeout).
            HookError: a hook raised.
            LlmError: the provider failed.
        """
        from agcore_sync.loop.tool_loop import ToolLoop

        loop = ToolLoop(self, registry)
        try:
            return loop.run(prompt)
        finally:
            self._history.extend(loop.new_messages)

    def submit_with_tools_stream(self, prompt: str, registry: ToolRegistry, *,
                                 max_buffered_events: Optional[int] = None) -> ToolLoopStream:
        """Run the tool loop on a worker thread; return a stream of its events.

        See :class:`~agcore_sync.loop.tool_stream.ToolLoopStream`.
        """
        from agcore_sync.loop.tool_stream import ToolLoopStream

        return ToolLoopStream(self, registry, prompt, max_buffered_events=max_buffered_events)
