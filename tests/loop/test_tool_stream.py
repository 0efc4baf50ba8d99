"""submit_with_tools_stream: event order, seed 004's error table, cancellation, backpressure, hooks, threads."""

from __future__ import annotations

import gc
import queue
import threading
import weakref

import pytest

from agcore_sync.hooks import Deny, HookError, HookEvent, Hooks
from agcore_sync.llm.errors import LlmConnectionError, MaxToolTurnsExceeded, ServerError
from agcore_sync.llm.events import (
    ContentBlockEnd,
    ContentBlockStart,
    CostUpdate,
    Error,
    MessageComplete,
    MessageStart,
    TextDelta,
    ToolExecutionCompleted,
    ToolExecutionStarted,
)
from agcore_sync.llm.mock import MockProvider, events_for
from agcore_sync.llm.retry import RetryConfig
from agcore_sync.llm.types import Message, Role, StopReason, Usage
from agcore_sync.loop.cycle import CycleConfig, LlmCycle
from agcore_sync.tools.error import ToolError, ToolTimeoutError
from agcore_sync.tools.function import tool
from agcore_sync.tools.registry import ToolRegistry

#: Bound on every wait for something that must happen.
WAIT = 5.0
#: How long a check waits for something that must not happen.
NEVER = 0.2

TEXT = ["MessageStart", "ContentBlockStart", "TextDelta*", "ContentBlockEnd"]
TEXT_BLOCK = ["ContentBlockStart", "TextDelta*", "ContentBlockEnd"]
TOOL_BLOCK = ["ContentBlockStart", "ToolCallArgumentsDelta*", "ToolCallEnd", "ContentBlockEnd"]
END = ["CostUpdate", "MessageComplete"]
PAIR = ["ToolExecutionStarted", "ToolExecutionCompleted"]


def shape(events):
    """Return the events' class names, each run of deltas collapsed to ``Name*``."""
    names = []
    for event in events:
        name = type(event).__name__
        if name.endswith("Delta"):
            name += "*"
            if names and names[-1] == name:
                continue
        names.append(name)
    return names


class Gate:
    """Lets a test hold a tool or a provider read at a known point."""

    def __init__(self):
        self.entered = threading.Event()
        self.release = threading.Event()
        self.calls = 0

    def hold(self):
        self.calls += 1
        self.entered.set()
        self.release.wait(WAIT)


@pytest.fixture
def gate():
    """Make Gates; every one is released at teardown, so a failed test never leaves a tool blocked."""
    made = []

    def make():
        made.append(Gate())
        return made[-1]

    yield make
    for g in made:
        g.release.set()


def held_tool(g, name="held"):
    @tool(name=name)
    def held() -> str:
        g.hold()
        return "released"

    return held


class HeldText:
    """A text stream that sends "Hello", then waits on a gate as a slow network read would."""

    def __init__(self, g):
        self.gate = g
        self.closed = threading.Event()
        self.finished = False

    def __call__(self, request):
        try:
            yield MessageStart("r-held", "scripted")
            yield ContentBlockStart(0, "text")
            yield TextDelta("Hello")
            self.gate.hold()
            yield TextDelta(", world")
            yield ContentBlockEnd(0)
            yield CostUpdate(Usage(5, 2))
            self.finished = True
        finally:
            self.closed.set()


class Counted:
    """A text stream that records how many events it has handed out."""

    def __init__(self, response):
        self.events = list(events_for(response))
        self.reached = [threading.Event() for _ in range(len(self.events) + 1)]
        self.count = 0
        self.closed = threading.Event()

    def __call__(self, request):
        try:
            for event in self.events:
                self.count += 1
                self.reached[self.count].set()
                yield event
        finally:
            self.closed.set()


def run(provider, registry, config=None, prompt="go", **kwargs):
    cycle = LlmCycle(provider, config or CycleConfig())
    return cycle, list(cycle.submit_with_tools_stream(prompt, registry, **kwargs))


# -- event order (seed 004 §3.2 as amended in Round 3) ---------------------------------------------------------


def test_a_text_only_answer_streams_exactly_the_provider_events():
    answer = MockProvider.text("The answer is forty-two.")
    provider = MockProvider([answer])
    with ToolRegistry() as empty:
        cycle, events = run(provider, empty)
    assert shape(events) == TEXT + END
    assert events == list(events_for(answer, events[-2].cost_usd))
    assert events[-1].full_response.stop_reason is StopReason.STOP
    assert [m.text for m in cycle.messages()] == ["go", "The answer is forty-two."]


