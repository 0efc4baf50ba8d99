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

from typing import TYPE_CHECKING, Any, Iterator, List, Optional, Union

from agcore_sync.llm.errors import OutputRefusedError
from agcore_sync.llm.types import Message, MessageResponse
from agcore_sync.loop._conversation import Conversation
from agcore_sync.loop._output import OutputPlan
from agcore_sync.loop.config import DEFAULT_MAX_TOOL_TURNS, CycleConfig  # noqa: F401 - re-exported
from agcore_sync.loop.tool_loop import ToolLoop
from agcore_sync.tools.registry import ToolRegistry

if TYPE_CHECKING:  # pragma: no cover - the streaming modules load with the first stream
    from agcore_sync.llm.events import StreamEvent
    from agcore_sync.loop.tool_stream import ToolLoopStream

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

    def submit(self, prompt: Union[str, Message], *, output: Any = None) -> MessageResponse:
        """Send ``prompt`` with the history; on success append both to the history.

        A failed call leaves the history as it was, so the same prompt can
        be sent again.

        Args:
            prompt: the user's text, or a user :class:`Message` (with images
                or documents).
            output: the structure of the answer (a JSON Schema dict, a
                dataclass, a ``TypedDict``, an attrs class, a pydantic model
                class or an ``OutputSchema``); the validated, converted
                answer is ``response.output``. An invalid answer goes back
                to the model with its errors ``config.output_retries``
                times (the history then keeps the attempts too).

        Raises:
            LlmError: the provider failed (after retries).
            OutputValidationError: the answer still did not match after the retries.
            OutputRefusedError: the model refused (never retried).
            TypeError, ValueError: ``output`` is not a usable schema (nothing sent).
        """
        plan = OutputPlan.of(output, self.config)
        new: List[Message] = [_user(prompt)]
        attempt = 0
        while True:
            response = self.call_provider(self.build_request([*self._history, *new], output=plan))
            if plan is None:
                self._history.extend((*new, response.message))
                return response
            response, error = plan.settle(response)
            if error is None:
                self._history.extend((*new, response.message, *plan.closing_messages(response)))
                return response
            if isinstance(error, OutputRefusedError) or attempt >= plan.retries:
                raise error
            attempt += 1
            new.extend((response.message, *plan.retry_messages(response, error)))  # type: ignore[arg-type]

    def submit_stream(self, prompt: Union[str, Message], *, output: Any = None) -> Iterator[StreamEvent]:
        """Yield the events of the answer to ``prompt``; lazy.

        Nothing is sent until the first ``next()``. Retries happen only
        before the first event. The user message and the answer are appended
        to the history once the stream is exhausted; a failed or abandoned
        stream leaves the history as it was.

        With ``output=`` (see :meth:`submit`) the answer's
        ``MessageComplete.full_response.output`` holds the validated value;
        an invalid answer is followed by the events of the retry's answer,
        in the same iterator.

        Raises:
            LlmError: from the iterator, at the point of failure
                (``OutputValidationError``, ``OutputRefusedError`` included).
            TypeError, ValueError: ``output`` is not a usable schema, at the call.
        """
        plan = OutputPlan.of(output, self.config)  # at the call: a bad schema raises before any request
        return self._submit_stream(_user(prompt), plan)

    def _submit_stream(self, user: Message, plan: Optional[OutputPlan]) -> Iterator[StreamEvent]:
        from agcore_sync.llm.events import MessageComplete
        from agcore_sync.llm.partial import PartialMessageResponse

        new: List[Message] = [user]
        attempt = 0
        while True:
            partial = PartialMessageResponse()
            settled: Optional[MessageResponse] = None
            error = None
            for event in self.stream_provider(self.build_request([*self._history, *new], output=plan)):
                if plan is not None and type(event) is MessageComplete:
                    settled, error = plan.settle(event.full_response)
                    event = MessageComplete(settled)
                partial.apply(event)
                yield event
            response = partial.finalize() if settled is None else settled
            if plan is not None and settled is None:
                response, error = plan.settle(response)
            if error is None:
                closing = plan.closing_messages(response) if plan is not None else []
                self._history.extend((*new, response.message, *closing))
                return
            if isinstance(error, OutputRefusedError) or attempt >= plan.retries:  # type: ignore[union-attr]
                raise error
            attempt += 1
            new.extend((response.message, *plan.retry_messages(response, error)))  # type: ignore[union-attr,arg-type]

    def submit_with_tools(self, prompt: Union[str, Message], registry: ToolRegistry, *,
                          output: Any = None) -> MessageResponse:
        """Run the automatic tool loop for ``prompt`` and return the final response.

        Each round sends the history with ``registry.definitions()``, runs
        every tool call of the answer through ``registry.invoke_all`` (in
        parallel) and appends the assistant message and one tool result per
        call, in call order, until an answer has no tool calls. The history
        keeps the user message and every complete round, also on failure.

        With ``output=`` (see :meth:`submit`) the model may call tools first
        and then answers in the schema: ``response.output`` holds the value.
        In the ``"tool"`` mode the output tool is offered beside the others
        (``tool_choice="required"``) and a call to it ends the loop.

        Raises:
            MaxToolTurnsExceeded: more than ``max_tool_turns`` rounds.
            ToolError: an unrecoverable tool failure (e.g. a timeout).
            HookError: a hook raised.
            LlmError: the provider failed.
            OutputValidationError, OutputRefusedError: as :meth:`submit`.
        """
        loop = ToolLoop(self, registry, output=OutputPlan.of(output, self.config))
        try:
            return loop.run(prompt)
        finally:
            self._history.extend(loop.new_messages)

    def submit_with_tools_stream(self, prompt: Union[str, Message], registry: ToolRegistry, *,
                                 max_buffered_events: Optional[int] = None, output: Any = None) -> ToolLoopStream:
        """Run the tool loop on a worker thread; return a stream of its events.

        See :class:`~agcore_sync.loop.tool_stream.ToolLoopStream`. With
        ``output=`` (see :meth:`submit_with_tools`) the value is in
        ``stream.final_response.output`` once the stream has ended (and in
        the answer's ``MessageComplete``); a validation failure or refusal
        is the stream's final ``Error`` event.

        Raises:
            TypeError, ValueError: ``output`` is not a usable schema (no thread starts).
        """
        from agcore_sync.loop.tool_stream import ToolLoopStream  # the streaming loop loads with its first use

        return ToolLoopStream(self, registry, prompt, max_buffered_events=max_buffered_events,
                              output=OutputPlan.of(output, self.config))


def _user(prompt: Union[str, Message]) -> Message:
    if isinstance(prompt, Message):
        return prompt
    if not isinstance(prompt, str):
        raise TypeError(f"prompt must be a str or a Message, not {type(prompt).__name__}")
    return Message.user(prompt)
