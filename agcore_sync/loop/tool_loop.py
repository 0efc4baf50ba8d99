"""The automatic tool loop, shared by ``submit_with_tools`` and its stream.

One :class:`ToolLoop` runs one turn: request, tool calls in parallel,
results back, until an answer has no tool calls. Given an ``emit`` callback
it streams (``chat_stream``, every event emitted, tool execution events
around the tools) and checks a cancel ``threading.Event`` between steps;
without one it calls ``chat``. Both modes share every rule: hooks, the
repeated-call guard, result cutting, recoverable vs. fatal tool errors and
what the history keeps.

Approval: a call whose tool has ``requires_approval``, or that a
``PRE_TOOL_USE`` hook answers with ``Defer``, needs a human. A pausable loop
(a session's) runs the round's other calls, then stops with a
:class:`~agcore_sync.loop.pause.PausedTurn` in :attr:`ToolLoop.paused` (and,
streaming, an ``ApprovalRequired`` event last); :meth:`ToolLoop.resume`
goes on from it with the human's decisions. A loop that cannot pause (the
``LlmCycle`` loops) answers such a call with a ``PermissionDeniedError``
result saying so.
"""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, Generator, List, Mapping, Optional, Tuple, Union

import attrs

from agcore_sync import _instrument
from agcore_sync._values import as_tuple, value_methods
from agcore_sync.hooks import Approve, Decision, Defer, Deny, HookEvent
from agcore_sync.llm.errors import LlmError, MaxToolTurnsExceeded, OutputRefusedError
from agcore_sync.llm.types import Message, MessageRequest, MessageResponse, ToolUseBlock, Usage
from agcore_sync.loop._conversation import Conversation
from agcore_sync.loop._driver import Drive, ToolBatch
from agcore_sync.loop._nesting import Nest, nest_of
from agcore_sync.loop._output import OutputPlan
from agcore_sync.loop._results import RepeatGuard, cut_output, cut_utf8, runnable_calls
from agcore_sync.loop.limits import RunUsage, TurnAccount
from agcore_sync.tools.error import PermissionDeniedError, ToolError
from agcore_sync.tools.invocation import ToolCall, ToolInvocation
from agcore_sync.tools.registry import ToolRegistry

if TYPE_CHECKING:  # loaded by the first streamed or paused turn: a plain run needs neither
    from agcore_sync.llm.events import StreamEvent, ToolExecutionCompleted
    from agcore_sync.loop.pause import PausedTurn

__all__ = ["ToolLoop", "TurnRecord", "SUMMARY_CHARS"]

#: ``ToolExecutionCompleted.result_summary`` holds at most this many characters.
SUMMARY_CHARS = 200


class Cancelled(Exception):
    """Raised inside a streaming loop when its cancel Event is set."""


#: What :meth:`ToolLoop._screen` returns for a call that waits for a human.
_WAIT = object()

#: A turn as steps: yields each round's batch of calls, gets their results, returns the final response.
Steps = Generator[ToolBatch, List[ToolInvocation], MessageResponse]


def _arguments_json(call: ToolUseBlock) -> str:
    if isinstance(call.input, str):
        return call.input
    return json.dumps(call.input, ensure_ascii=False)


def _not_run(event_class: Any, call: ToolUseBlock, reason: BaseException) -> ToolExecutionCompleted:
    """Return the Completed event of a call that never ran because ``reason`` ended its round."""
    text = f"not run: {reason}"
    return event_class(call.name, call.id, text[:SUMMARY_CHARS], True, 0.0, output=text)


@attrs.frozen(kw_only=True)
@value_methods
class TurnRecord:
    """What one run of the tool loop leaves behind: the turn's result, as a value.

    A session ends its turn from it (usage, messages, ``ON_TURN_END``), and
    builds one itself for a turn made by hand.

    Args:
        new_messages: the user message and every complete round (and the
            final answer once done): what the history keeps.
        usage_by_model: ``(usage, model)`` of every provider response that
            reported usage, in order.
        responses: every response received, in order.
        final_response: the last response received, or None.
        paused: where the turn stopped to wait for approval, or None (the
            turn ended, or runs on).
        usage: what the turn used (requests, tool calls, tokens, cost), across pauses.
        usage_by_agent: what its agents-as-tools used, by path of agent
            names (``"research"``, ``"research/fact_check"``); included in ``usage``.
    """

    new_messages: Tuple[Message, ...] = attrs.field(default=(), converter=as_tuple)
    usage_by_model: Tuple[Tuple[Usage, Optional[str]], ...] = attrs.field(default=(), converter=as_tuple)
    responses: Tuple[MessageResponse, ...] = attrs.field(default=(), converter=as_tuple)
    final_response: Optional[MessageResponse] = None
    paused: Optional[PausedTurn] = None
    usage: RunUsage = RunUsage()
    usage_by_agent: Mapping[str, RunUsage] = attrs.field(factory=dict)