def test_one_tool_round_puts_started_and_completed_between_the_two_responses(registry):
    provider = MockProvider([
        MockProvider.tool_calls(("c1", "add", {"a": 17, "b": 25}), text="Let me add."),
        MockProvider.text("It is 42."),
    ])
    _, events = run(provider, registry)
    assert shape(events) == TEXT + TOOL_BLOCK + END + PAIR + TEXT + END
    complete = [e for e in events if isinstance(e, MessageComplete)]
    assert [c.full_response.stop_reason for c in complete] == [StopReason.TOOL_USE, StopReason.STOP]
    started = next(e for e in events if isinstance(e, ToolExecutionStarted))
    done = next(e for e in events if isinstance(e, ToolExecutionCompleted))
    assert (started.tool_name, started.tool_call_id, started.arguments) == ("add", "c1", '{"a": 17, "b": 25}')
    assert (done.tool_name, done.tool_call_id, done.result_summary, done.is_error) == ("add", "c1", "42", False)
    assert done.duration_s >= 0.0


def test_several_rounds_give_one_pair_per_round_and_the_history_keeps_every_round(registry):
    provider = MockProvider([
        MockProvider.tool_calls(("c1", "add", {"a": 1, "b": 2})),
        MockProvider.tool_calls(("c2", "add", {"a": 3, "b": 3})),
        MockProvider.tool_calls(("c3", "add", {"a": 6, "b": 4})),
        MockProvider.text("10"),
    ])
    cycle, events = run(provider, registry)
    tool_round = ["MessageStart", *TOOL_BLOCK, *END, *PAIR]
    assert shape(events) == tool_round * 3 + TEXT + END
    assert [e.result_summary for e in events if isinstance(e, ToolExecutionCompleted)] == ["3", "6", "10"]
    history = cycle.messages()
    assert [m.role for m in history] == [Role.USER] + [Role.ASSISTANT, Role.TOOL] * 3 + [Role.ASSISTANT]
    assert len(history) == 8


def test_every_started_event_of_a_response_comes_before_any_of_its_tools_runs(registry):
    ran = []
    any_ran = threading.Event()

    @tool
    def note(label: str) -> str:
        ran.append(label)
        any_ran.set()
        return label

    registry.register(note)
    provider = MockProvider([
        MockProvider.tool_calls(("c1", "note", {"label": "a"}), ("c2", "note", {"label": "b"}),
                                ("c3", "note", {"label": "c"})),
        MockProvider.text("noted"),
    ])
    cycle = LlmCycle(provider, CycleConfig())
    with cycle.submit_with_tools_stream("go", registry, max_buffered_events=1) as stream:
        events = []
        for event in stream:
            events.append(event)
            if isinstance(event, ToolExecutionStarted):
                break
        # The queue holds one event (the second Started), so the worker is
        # still waiting to emit the third Started: no tool may have run.
        assert not any_ran.wait(NEVER)
        assert ran == []
        events.extend(stream)
    names = shape(events)
    first = names.index("ToolExecutionStarted")
    assert names[first:first + 6] == ["ToolExecutionStarted"] * 3 + ["ToolExecutionCompleted"] * 3
    assert [e.tool_call_id for e in events if isinstance(e, ToolExecutionStarted)] == ["c1", "c2", "c3"]
    assert sorted(ran) == ["a", "b", "c"]


