"""The automatic tool loop, shared by ``submit_with_tools`` and its stream.

One :class:`ToolLoop` runs one turn: request, tool calls in parallel,
results back, until an answer has no tool calls. Given an ``emit`` callback
it streams (``chat_stream``, every event emitted, tool execution events
around the tools) and checks a cancel ``threading.Event`` between steps;
without one it calls ``chat``. Both modes share every rule: hooks, the
repeated-call guard, result cutting, recoverable vs. fatal tool errors and
what the history keeps.
"""

from __future__ import annotations

import json
import threading
from typing import Callable, Dict, List, Optional, Tuple

import attrs

from agcore_sync import _instrument
from agcore_sync.hooks import HookEvent
from agcore_sync.llm.cost import Pricing, PricingArg, find_pricing
from agcore_sync.llm.errors import MaxToolTurnsExceeded
from agcore_sync.llm.events import (
    CostUpdate,
    MessageComplete,
    MessageStart,
    StreamEvent,
    ToolExecutionCompleted,
    ToolExecutionStarted,
)
from agcore_sync.llm.partial import PartialMessageResponse
from agcore_sync.llm.types import Message, MessageRequest, MessageResponse, ToolUseBlock, Usage
from agcore_sync.loop._conversation import Conversation
from agcore_sync.loop.limits import CostFn, RunUsage, UsageMeter, run_usage
from agcore_sync.tools.error import PermissionDeniedError, ToolError
from agcore_sync.tools.invocation import ToolInvocation
from agcore_sync.tools.registry import ToolRegistry

__all__ = ["ToolLoop", "TurnRecord", "cut_utf8", "SUMMARY_CHARS"]

#: ``ToolExecutionCompleted.result_summary`` holds at most this many characters.
SUMMARY_CHARS = 200


class Cancelled(Exception):
    """Raised inside a streaming loop when its cancel Event is set."""


def cut_utf8(text: str, max_bytes: Optional[int]) -> str:
    """Return ``text`` cut to ``max_bytes`` of UTF-8 on a character boundary.

    A cut text ends with a marker saying how many bytes were cut.
    """
    if max_bytes is None:
        return text
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return text
    head = data[:max_bytes].decode("utf-8", "ignore")
    cut = len(data) - len(head.encode("utf-8", "surrogatepass"))
    return f"{head}\n[... {cut} bytes cut: the result was longer than {max_bytes} bytes]"


def _arguments_json(call: ToolUseBlock) -> str:
    if isinstance(call.input, str):
        return call.input
    return json.dumps(call.input, ensure_ascii=False)


def _cut_output(invocation: ToolInvocation, max_bytes: Optional[int]) -> ToolInvocation:
    """Return ``invocation`` with its output replaced by the cut text if too long."""
    if max_bytes is None or not invocation.ok:
        return invocation
    text = invocation.content()
    cut = cut_utf8(text, max_bytes)
    if cut is text:
        return invocation
    return ToolInvocation(invocation.tool_name, invocation.input, output=cut,
                          tool_call_id=invocation.tool_call_id, duration_s=invocation.duration_s)


@attrs.frozen(kw_only=True)
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
        usage: requests, tool calls, tokens and cost of the turn (what
            usage limits count).
    """

    new_messages: Tuple[Message, ...] = attrs.field(default=(), converter=tuple)
    usage_by_model: Tuple[Tuple[Usage, Optional[str]], ...] = attrs.field(default=(), converter=tuple)
    responses: Tuple[MessageResponse, ...] = attrs.field(default=(), converter=tuple)
    final_response: Optional[MessageResponse] = None
    usage: RunUsage = RunUsage()


class _RepeatGuard:
    """Refuses a call identical to the previous ``limit`` calls in a row."""

    def __init__(self, limit: Optional[int]) -> None:
        self.limit = limit
        self.last: Optional[Tuple[str, str]] = None
        self.count = 0

    def refuse(self, call: ToolUseBlock) -> Optional[ToolError]:
        key = (call.name, json.dumps(call.input, sort_keys=True, separators=(",", ":")))
        self.count = self.count + 1 if key == self.last else 1
        self.last = key
        if self.limit is None or self.count <= self.limit:
            return None
        return ToolError(
            f'tool "{call.name}" was called with the same arguments {self.count} times in a row and was '
            "not run again; change the arguments or answer without this tool",
            call.name,
        )


def _pricer(pricing: PricingArg) -> CostFn:
    """Return ``cost(usage, model)`` with each model's price looked up once."""
    prices: Dict[Optional[str], Optional[Pricing]] = {}

    def cost(usage: Usage, model: Optional[str]) -> Optional[float]:
        if model not in prices:
            prices[model] = find_pricing(model, pricing)
        price = prices[model]
        return None if price is None else price.cost(usage)

    return cost