class ToolLoop:
    """One turn of the automatic tool loop.

    Args:
        cycle: supplies the history, requests, hooks and the provider (an
            :class:`~agcore_sync.loop.cycle.LlmCycle`, or any
            :class:`~agcore_sync.loop._conversation.Conversation`).
        registry: the tools.
        emit: if given, the loop streams and passes every event to it.
        cancel: checked between steps when streaming; also ends retry waits.
        pausable: the turn may pause for approval (a session's loop); if
            False a call that needs approval gets a ``PermissionDeniedError``
            result instead.
        output: the turn's structured output (an
            :class:`~agcore_sync.loop._output.OutputPlan`), or None. The
            answer is then validated and converted into
            ``final_response.output``; an invalid one goes back to the model
            (``output_retries`` times; these retries do not count against
            ``max_tool_turns``), then raises ``OutputValidationError``; a
            refusal raises ``OutputRefusedError`` at once. A turn paused for
            approval keeps its plan only in this loop object (see
            ``docs/design_choices.rst``).

    Attributes:
        new_messages: the user message and every complete round so far (and
            the final answer once done): what the history keeps.
        usage_by_model: ``(usage, model)`` of every provider response that
            reported usage, in order (streams: every ``CostUpdate``, even of
            a response that then failed).
        final_response: the last response received, or None.
        paused: set when the turn paused for approval (then :meth:`run` or
            :meth:`resume` has returned the response whose calls wait).
    """

    def __init__(self, cycle: Conversation, registry: ToolRegistry, *,
                 emit: Optional[Callable[[StreamEvent], None]] = None,
                 cancel: Optional[threading.Event] = None, pausable: bool = False,
                 output: Optional[OutputPlan] = None) -> None:
        self.cycle = cycle
        self.output = output
        self.registry = registry
        self.emit = emit
        # The stream events load with the first streamed turn; a plain run never needs them.
        self._events: Any = None
        if emit is not None:
            from agcore_sync.llm import events

            self._events = events
        self.cancel = cancel if cancel is not None else threading.Event()
        self.new_messages: List[Message] = []
        self.usage_by_model: List[Tuple[Usage, Optional[str]]] = []
        self.final_response: Optional[MessageResponse] = None
        self._responses: List[MessageResponse] = []
        self._guard = RepeatGuard(cycle.config.max_repeated_tool_calls)
        self.pausable = pausable
        self.paused: Optional[PausedTurn] = None
        self._provider_calls = 0
        self._account = TurnAccount()  # counts the turn, checks its usage limits
        self._nest: Optional[Nest] = None  # its agents-as-tools and hand-offs, made with the first batch

    def run(self, prompt: Union[str, Message]) -> MessageResponse:
        """Run the turn for ``prompt`` (a str, or a user :class:`Message` with images...); return the final response.

        If the turn pauses for approval, :attr:`paused` is set and the
        response whose calls wait is returned. The turn may go on in a thread
        of its own from its first tool call with a timeout (see
        ``loop/_driver.py``); this thread waits for it, and if the wait is
        interrupted (Ctrl-C) the turn is cancelled at its next step.
        """
        return self._drive(self.steps(prompt))

    def resume(self, paused: PausedTurn, decisions: Mapping[str, Decision]) -> MessageResponse:
        """Continue ``paused`` with a decision for each waiting call; return the final response.

        See :meth:`resume_steps`; the threads as in :meth:`run`.
        """
        return self._drive(self.resume_steps(paused, decisions))

    def _drive(self, steps: Steps) -> MessageResponse:
        drive = Drive(steps, self.registry, hand_off=True)
        try:
            drive.go()
            drive.ended.wait()
        except BaseException:
            # Interrupted (Ctrl-C) after handing the turn over: its thread stops at its next step.
            self.cancel.set()
            raise
        return drive.outcome()

    def steps(self, prompt: Union[str, Message]) -> Steps:
        """Return the turn for ``prompt`` as steps, for a :class:`~agcore_sync.loop._driver.Drive` to run."""
        self.new_messages = [prompt if isinstance(prompt, Message) else Message.user(prompt)]
        with self._account.start(self.cycle, Cancelled):
            return (yield from self._rounds())

    def resume_steps(self, paused: PausedTurn, decisions: Mapping[str, Decision]) -> Steps:
        """Return the continuation of ``paused``, with a decision for each waiting call, as steps.

        The round's settled calls keep their results; each approved call
        runs now, once (without passing PRE_TOOL_USE again), each denied one
        gets an ``is_error`` result with the reason; then the loop goes on
        and may pause again. The caller checks ``decisions`` first: one
        :class:`~agcore_sync.hooks.Approve` or :class:`~agcore_sync.hooks.Deny`
        per waiting call.
        """
        self.new_messages = list(paused.messages)
        self.usage_by_model = list(paused.usage_by_model)
        self._responses = [paused.final_response]
        self.final_response = paused.final_response
        self._provider_calls = paused.provider_calls
        self._account.resume(paused)
        self._guard.restore(paused.guard)
        with self._account.start(self.cycle, Cancelled):
            self._check_cancel()
            self._nest = nest_of(self._nest, self)
            decisions = self._nest.load(paused.subagents, decisions, self._account)
            results = yield from self._run_tools(paused.assistant.tool_uses, settled=paused.settled_results(),
                                                 decisions=decisions)
            if self._pause_if_waiting(paused.final_response, results):
                return paused.final_response
            self.new_messages = [*self.new_messages, paused.assistant, *results]  # type: ignore[list-item]
            self._nest.switch(self, paused.assistant)  # type: ignore[union-attr]
            return (yield from self._rounds())

    def _rounds(self) -> Steps:
        plan = self.output
        definitions = self.registry.definitions()
        limit = self.cycle.config.tool_turn_limit
        retries = 0
        while self._provider_calls < limit:
            self._check_cancel()
            request = self.cycle.build_request(self.cycle.history_and(self.new_messages), definitions,
                                               output=plan)
            response, error = self._request(request)
            self._provider_calls += 1
            if plan is None and not response.has_tool_calls:
                self.new_messages = [*self.new_messages, response.message]
                return response
            if plan is not None and plan.is_answer(response):
                if error is None:
                    self.new_messages = [*self.new_messages, response.message, *plan.closing_messages(response)]
                    return response
                if isinstance(error, OutputRefusedError) or retries >= plan.retries:
                    raise error
                retries += 1
                self._provider_calls -= 1  # output retries do not count against max_tool_turns
                self.new_messages = [*self.new_messages, response.message,
                                     *plan.retry_messages(response, error)]  # type: ignore[arg-type]
                continue
            results = yield from self._run_tools(response.message.tool_uses)
            if self._pause_if_waiting(response, results):
                return response
            # One reference swap per round: a reader on another thread (a
            # stream's close()) sees whole rounds only.
            self.new_messages = [*self.new_messages, response.message, *results]  # type: ignore[list-item]
            if self._nest is not None and self._nest.switch(self, response.message):  # a hand-off
                definitions, limit = self.registry.definitions(), self.cycle.config.tool_turn_limit
        raise MaxToolTurnsExceeded(
            f"the tool loop made {limit} provider calls and the model still asks for tools; "
            "raise CycleConfig.max_tool_turns or check the tools' answers"
        )

    def record(self) -> TurnRecord:
        """Return what the loop has done so far (all of it once :meth:`run` returned or raised)."""
        return TurnRecord(new_messages=self.new_messages, usage_by_model=self.usage_by_model,
                          responses=self._responses, final_response=self.final_response, paused=self.paused,
                          usage=self._account.used(self.usage_by_model),
                          usage_by_agent={} if self._nest is None else dict(self._nest.by_agent))

    def _pause_if_waiting(self, response: MessageResponse, results: List[Optional[Message]]) -> bool:
        """If some calls of the round wait for approval, pause the turn and return True."""
        if all(result is not None for result in results):
            return False
        from agcore_sync.llm.events import ApprovalRequired
        from agcore_sync.loop.pause import PausedTurn

        nest = self._nest = nest_of(self._nest, self)
        waiting = [call for call, result in zip(response.message.tool_uses, results) if result is None]
        requests = nest.requests_of(waiting)  # a sub-agent's waiting calls stand for its call
        self.paused = PausedTurn(
            messages=self.new_messages, assistant=response.message,
            results=[result for result in results if result is not None], requests=requests,
            provider_calls=self._provider_calls, usage_by_model=self.usage_by_model,
            final_response=response, guard=self._guard.state(),
            subagents=nest.state([call.id for call in waiting]),
        )
        if self.emit is not None:
            self.emit(ApprovalRequired(requests))
        return True

    def _check_cancel(self) -> None:
        if self.cancel.is_set():
            raise Cancelled()

    # -- provider -------------------------------------------------------------

    def _request(self, request: MessageRequest) -> Tuple[MessageResponse, Optional[LlmError]]:
        """Return the response (with ``.output`` once a valid answer) and the output error, if any."""
        self._account.before_request(self.usage_by_model)
        if self.emit is None:
            response = self.cycle.call_provider(request)
            self.usage_by_model.append((response.usage, response.model))
            response, error = self._settle(response)
        else:
            with _instrument.chat(request, self.cycle.provider, stream=True, cancelled=Cancelled) as span:
                response, error = self._request_stream(request)
                span.record(response)
        self._responses.append(response)
        self.final_response = response
        self._account.after_response(self.usage_by_model)
        return response, error

    def _settle(self, response: MessageResponse) -> Tuple[MessageResponse, Optional[LlmError]]:
        response = runnable_calls(response)
        plan = self.output
        if plan is None or not plan.is_answer(response):
            return response, None
        return plan.settle(response)

    def _request_stream(self, request: MessageRequest) -> Tuple[MessageResponse, Optional[LlmError]]:
        # The hot path of a stream: per event only flag and type checks and
        # the hand-off. The response comes whole with MessageComplete; the
        # events are kept to rebuild it for a provider that sends none.
        kinds = self._events
        CostUpdate, MessageComplete, MessageStart = kinds.CostUpdate, kinds.MessageComplete, kinds.MessageStart
        events = self.cycle.open_stream(request, sleep=self.cancel.wait)
        seen: List[StreamEvent] = []
        keep, emit, cancelled = seen.append, self.emit, self.cancel.is_set
        complete: Optional[MessageResponse] = None
        error: Optional[LlmError] = None
        model = request.model or self.cycle.provider.model
        try:
            for event in events:
                if cancelled():
                    raise Cancelled()
                keep(event)
                kind = type(event)
                if kind is MessageComplete:
                    # Settled before it is emitted, so the answer's MessageComplete carries .output.
                    complete, error = self._settle(event.full_response)  # type: ignore[attr-defined]
                    if complete is not event.full_response:  # type: ignore[attr-defined]
                        event = MessageComplete(complete)
                elif kind is CostUpdate:
                    self.usage_by_model.append((event.usage, model))  # type: ignore[attr-defined]
                elif kind is MessageStart:
                    model = event.model or model  # type: ignore[attr-defined]
                emit(event)  # type: ignore[misc]
                if kind is MessageComplete:
                    self.cycle.fire(HookEvent.POST_REQUEST, request=request, response=complete)
        finally:
            close = getattr(events, "close", None)
            if close is not None:
                close()  # closes the HTTP response, also on cancel
        if complete is not None:
            return complete, error
        from agcore_sync.llm.partial import PartialMessageResponse

        partial = PartialMessageResponse()
        for event in seen:
            partial.apply(event)
        return self._settle(partial.finalize())

    # -- tools ----------------------------------------------------------------

    def _run_tools(self, calls: Tuple[ToolUseBlock, ...], *, settled: Optional[Mapping[str, Message]] = None,
                   decisions: Optional[Mapping[str, Decision]] = None
                   ) -> Generator[ToolBatch, List[ToolInvocation], List[Optional[Message]]]:
        """Run one round's calls; return one result message per call, None for a call that waits.

        ``settled`` holds the results of calls already answered before a
        pause (they are not run or announced again); ``decisions`` the human's
        decision for each waiting call (those skip the guard and PRE_TOOL_USE).
        """
        if settled is None:  # a new round (a resumed one was counted before its pause)
            self._account.before_tools(self.usage_by_model, len(calls))
        settled = settled or {}
        decisions = decisions or {}
        emit = self.emit
        active = [i for i, call in enumerate(calls) if call.id not in settled]
        if emit is not None:
            kinds = self._events
            ToolExecutionStarted, ToolExecutionCompleted = kinds.ToolExecutionStarted, kinds.ToolExecutionCompleted
            for i in active:
                emit(ToolExecutionStarted(calls[i].name, calls[i].id, _arguments_json(calls[i])))
        outcomes: List[Optional[ToolInvocation]] = [None] * len(calls)
        waiting: List[int] = []
        to_run: List[int] = []
        try:
            for i in active:
                call = calls[i]
                decision = decisions.get(call.id)
                refusal = self._decided(call, decision) if decision is not None else self._screen(call)
                if refusal is _WAIT:
                    waiting.append(i)
                elif refusal is None:
                    to_run.append(i)
                else:
                    outcomes[i] = self._finish(call, ToolInvocation(call.name, call.input, error=refusal,
                                                                    tool_call_id=call.id), reached_registry=False)
        except BaseException as exc:
            # A PRE_TOOL_USE hook failed: no tool of this round runs, and every
            # Started still gets its Completed before the Error.
            if emit is not None:
                for i in active:
                    if outcomes[i] is None:
                        emit(_not_run(ToolExecutionCompleted, calls[i], exc))
            raise
        if to_run:
            self._check_cancel()
            batch = [ToolCall(calls[i].name, calls[i].input, calls[i].id) for i in to_run]
            done: Dict[int, ToolInvocation] = {}
            nest = self._nest = nest_of(self._nest, self)

            def on_complete(position: int, invocation: ToolInvocation) -> None:
                done[position] = invocation
                if emit is not None and not (invocation.ok and nest.waits(invocation.tool_call_id)):
                    emit(self._completed_event(invocation))

            invocations = yield ToolBatch(batch, self.cycle.config.tool_timeout_secs,
                                          on_complete if emit is not None else None, registry=self.registry)
            nest.fold(self.usage_by_model, self._account)  # what the round's sub-agents used
            for position, (i, invocation) in enumerate(zip(to_run, invocations)):
                if invocation.ok and nest.waits(calls[i].id):
                    waiting.append(i)  # a sub-agent paused for approval: so does this turn
                    continue
                outcomes[i] = self._finish(calls[i], invocation, reached_registry=True,
                                           already_emitted=position in done)
        # Results were cut by _finish; an error's text (a tool may fail with
        # a megabyte of message) is cut here, on its way to the model.
        max_bytes = self.cycle.config.max_tool_result_bytes
        results: List[Optional[Message]] = []
        for call, inv in zip(calls, outcomes):
            if inv is None:
                results.append(settled.get(call.id))  # None: the call waits for a decision
            else:
                results.append(Message.tool_result(inv.tool_call_id or call.id,
                                                   inv.result_content() if inv.ok
                                                   else cut_utf8(inv.content(), max_bytes),
                                                   not inv.ok))
        for inv in outcomes:
            if inv is not None and inv.error is not None and not inv.error.recoverable:
                if emit is not None:  # the waiting calls' Started get their Completed before the Error
                    for i in waiting:
                        emit(_not_run(ToolExecutionCompleted, calls[i], inv.error))
                raise inv.error
        return results

    def _screen(self, call: ToolUseBlock) -> Any:
        """Decide about a new call: None (run it), a refusal, or ``_WAIT`` (ask a human)."""
        refusal = self._guard.refuse(call)
        if refusal is not None:
            return refusal
        arguments = call.input if isinstance(call.input, dict) else {}
        verdict = self.cycle.fire(HookEvent.PRE_TOOL_USE, tool_name=call.name, tool_call_id=call.id,
                                  arguments=arguments)
        if isinstance(verdict, Deny):
            return PermissionDeniedError(f'tool "{call.name}" was denied: {verdict.reason}', call.name)
        if isinstance(verdict, Approve):
            return None
        if not isinstance(verdict, Defer) and not getattr(self.registry.get(call.name), "requires_approval", False):
            return None
        if self.pausable:
            return _WAIT
        return PermissionDeniedError(
            f'tool "{call.name}" needs a human\'s approval and was not run: this tool loop cannot pause to ask '
            "(run the call in an AgentSession turn, or approve it with a PRE_TOOL_USE hook returning Approve())",
            call.name,
        )

    @staticmethod
    def _decided(call: ToolUseBlock, decision: Decision) -> Optional[ToolError]:
        """Return the refusal a human's decision means, or None for Approve."""
        if isinstance(decision, Deny):
            return PermissionDeniedError(f'tool "{call.name}" was denied: {decision.reason}', call.name)
        return None

    def _finish(self, call: ToolUseBlock, invocation: ToolInvocation, *, reached_registry: bool,
                already_emitted: bool = False) -> ToolInvocation:
        invocation = cut_output(invocation, self.cycle.config.max_tool_result_bytes)
        if reached_registry:
            arguments = call.input if isinstance(call.input, dict) else {}
            self.cycle.fire(HookEvent.POST_TOOL_USE, tool_name=call.name, tool_call_id=call.id,
                            arguments=arguments, invocation=invocation)
        if self.emit is not None and not already_emitted:
            self.emit(self._completed_event(invocation))
        return invocation

    def _completed_event(self, invocation: ToolInvocation) -> ToolExecutionCompleted:
        text = cut_utf8(invocation.content(), self.cycle.config.max_tool_result_bytes)
        return self._events.ToolExecutionCompleted(invocation.tool_name, invocation.tool_call_id or "",
                                                   text[:SUMMARY_CHARS], not invocation.ok, invocation.duration_s,
                                                   output=text)

