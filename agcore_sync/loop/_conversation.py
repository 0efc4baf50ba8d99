"""Conversation: the history, the requests and the provider calls every loop shares.

The base of :class:`~agcore_sync.loop.cycle.LlmCycle`, and all the tool loops
see of it: it holds the history, builds each :class:`MessageRequest` (with
compaction), fires the request hooks and calls the provider with
``CycleConfig.retry``. It sits below the loops, so
:mod:`~agcore_sync.loop.tool_loop` and :mod:`~agcore_sync.loop.tool_stream`
import it and :mod:`~agcore_sync.loop.cycle` imports them: the package imports
one way. This module does no I/O of its own.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Iterator, List, Optional, Protocol, Sequence, Tuple

from agcore_sync import _check, _instrument
from agcore_sync.hooks import HookContext, HookEvent, Hooks
from agcore_sync.llm.provider import LlmProvider
from agcore_sync.llm.retry import Sleep, call_with_retry, stream_with_retry
from agcore_sync.llm.types import Message, MessageRequest, MessageResponse, ToolDef
from agcore_sync.loop.config import CycleConfig

if TYPE_CHECKING:  # pragma: no cover - the stream events load with the first stream
    from agcore_sync.llm.events import StreamEvent

__all__ = ["Conversation", "Compactor", "RequestAdjuster", "render_system_prompt"]


class Compactor(Protocol):
    """The ``compact`` callable of a cycle: ``(request, provider) -> request``.

    Applied before every provider call; it changes the request, never the
    history. :class:`~agcore_sync.agent.compact.CompactConfig` is one.
    """

    def __call__(self, request: MessageRequest, provider: LlmProvider) -> MessageRequest:
        """Return ``request``, compacted to fit ``provider``'s context."""


class RequestAdjuster(Protocol):
    """What :meth:`Conversation.build_request` takes as ``output``: a structured-output plan."""

    def adjust(self, request: MessageRequest) -> MessageRequest:
        """Return ``request`` with what the output mode needs (schema, tool or instructions)."""


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



def check_parts(owner: str, provider: Any, config: Any, hooks: Any) -> None:
    """Refuse, with one line naming the argument, what cannot be a provider, a config or hooks."""
    _check.instance(owner, "provider", provider, LlmProvider, "an LlmProvider such as OpenAIProvider(model=...)")
    _check.optional_instance(owner, "config", config, CycleConfig, "a CycleConfig")
    _check.optional_instance(owner, "hooks", hooks, Hooks, "a Hooks")


class Conversation:
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
                 hooks: Optional[Hooks] = None, compact: Optional[Compactor] = None) -> None:
        check_parts(type(self).__name__, provider, config, hooks)
        self.provider = provider
        self.config = config if config is not None else CycleConfig()
        self.system_prompt = render_system_prompt(system_prompt)
        self.hooks = hooks if hooks is not None else Hooks()
        self.compact = compact
        #: The session turn, given to hooks (None outside a session).
        self.turn_index: Optional[int] = None
        #: A session's ``(UsageLimits, RunUsage of its earlier turns)``, set
        #: before each turn; the tool loops check it with the turn's limits.
        self.session_limits: Optional[Tuple[Any, Any]] = None
        #: Prices for usage limits on cost (None: the provider's, else the built-in table).
        self.pricing: Any = None
        #: A session's open turn (an ``_instrument.TurnScope``), made current by the tool loops.
        self.turn_scope: Any = None
        self._history: List[Message] = []

    # -- history --------------------------------------------------------------

    def messages(self) -> List[Message]:
        """Return a copy of the history."""
        return list(self._history)

    def history_and(self, new_messages: Sequence[Message]) -> Tuple[Message, ...]:
        """Return the history followed by ``new_messages``, as one tuple (one copy, for a request)."""
        return (*self._history, *new_messages)

    def push_message(self, message: Message) -> None:
        """Append ``message`` to the history."""
        if not isinstance(message, Message):
            raise TypeError(f"push_message takes a Message, not {type(message).__name__}")
        self._history.append(message)

    def extend_messages(self, messages: Sequence[Message]) -> None:
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

    def build_request(self, messages: Sequence[Message], tools: Sequence[ToolDef] = (), *,
                      output: Optional[RequestAdjuster] = None) -> MessageRequest:
        """Return the request for ``messages`` (after compaction, if configured).

        The request controls (``prompt_cache``, ``thinking``,
        ``reasoning_effort``, ``extra_body``) come from the config;
        ``output`` (the turn's structured-output plan) adds what its mode
        needs before compaction, so compaction sees the whole request.
        """
        config = self.config
        request = MessageRequest(
            model=config.model,
            messages=tuple(messages),  # no copy when it already is one
            system=self.system_prompt,
            tools=tuple(tools),
            max_tokens=config.max_tokens,
            temperature=config.temperature,
            prompt_cache=config.prompt_cache,
            thinking=config.thinking,
            reasoning_effort=config.reasoning_effort,
            extra_body=config.extra_body,
        )
        if output is not None:
            request = output.adjust(request)
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
        with _instrument.chat(request, self.provider, stream=False) as span:
            if self.config.retry is None:
                response = self.provider.chat(request)
            else:
                response = call_with_retry(lambda: self.provider.chat(request), self.config.retry, sleep)
            if span.recording:
                span.record(response)
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
        from agcore_sync.llm.events import MessageComplete

        events = self.open_stream(request, sleep)
        try:
            for event in events:
                yield event
                if isinstance(event, MessageComplete):
                    self.fire(HookEvent.POST_REQUEST, request=request, response=event.full_response)
        finally:
            _close(events)