def test_tools_of_one_response_run_in_parallel_and_completed_events_follow_finishing_order(registry):
    everyone_running = threading.Barrier(3, timeout=WAIT)
    release = {label: threading.Event() for label in "abc"}

    @tool
    def step(label: str) -> str:
        everyone_running.wait()  # breaks (an error result) unless all three run at once
        release[label].wait(WAIT)
        return f"{label} done"

    registry.register(step)
    provider = MockProvider([
        MockProvider.tool_calls(("c1", "step", {"label": "a"}), ("c2", "step", {"label": "b"}),
                                ("c3", "step", {"label": "c"})),
        MockProvider.text("all done"),
    ])
    cycle = LlmCycle(provider, CycleConfig())
    try:
        with cycle.submit_with_tools_stream("go", registry) as stream:
            started = []
            for event in stream:
                if isinstance(event, ToolExecutionStarted):
                    started.append(event)
                    if len(started) == 3:
                        break
            completed = []
            for label in "cab":  # finish in an order different from the call order
                release[label].set()
                event = next(stream)
                assert isinstance(event, ToolExecutionCompleted)
                completed.append(event)
            rest = list(stream)
    finally:
        for event in release.values():
            event.set()
    assert [e.tool_call_id for e in completed] == ["c3", "c1", "c2"]
    assert [(e.result_summary, e.is_error) for e in completed] == [("c done", False), ("a done", False),
                                                                   ("b done", False)]
    assert shape(rest) == TEXT + END
    results = provider.requests[1].messages[-3:]
    assert [m.role for m in results] == [Role.TOOL] * 3
    assert [(m.content[0].tool_use_id, m.content[0].content) for m in results] == [
        ("c1", "a done"), ("c2", "b done"), ("c3", "c done")]
    assert [m.role for m in cycle.messages()] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.TOOL, Role.TOOL,
                                                  Role.ASSISTANT]


# -- the seed's error table (§3.6) -------------------------------------------------------------------------


def test_a_failing_provider_call_is_one_error_event_and_nothing_after_it(registry):
    provider = MockProvider([ServerError("upstream down", status_code=503)])
    cycle = LlmCycle(provider, CycleConfig(retry=None))
    stream = cycle.submit_with_tools_stream("go", registry)
    events = list(stream)
    assert shape(events) == ["Error"]
    assert isinstance(events[0].error, ServerError) and "upstream down" in events[0].message
    with pytest.raises(StopIteration):
        next(stream)
    assert len(provider.requests) == 1
    assert cycle.messages() == [Message.user("go")]
    assert stream.final_response is None


@pytest.mark.parametrize("retry", [None, RetryConfig(max_retries=3, initial_backoff=0.0, jitter=False)],
                         ids=["retry-off", "retry-on"])
def test_a_stream_that_fails_half_way_ends_with_an_error_after_the_events_it_sent(registry, retry):
    broken = MockProvider.failing_stream(MockProvider.text("Hello"), after_events=3,
                                         error=LlmConnectionError("connection reset by peer"))
    provider = MockProvider([broken])
    # With retry on too: a stream is retried only before its first event.
    cycle = LlmCycle(provider, CycleConfig(retry=retry))
    events = list(cycle.submit_with_tools_stream("go", registry))
    assert shape(events) == ["MessageStart", "ContentBlockStart", "TextDelta*", "Error"]
    assert isinstance(events[-1].error, LlmConnectionError)
    assert len(provider.requests) == 1
    assert cycle.messages() == [Message.user("go")]


def test_a_recoverable_tool_error_goes_back_to_the_model_and_no_error_event_is_sent(registry):
    @tool
    def explode(x: int) -> int:
        raise ValueError(f"cannot handle {x}")

    registry.register(explode)
    provider = MockProvider([MockProvider.tool_calls(("c1", "explode", {"x": 7})), MockProvider.text("sorry")])
    cycle, events = run(provider, registry)
    assert "Error" not in shape(events)
    done = next(e for e in events if isinstance(e, ToolExecutionCompleted))
    assert done.is_error and "explode" in done.result_summary and "cannot handle 7" in done.result_summary
    result = provider.requests[1].messages[-1].content[0]
    assert result.is_error and result.tool_use_id == "c1" and "cannot handle 7" in result.content
    assert events[-1].full_response.message.text == "sorry"


def test_an_unrecoverable_tool_error_sends_every_completed_event_then_one_error(registry):
    @tool
    def disk() -> str:
        raise ToolError("the disk is gone", recoverable=False)

    registry.register(disk)
    provider = MockProvider([
        MockProvider.tool_calls(("c1", "add", {"a": 1, "b": 1}), ("c2", "disk", {})),
        MockProvider.text("never requested"),
    ])
    cycle, events = run(provider, registry)
    names = shape(events)
    assert names[names.index("ToolExecutionStarted"):] == ["ToolExecutionStarted"] * 2 + [
        "ToolExecutionCompleted"] * 2 + ["Error"]
    completed = {e.tool_call_id: e.is_error for e in events if isinstance(e, ToolExecutionCompleted)}
    assert completed == {"c1": False, "c2": True}
    assert isinstance(events[-1].error, ToolError) and not events[-1].error.recoverable
    assert len(provider.requests) == 1
    # The assistant message whose tools failed unrecoverably is not kept.
    assert cycle.messages() == [Message.user("go")]


