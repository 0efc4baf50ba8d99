"""LlmCycle: a conversation with one provider, and its tool loops.

The cycle holds the history, builds each :class:`MessageRequest` from it,
applies compaction and hooks around every provider call, and retries with
``CycleConfig.retry`` (all of which it inherits from
:class:`~agcore_sync.loop._conversation.Conversation`, the part the loops
see). The tool loops themselves live in :mod:`agcore_sync.loop.tool_loop`
and :mod:`agcore_sync.loop.tool_stream`; the cycle sits on top of them, only
starts them and keeps what they return. This module does no I/O of its own.
"""

from __future__ import annotations

from typing import Iterator, Optional

from agcore_sync.llm.events import StreamEvent
from agcore_sync.llm.partial import PartialMessageResponse
from agcore_sync.llm.types import Message, MessageResponse
from agcore_sync.loop._conversation import Conversation
from agcore_sync.loop.config import DEFAULT_MAX_TOOL_TURNS, CycleConfig  # noqa: F401 - re-exported
from agcore_sync.loop.tool_loop import ToolLoop
from agcore_sync.loop.tool_stream import ToolLoopStream
from agcore_sync.tools.registry import ToolRegistry

# CycleConfig is defined in loop/config.py (below the loops, which read it)
# and stays importable from here, where DESIGN.md places it.
__all__ = ["LlmCycle"]


class LlmCycle(Conversation):
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
        return ToolLoopStream(self, registry, prompt, max_buffered_events=max_buffered_events)