class ToolLoop:
    """One turn of the automatic tool loop.

    Args:
        cycle: supplies the history, requests, hooks and the provider (an
            :class:`~agcore_sync.loop.cycle.LlmCycle`, or any
            :class:`~agcore_sync.loop._conversation.Conversation`).
        registry: the tools.
        emit: if given, the loop streams and passes every event to it.
        cancel: checked between steps when streaming; also ends retry waits.

    Attributes:
        new_messages: the user message and every complete round so far (and
            the final answer once done): what the history keeps.
        usage_by_model: ``(usage, model)`` of every provider response that
            reported usage, in order (streams: every ``CostUpdate``, even of
            a response that then failed).
        final_response: the last response received, or None.
    """

    def __init__(self, cycle: Conversation, registry: ToolRegistry, *,
                 emit: Optional[Callable[[StreamEvent], None]] = None,
                 cancel: Optional[threading.Event] = None) -> None:
        self.cycle = cycle
        self.registry = registry
        self.emit = emit
        self.cancel = cancel if cancel is not None else threading.Event()
        self.new_messages: List[Message] = []
        self.usage_by_model: List[Tuple[Usage, Optional[str]]] = []
        self.final_response: Optional[MessageResponse] = None
        self._responses: List[MessageResponse] = []
        self._guard = _RepeatGuard(cycle.config.max_repeated_tool_calls)
        self._price: CostFn = _pricer(getattr(cycle, "pricing", None) or getattr(cycle.provider, "pricing", None))
        self._meter = UsageMeter.create(cycle.config.usage_limits, getattr(cycle, "session_limits", None))
        self._requests = 0
        self._tool_calls = 0

    def run(self, prompt: str) -> MessageResponse:
        """Run the turn for ``prompt``; return the final response.

        Raises:
            UsageLimitExceeded: a usage limit (of the turn or the session) was hit.
        """
        with _instrument.loop_turn(Cancelled):
            return self._run(prompt)

    def _run(self, prompt: str) -> MessageResponse:
        config = self.cycle.config
        self.new_messages = [Message.user(prompt)]
        definitions = self.registry.definitions()
        limit = config.tool_turn_limit
        for _ in range(limit):
            self._check_cancel()
            request = self.cycle.build_request([*self.cycle.messages(), *self.new_messages], definitions)
            response = self._request(request)
            if not response.has_tool_calls:
                self.new_messages = [*self.new_messages, response.message]
                return response
            results = self._run_tools(response.message.tool_uses)
            # One reference swap per round: a reader on another thread (a
            # stream's close()) sees whole rounds only.
            self.new_messages = [*self.new_messages, response.message, *results]
        raise MaxToolTurnsExceeded(
            f"the tool loop made {limit} provider calls and the model still asks for tools; "
            "raise CycleConfig.max_tool_turns or check the tools' answers"
        )

    def record(self) -> TurnRecord:
        """Return what the loop has done so far (all of it once :meth:`run` returned or raised)."""
        return TurnRecord(new_messages=self.new_messages, usage_by_model=self.usage_by_model,
                          responses=self._responses, final_response=self.final_response,
                          usage=self._used())

    def _used(self) -> RunUsage:
        return run_usage(self._requests, self._tool_calls, self.usage_by_model, self._price)

    def _check_cancel(self) -> None:
        if self.cancel.is_set():
            raise Cancelled()

    # -- provider -------------------------------------------------------------

    def _request(self, request: MessageRequest) -> MessageResponse:
        meter = self._meter
        if meter is not None:
            meter.before_request(self._used())
        self._requests += 1
        if self.emit is None:
            response = self.cycle.call_provider(request)
            self.usage_by_model.append((response.usage, response.model))
        else:
            response = self._request_stream(request)
        self._responses.append(response)
        self.final_response = response
        if meter is not None:
            meter.after_response(self._used())
        return response

    def _request_stream(self, request: MessageRequest) -> MessageResponse:
        with _instrument.chat(request, self.cycle.provider, stream=True) as span:
            try:
                response = self._read_stream(request)
            except Cancelled:
                span.cancel()
                raise
            span.record(response)
            return response

    def _read_stream(self, request: MessageRequest) -> MessageResponse:
        # The hot path of a stream: per event only flag and type checks and
        # the hand-off. The response comes whole with MessageComplete; the
        # events are kept to rebuild it for a provider that sends none.
        events = self.cycle.open_stream(request, sleep=self.cancel.wait)
        seen: List[StreamEvent] = []
        keep, emit, cancelled = seen.append, self.emit, self.cancel.is_set
        complete: Optional[MessageResponse] = None
        model = request.model or self.cycle.provider.model
        try:
            for event in events:
                if cancelled():
                    raise Cancelled()
                keep(event)
                kind = type(event)
                if kind is MessageComplete:
                    complete = event.full_response  # type: ignore[attr-defined]
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
            return complete
        partial = PartialMessageResponse()
        for event in seen:
            partial.apply(event)
        return partial.finalize()

    # -- tools ----------------------------------------------------------------

    def _run_tools(self, calls: Tuple[ToolUseBlock, ...]) -> List[Message]:
        if self._meter is not None:
            self._meter.before_tools(self._used(), len(calls))
        self._tool_calls += len(calls)
        emit = self.emit
        if emit is not None:
            for call in calls:
                emit(ToolExecutionStarted(call.name, call.id, _arguments_json(call)))
        outcomes: List[Optional[ToolInvocation]] = [None] * len(calls)
        to_run: List[int] = []
        try:
            for i, call in enumerate(calls):
                refusal = self._guard.refuse(call) or self._pre_tool_use(call)
                if refusal is None:
                    to_run.append(i)
                else:
                    outcomes[i] = self._finish(call, ToolInvocation(call.name, call.input, error=refusal,
                                                                    tool_call_id=call.id), reached_registry=False)
        except BaseException as exc:
            # A PRE_TOOL_USE hook failed: no tool of this round runs, and every
            # Started still gets its Completed before the Error.
            if emit is not None:
                for call, outcome in zip(calls, outcomes):
                    if outcome is None:
                        emit(ToolExecutionCompleted(call.name, call.id, f"not run: {exc}"[:SUMMARY_CHARS], True, 0.0))
            raise
        if to_run:
            self._check_cancel()
            batch = [(calls[i].id, calls[i].name, calls[i].input) for i in to_run]
            done: Dict[int, ToolInvocation] = {}

            def on_complete(position: int, invocation: ToolInvocation) -> None:
                done[position] = invocation
                if emit is not None:
                    emit(self._completed_event(invocation))

            invocations = self.registry.invoke_all(
                batch, timeout=self.cycle.config.tool_timeout_secs,
                on_complete=on_complete if emit is not None else None,
            )
            for position, (i, invocation) in enumerate(zip(to_run, invocations)):
                outcomes[i] = self._finish(calls[i], invocation, reached_registry=True,
                                           already_emitted=position in done)
        # Results were cut by _finish; an error's text (a tool may fail with
        # a megabyte of message) is cut here, on its way to the model.
        max_bytes = self.cycle.config.max_tool_result_bytes
        results = [Message.tool_result(inv.tool_call_id or call.id,
                                       inv.content() if inv.ok else cut_utf8(inv.content(), max_bytes), not inv.ok)
                   for call, inv in zip(calls, outcomes)]  # type: ignore[union-attr]
        for inv in outcomes:
            if inv is not None and inv.error is not None and not inv.error.recoverable:
                raise inv.error
        return results

    def _pre_tool_use(self, call: ToolUseBlock) -> Optional[ToolError]:
        arguments = call.input if isinstance(call.input, dict) else {}
        deny = self.cycle.fire(HookEvent.PRE_TOOL_USE, tool_name=call.name, tool_call_id=call.id,
                               arguments=arguments)
        if deny is None:
            return None
        return PermissionDeniedError(f'tool "{call.name}" was denied: {deny.reason}', call.name)

    def _finish(self, call: ToolUseBlock, invocation: ToolInvocation, *, reached_registry: bool,
                already_emitted: bool = False) -> ToolInvocation:
        invocation = _cut_output(invocation, self.cycle.config.max_tool_result_bytes)
        if reached_registry:
            arguments = call.input if isinstance(call.input, dict) else {}
            self.cycle.fire(HookEvent.POST_TOOL_USE, tool_name=call.name, tool_call_id=call.id,
                            arguments=arguments, invocation=invocation)
        if self.emit is not None and not already_emitted:
            self.emit(self._completed_event(invocation))
        return invocation

    def _completed_event(self, invocation: ToolInvocation) -> ToolExecutionCompleted:
        text = cut_utf8(invocation.content(), self.cycle.config.max_tool_result_bytes)
        return ToolExecutionCompleted(invocation.tool_name, invocation.tool_call_id or "",
                                      text[:SUMMARY_CHARS], not invocation.ok, invocation.duration_s)