def test_a_tool_that_times_out_is_completed_with_an_error_then_an_error_event_ends_the_stream(registry, gate):
    g = gate()
    registry.register(held_tool(g, "slow"))
    provider = MockProvider([MockProvider.tool_calls(("c1", "slow", {})), MockProvider.text("never requested")])
    cycle, events = run(provider, registry, CycleConfig(tool_timeout_secs=0.2))
    assert g.entered.is_set()
    g.release.set()
    assert shape(events)[-3:] == [*PAIR, "Error"]
    done = events[-2]
    assert done.is_error and "timeout" in done.result_summary
    assert isinstance(events[-1].error, ToolTimeoutError)
    assert len(provider.requests) == 1
    assert cycle.messages() == [Message.user("go")]


def test_more_rounds_than_max_tool_turns_ends_with_an_error_and_keeps_those_rounds(registry):
    provider = MockProvider([MockProvider.tool_calls(("c1", "add", {"a": 1, "b": 1})),
                             MockProvider.tool_calls(("c2", "add", {"a": 2, "b": 2})),
                             MockProvider.tool_calls(("c3", "add", {"a": 3, "b": 3}))])
    cycle, events = run(provider, registry, CycleConfig(max_tool_turns=2))
    tool_round = ["MessageStart", *TOOL_BLOCK, *END, *PAIR]
    assert shape(events) == tool_round * 2 + ["Error"]
    # The tools of the second (last allowed) response still ran.
    assert [e.result_summary for e in events if isinstance(e, ToolExecutionCompleted)] == ["2", "4"]
    assert isinstance(events[-1].error, MaxToolTurnsExceeded)
    assert len(provider.requests) == 2 and provider.remaining == 1
    assert [m.role for m in cycle.messages()] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT, Role.TOOL]


class BrokenRegistry(ToolRegistry):
    def definitions(self):
        raise RuntimeError("definitions are broken")


def _provider_that_is_buggy():
    return MockProvider([RuntimeError("a bug in the provider")]), ToolRegistry(), "a bug in the provider"


def _registry_that_is_buggy():
    return MockProvider([MockProvider.text("unused")]), BrokenRegistry(), "definitions are broken"


@pytest.mark.parametrize("make", [_provider_that_is_buggy, _registry_that_is_buggy],
                         ids=["provider-raises-RuntimeError", "definitions-raises"])
def test_an_exception_escaping_the_loop_itself_still_becomes_an_error_event(make):
    provider, reg, text = make()
    with reg:
        cycle = LlmCycle(provider, CycleConfig(retry=None))
        stream = cycle.submit_with_tools_stream("go", reg)
        events = list(stream)
        stream.worker.join(WAIT)
    assert shape(events) == ["Error"]
    assert isinstance(events[0].error, RuntimeError) and text in events[0].message
    assert not stream.worker.is_alive()


# -- cancellation ----------------------------------------------------------------------------------------------


def test_close_mid_text_stops_the_worker_and_closes_the_provider_stream(registry, gate):
    held = HeldText(gate())
    provider = MockProvider([MockProvider.stream(held)])
    cycle = LlmCycle(provider, CycleConfig())
    stream = cycle.submit_with_tools_stream("go", registry)
    first = [next(stream) for _ in range(3)]
    assert shape(first) == ["MessageStart", "ContentBlockStart", "TextDelta*"]
    assert held.gate.entered.wait(WAIT)  # the worker is inside a provider read
    stream.close()
    assert list(stream) == []
    held.gate.release.set()  # the read returns; the worker must stop at once
    stream.worker.join(WAIT)
    assert not stream.worker.is_alive()
    assert held.closed.is_set() and not held.finished
    assert len(provider.requests) == 1
    assert stream.final_response is None
    assert stream.new_messages == (Message.user("go"),)
    assert cycle.messages() == [Message.user("go")]


def test_close_during_a_running_tool_lets_it_finish_and_starts_no_new_provider_call(registry, gate):
    g = gate()
    registry.register(held_tool(g))
    provider = MockProvider([MockProvider.tool_calls(("c1", "held", {})), MockProvider.text("never requested")])
    cycle = LlmCycle(provider, CycleConfig())
    stream = cycle.submit_with_tools_stream("go", registry)
    for event in stream:
        if isinstance(event, ToolExecutionStarted):
            break
    assert g.entered.wait(WAIT)
    stream.close()
    assert stream.closed and list(stream) == []
    g.release.set()
    stream.worker.join(WAIT)
    assert not stream.worker.is_alive()
    assert g.calls == 1
    assert len(provider.requests) == 1 and provider.remaining == 1
    # The round whose tool was running is incomplete: only the user message is kept.
    assert stream.new_messages == (Message.user("go"),)
    assert cycle.messages() == [Message.user("go")]


def test_close_after_the_started_events_runs_none_of_the_tools(registry, gate):
    g = gate()
    ran = []

    @tool
    def record(x: int) -> int:
        ran.append(x)
        return x

    registry.register(record)
    hooks = Hooks()
    hooks.on(HookEvent.PRE_TOOL_USE, lambda ctx: g.hold())  # holds the worker between Started and the tools
    provider = MockProvider([MockProvider.tool_calls(("c1", "record", {"x": 1})), MockProvider.text("never")])
    stream = LlmCycle(provider, CycleConfig(), hooks=hooks).submit_with_tools_stream("go", registry)
    for event in stream:
        if isinstance(event, ToolExecutionStarted):
            break
    assert g.entered.wait(WAIT)
    stream.close()
    g.release.set()
    stream.worker.join(WAIT)
    assert not stream.worker.is_alive()
    assert ran == []
    assert len(provider.requests) == 1


def test_leaving_a_with_block_closes_the_stream(registry, gate):
    held = HeldText(gate())
    provider = MockProvider([MockProvider.stream(held)])
    with LlmCycle(provider, CycleConfig()).submit_with_tools_stream("go", registry) as stream:
        assert isinstance(next(stream), MessageStart)
        assert held.gate.entered.wait(WAIT)
    assert stream.closed
    held.gate.release.set()
    stream.worker.join(WAIT)
    assert not stream.worker.is_alive() and held.closed.is_set() and not held.finished
    assert len(provider.requests) == 1


def test_dropping_the_last_reference_closes_the_stream_when_it_is_collected(registry, gate):
    held = HeldText(gate())
    provider = MockProvider([MockProvider.stream(held)])
    cycle = LlmCycle(provider, CycleConfig())
    stream = cycle.submit_with_tools_stream("go", registry)
    worker = stream.worker
    alive = weakref.ref(stream)
    assert isinstance(next(stream), MessageStart)
    assert held.gate.entered.wait(WAIT)
    del stream
    gc.collect()
    assert alive() is None
    held.gate.release.set()
    worker.join(WAIT)
    assert not worker.is_alive() and held.closed.is_set() and not held.finished
    assert len(provider.requests) == 1
    assert cycle.messages() == [Message.user("go")]


def test_close_from_another_thread_ends_the_step_of_a_consumer_blocked_in_next(registry, gate):
    g = gate()
    registry.register(held_tool(g))
    provider = MockProvider([MockProvider.tool_calls(("c1", "held", {})), MockProvider.text("never requested")])
    cycle = LlmCycle(provider, CycleConfig())
    stream = cycle.submit_with_tools_stream("go", registry)
    received = queue.Queue()
    end = object()

    def consume():
        for event in stream:
            received.put(event)
        received.put(end)

    consumer = threading.Thread(target=consume, name="test-consumer")
    consumer.start()
    try:
        while not isinstance(received.get(timeout=WAIT), ToolExecutionStarted):
            pass
        assert g.entered.wait(WAIT)  # the queue is empty: the consumer is blocked in next()
        stream.close()
        consumer.join(WAIT)
        assert not consumer.is_alive()
    finally:
        g.release.set()
        consumer.join(WAIT)
    assert received.get_nowait() is end and received.empty()
    stream.worker.join(WAIT)
    assert not stream.worker.is_alive()
    assert len(provider.requests) == 1
    assert cycle.messages() == [Message.user("go")]


def test_close_is_idempotent_and_does_nothing_after_exhaustion(registry):
    provider = MockProvider([MockProvider.text("done")])
    cycle = LlmCycle(provider, CycleConfig())
    stream = cycle.submit_with_tools_stream("go", registry)
    events = list(stream)
    stream.close()
    stream.close()
    assert shape(events) == TEXT + END
    assert [m.text for m in cycle.messages()] == ["go", "done"]


# -- backpressure ----------------------------------------------------------------------------------------------


def test_a_bounded_queue_holds_the_worker_back_until_the_consumer_reads(registry):
    counted = Counted(MockProvider.text("x" * 80))
    provider = MockProvider([MockProvider.stream(counted)])
    cycle = LlmCycle(provider, CycleConfig())
    with cycle.submit_with_tools_stream("go", registry, max_buffered_events=1) as stream:
        # One event waits in the queue, the worker holds the second: the provider is asked for no third.
        assert counted.reached[2].wait(WAIT)
        assert not counted.reached[3].wait(NEVER)
        received = []
        for event in stream:
            received.append(event)
            assert counted.count <= len(received) + 2
    assert received == counted.events


def test_a_worker_waiting_on_a_full_queue_still_notices_close(registry):
    counted = Counted(MockProvider.text("x" * 800))
    provider = MockProvider([MockProvider.stream(counted)])
    stream = LlmCycle(provider, CycleConfig()).submit_with_tools_stream("go", registry, max_buffered_events=1)
    assert counted.reached[2].wait(WAIT)  # the worker now waits to put the second event
    stream.close()
    stream.worker.join(WAIT)
    assert not stream.worker.is_alive()
    assert counted.closed.is_set()
    assert counted.count <= 3 < len(counted.events)


# -- after the end ---------------------------------------------------------------------------------------------


def test_the_result_and_history_are_set_by_the_consumers_step_that_ends_the_stream(registry):
    provider = MockProvider([MockProvider.tool_calls(("c1", "add", {"a": 2, "b": 3})), MockProvider.text("5")])
    cycle = LlmCycle(provider, CycleConfig())
    cycle.push_message(Message.user("earlier"))
    stream = cycle.submit_with_tools_stream("go", registry)
    events = []
    while not (events and isinstance(events[-1], MessageComplete)
               and events[-1].full_response.stop_reason is StopReason.STOP):
        events.append(next(stream))
    stream.worker.join(WAIT)  # the worker is done; only the consumer's next step ends the stream
    assert stream.new_messages == () and stream.final_response is None
    assert cycle.messages() == [Message.user("earlier")]
    with pytest.raises(StopIteration):
        next(stream)
    assert stream.final_response is events[-1].full_response
    assert [m.role for m in stream.new_messages] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    assert stream.new_messages[0] == Message.user("go")
    assert isinstance(stream.new_messages, tuple)
    assert cycle.messages() == [Message.user("earlier"), *stream.new_messages]


def test_an_early_closed_stream_keeps_only_its_complete_rounds(registry, gate):
    g = gate()
    registry.register(held_tool(g))
    provider = MockProvider([MockProvider.tool_calls(("c1", "add", {"a": 1, "b": 2})),
                             MockProvider.tool_calls(("c2", "held", {})),
                             MockProvider.text("never requested")])
    cycle = LlmCycle(provider, CycleConfig())
    stream = cycle.submit_with_tools_stream("go", registry)
    started = 0
    for event in stream:
        started += isinstance(event, ToolExecutionStarted)
        if started == 2:
            break
    assert g.entered.wait(WAIT)
    stream.close()
    g.release.set()
    stream.worker.join(WAIT)
    kept = cycle.messages()
    assert [m.role for m in kept] == [Role.USER, Role.ASSISTANT, Role.TOOL]
    assert kept[1].tool_uses[0].id == "c1" and kept[2].content[0].content == "3"
    assert stream.new_messages == tuple(kept)
    assert stream.final_response.message.tool_uses[0].id == "c2"
    assert len(provider.requests) == 2


# -- hooks -----------------------------------------------------------------------------------------------------


def test_request_and_tool_hooks_fire_in_order_on_the_worker_thread(registry):
    hooks = Hooks()
    fired = []
    for event in (HookEvent.PRE_REQUEST, HookEvent.POST_REQUEST, HookEvent.PRE_TOOL_USE, HookEvent.POST_TOOL_USE):
        hooks.on(event, lambda ctx: fired.append((ctx, threading.current_thread())))
    provider = MockProvider([MockProvider.tool_calls(("c1", "add", {"a": 1, "b": 2})), MockProvider.text("3")])
    cycle = LlmCycle(provider, CycleConfig(), hooks=hooks)
    stream = cycle.submit_with_tools_stream("go", registry)
    events = list(stream)
    assert "Error" not in shape(events)
    assert [ctx.event for ctx, _ in fired] == [HookEvent.PRE_REQUEST, HookEvent.POST_REQUEST, HookEvent.PRE_TOOL_USE,
                                               HookEvent.POST_TOOL_USE, HookEvent.PRE_REQUEST, HookEvent.POST_REQUEST]
    assert {thread for _, thread in fired} == {stream.worker}
    pre_tool, post_tool = fired[2][0], fired[3][0]
    assert (pre_tool.tool_name, pre_tool.tool_call_id, pre_tool.arguments) == ("add", "c1", {"a": 1, "b": 2})
    assert post_tool.invocation.output == 3
    first_complete = next(e for e in events if isinstance(e, MessageComplete))
    assert fired[1][0].response is first_complete.full_response
    assert all(ctx.turn_index is None for ctx, _ in fired)


def test_a_pre_tool_use_deny_gives_an_error_completed_event_and_the_tool_never_runs(registry):
    ran = []

    @tool
    def rm(path: str) -> str:
        ran.append(path)
        return "removed"

    registry.register(rm)
    hooks = Hooks()
    hooks.on(HookEvent.PRE_TOOL_USE, lambda ctx: Deny("a human said no") if ctx.tool_name == "rm" else None)
    provider = MockProvider([MockProvider.tool_calls(("c1", "rm", {"path": "/"})), MockProvider.text("ok, I won't")])
    cycle = LlmCycle(provider, CycleConfig(), hooks=hooks)
    events = list(cycle.submit_with_tools_stream("go", registry))
    assert ran == []
    names = shape(events)
    assert "Error" not in names and names.count("ToolExecutionStarted") == names.count("ToolExecutionCompleted") == 1
    done = next(e for e in events if isinstance(e, ToolExecutionCompleted))
    assert done.is_error and "a human said no" in done.result_summary
    result = provider.requests[1].messages[-1].content[0]
    assert result.is_error and "a human said no" in result.content


@pytest.mark.parametrize("failing", [HookEvent.PRE_REQUEST, HookEvent.POST_REQUEST, HookEvent.PRE_TOOL_USE,
                                     HookEvent.POST_TOOL_USE])
def test_a_hook_that_raises_ends_the_stream_with_a_hook_error_and_no_half_round(registry, failing, caplog):
    ran = []

    @tool
    def record(x: int) -> int:
        ran.append(x)
        return x

    registry.register(record)

    def broken(ctx):
        raise ValueError("hook bug")

    hooks = Hooks()
    hooks.on(failing, broken)
    provider = MockProvider([MockProvider.tool_calls(("c1", "record", {"x": 1})), MockProvider.text("never")])
    cycle = LlmCycle(provider, CycleConfig(), hooks=hooks)
    stream = cycle.submit_with_tools_stream("go", registry)
    events = list(stream)
    assert shape(events).count("Error") == 1 and isinstance(events[-1], Error)
    error = events[-1].error
    assert isinstance(error, HookError) and isinstance(error.__cause__, ValueError)
    assert error.event is failing
    assert any(r.name == "agcore_sync.hooks" for r in caplog.records)
    assert ran == ([1] if failing is HookEvent.POST_TOOL_USE else [])
    assert len(provider.requests) == (0 if failing is HookEvent.PRE_REQUEST else 1)
    assert cycle.messages() == [Message.user("go")]
    assert stream.new_messages == (Message.user("go"),)


# -- threads ---------------------------------------------------------------------------------------------------


def test_each_open_stream_owns_exactly_one_thread_and_none_is_left_after_close():
    before = set(threading.enumerate())
    with ToolRegistry() as reg:
        streams = [
            LlmCycle(MockProvider([MockProvider.text("x" * 400)]), CycleConfig()).submit_with_tools_stream(
                "go", reg, max_buffered_events=1)
            for _ in range(3)
        ]
        new = set(threading.enumerate()) - before
        assert new == {s.worker for s in streams}
        assert all(t.name.startswith("agcore-stream-") and t.daemon for t in new)
        for s in streams:
            s.close()
        for s in streams:
            s.worker.join(WAIT)
        assert set(threading.enumerate()) - before == set()
