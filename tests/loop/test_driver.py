"""Where a turn's tools run: in the thread driving the turn, watched, never in a sync caller's.

A lone call with a timeout runs in the thread that drives the turn (a
stream's worker; for a sync turn, one thread the turn gets at its first such
call). A tool that overstays is left behind with its thread and the turn goes
on in a new one. See ``agcore_sync/loop/_driver.py``.
"""

from __future__ import annotations

import functools
import signal
import threading

import pytest

from agcore_sync.hooks import HookEvent, Hooks
from agcore_sync.llm.events import Error, ToolExecutionCompleted, ToolExecutionStarted
from agcore_sync.llm.mock import MockProvider
from agcore_sync.loop._turn_threads import TurnThreads
from agcore_sync.loop.cycle import CycleConfig, LlmCycle
from agcore_sync.tools.error import ToolError, ToolTimeoutError
from agcore_sync.tools.function import tool
from agcore_sync.tools.invocation import ToolCall
from agcore_sync.tools.registry import ToolRegistry

WAIT = 5.0


def rounds(count):
    calls = [MockProvider.tool_calls((f"call_{i}", "where", {})) for i in range(count)]
    return MockProvider([*calls, MockProvider.text("done")])


class Recorder:
    """A ``where`` tool and a PRE_REQUEST hook that note the thread they run in."""

    def __init__(self):
        self.tool_threads = []
        self.request_threads = []
        self.hooks = Hooks()
        self.hooks.on(HookEvent.PRE_REQUEST, lambda ctx: self.request_threads.append(threading.current_thread()))

        @tool
        def where() -> str:
            """Name the thread the tool runs in."""
            self.tool_threads.append(threading.current_thread())
            return threading.current_thread().name

        self.tool = where


class Held:
    """A tool that waits until the test releases it; ``thread`` is where it ran."""

    def __init__(self):
        self.entered = threading.Event()
        self.release = threading.Event()
        self.returned = threading.Event()
        self.thread = None

        @tool
        def held() -> str:
            """Wait for the test."""
            self.thread = threading.current_thread()
            self.entered.set()
            self.release.wait(WAIT)
            self.returned.set()
            return "released"

        self.tool = held


@pytest.fixture
def held():
    made = Held()
    yield made
    made.release.set()


def test_a_sync_turn_runs_from_its_first_tool_call_in_one_turn_thread_of_the_registry():
    seen = Recorder()
    with ToolRegistry() as registry:
        registry.register(seen.tool)
        cycle = LlmCycle(rounds(3), CycleConfig(tool_timeout_secs=30), hooks=seen.hooks)
        response = cycle.submit_with_tools("go", registry)
        assert response.message.text == "done" and len(cycle.messages()) == 8
        caller = threading.current_thread()
        loop_thread = seen.tool_threads[0]
        assert loop_thread is not caller and loop_thread.name.startswith("agcore-loop-")
        assert seen.tool_threads == [loop_thread] * 3  # every round's tool, no pool hand-off
        # The first request went out from the caller; the turn then stayed in its thread.
        assert seen.request_threads == [caller, loop_thread, loop_thread, loop_thread]
        # The next turn gets the same thread: it waits for turns until the registry closes.
        LlmCycle(rounds(3), CycleConfig(tool_timeout_secs=30)).submit_with_tools("again", registry)
        assert seen.tool_threads[3:] == [loop_thread] * 3
    assert not loop_thread.is_alive()  # close() stopped it


def test_a_turn_handed_to_a_registry_being_closed_ends_with_a_typed_error():
    seen = Recorder()
    registry = ToolRegistry()
    registry.register(seen.tool)
    hooks = Hooks()
    # The registry closes between the first answer and its tool call: the turn
    # cannot go on, and says why instead of hanging.
    hooks.on(HookEvent.POST_REQUEST, lambda ctx: registry.close())
    with pytest.raises(ToolError, match="closed"):
        LlmCycle(rounds(1), CycleConfig(tool_timeout_secs=30), hooks=hooks).submit_with_tools("go", registry)
    assert seen.tool_threads == []


def test_without_a_tool_timeout_a_sync_turn_stays_in_the_callers_thread():
    seen = Recorder()
    with ToolRegistry() as registry:
        registry.register(seen.tool)
        LlmCycle(rounds(2), CycleConfig(tool_timeout_secs=None), hooks=seen.hooks).submit_with_tools("go", registry)
    caller = threading.current_thread()
    assert seen.tool_threads == [caller, caller] and seen.request_threads == [caller] * 3


def test_a_stream_runs_a_lone_tool_call_in_its_worker():
    seen = Recorder()
    with ToolRegistry() as registry:
        registry.register(seen.tool)
        stream = LlmCycle(rounds(2), CycleConfig(tool_timeout_secs=30)).submit_with_tools_stream("go", registry)
        events = list(stream)
    assert not any(isinstance(event, Error) for event in events)
    assert seen.tool_threads == [stream.worker, stream.worker]
    assert stream.worker.name.startswith("agcore-stream-") and not stream.worker.is_alive()


def test_a_tool_that_overstays_is_left_behind_and_the_sync_turn_raises_at_its_deadline(held):
    with ToolRegistry() as registry:
        registry.register(held.tool)
        provider = MockProvider([MockProvider.tool_calls(("call_1", "held", {})), MockProvider.text("never")])
        cycle = LlmCycle(provider, CycleConfig(tool_timeout_secs=0.2))
        with pytest.raises(ToolTimeoutError, match="did not finish within its 0.2 s timeout"):
            cycle.submit_with_tools("go", registry)
        # The caller is back while the tool still runs in the thread it was left in.
        assert held.entered.is_set() and not held.returned.is_set() and held.thread.is_alive()
        assert len(provider.requests) == 1 and [m.role.value for m in cycle.messages()] == ["user"]
        held.release.set()
        assert held.returned.wait(WAIT)  # its result goes nowhere
    held.thread.join(WAIT)
    assert not held.thread.is_alive()  # a turn thread of the registry's: close() stopped it


def test_a_stream_whose_tool_overstays_ends_with_the_timeout_while_the_tool_still_runs(held):
    with ToolRegistry() as registry:
        registry.register(held.tool)
        provider = MockProvider([MockProvider.tool_calls(("call_1", "held", {})), MockProvider.text("never")])
        stream = LlmCycle(provider, CycleConfig(tool_timeout_secs=0.2)).submit_with_tools_stream("go", registry)
        events = list(stream)
        assert not held.returned.is_set()
        started = [e for e in events if isinstance(e, ToolExecutionStarted)]
        completed = [e for e in events if isinstance(e, ToolExecutionCompleted)]
        assert len(started) == 1 and len(completed) == 1 and completed[0].is_error
        assert "timeout" in completed[0].result_summary
        assert isinstance(events[-1], Error) and isinstance(events[-1].error, ToolTimeoutError)
        # The turn ended in a new worker; the first one is still inside the tool.
        assert stream.worker is not held.thread and stream.worker.name.startswith("agcore-stream-")
        stream.worker.join(WAIT)
        assert not stream.worker.is_alive() and held.thread.is_alive()
        held.release.set()
        held.thread.join(WAIT)
        assert not held.thread.is_alive()


def test_a_late_result_of_an_overstaying_call_is_reported_to_no_one(held):
    reports = []
    overdue = []
    taken_over = threading.Event()

    def on_overdue(settle):
        overdue.append(settle())
        taken_over.set()

    with ToolRegistry() as registry:
        registry.register(held.tool)
        # In this (test) thread: the call overstays, on_overdue gets the timeout, and once
        # the tool returns this thread learns it was taken over (None).
        outcome = []
        watch = functools.partial(TurnThreads.of(registry).watch, on_overdue=on_overdue)
        runner = threading.Thread(target=lambda: outcome.append(registry.invoke_here(
            [ToolCall("held", {}, "call_1")], 0.1, on_complete=lambda i, inv: reports.append(inv), watch=watch)))
        runner.start()
        assert taken_over.wait(WAIT)
        held.release.set()
        runner.join(WAIT)
    assert outcome == [None]
    assert len(reports) == 1 and isinstance(reports[0].error, ToolTimeoutError)
    assert overdue[0][0] is reports[0]


def test_ctrl_c_in_a_sync_caller_cancels_the_turn_at_its_next_step(held):
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    main = threading.main_thread().ident
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # whatever an earlier test set
    try:
        run_interrupted_turn(held, main)
    finally:
        signal.signal(signal.SIGINT, previous)


def run_interrupted_turn(held, main):
    with ToolRegistry() as registry:
        registry.register(held.tool)
        provider = MockProvider([MockProvider.tool_calls(("call_1", "held", {})), MockProvider.text("never")])
        cycle = LlmCycle(provider, CycleConfig(tool_timeout_secs=30))
        interrupter = threading.Thread(target=lambda: held.entered.wait(WAIT) and signal.pthread_kill(main,
                                                                                                        signal.SIGINT))
        interrupter.start()
        with pytest.raises(KeyboardInterrupt):
            cycle.submit_with_tools("go", registry)
        interrupter.join(WAIT)
        assert held.thread.is_alive() and not held.returned.is_set()
        held.release.set()
        assert held.returned.wait(WAIT)
    # close() waited for the turn's thread: the turn stopped before its next provider call.
    assert not held.thread.is_alive()
    assert len(provider.requests) == 1


def test_a_hook_in_a_turn_thread_may_close_the_registry():
    seen = Recorder()
    registry = ToolRegistry()
    registry.register(seen.tool)
    hooks = Hooks()
    closed_in = []

    def close_once(ctx):
        if seen.tool_threads and not closed_in:
            closed_in.append(threading.current_thread())
            registry.close()  # from the turn's own thread: must not wait for itself

    hooks.on(HookEvent.POST_TOOL_USE, close_once)
    with pytest.raises(ToolError, match="closed"):
        LlmCycle(rounds(3), CycleConfig(tool_timeout_secs=30), hooks=hooks).submit_with_tools("go", registry)
    assert closed_in[0].name.startswith("agcore-loop-") and len(seen.tool_threads) == 1
    closed_in[0].join(WAIT)
    assert not closed_in[0].is_alive()


def test_a_burst_of_concurrent_sync_turns_leaves_no_idle_turn_thread_behind(monkeypatch):
    # 60 s in the library; a test cannot wait that long, so the limit is made short and the
    # threads' exits are awaited by joining them (no sleep).
    from agcore_sync.tools import registry as registry_module

    monkeypatch.setattr(registry_module, "TURN_THREAD_IDLE_SECS", 0.05)
    burst = 40
    together = threading.Barrier(burst, timeout=WAIT)
    threads = []

    @tool
    def meet() -> str:
        """Wait until every turn of the burst is in its own thread."""
        threads.append(threading.current_thread())
        together.wait()
        return "met"

    with ToolRegistry() as registry:
        registry.register(meet)

        def turn():
            provider = MockProvider([MockProvider.tool_calls(("c1", "meet", {})), MockProvider.text("done")])
            LlmCycle(provider, CycleConfig(tool_timeout_secs=30)).submit_with_tools("go", registry)

        callers = [threading.Thread(target=turn, name=f"burst-caller-{i}") for i in range(burst)]
        for caller in callers:
            caller.start()
        for caller in callers:
            caller.join(WAIT)
        assert not any(caller.is_alive() for caller in callers)
        assert len(set(threads)) == burst and all(t.name.startswith("agcore-loop-") for t in threads)

        for thread in set(threads):
            thread.join(WAIT)  # each exits once idle for the (short) limit, the registry still open
        assert not any(thread.is_alive() for thread in threads)
        assert not [t for t in threading.enumerate() if t.name.startswith("agcore-loop-")]

        # The registry goes on: the next turn gets a new turn thread.
        threads.clear()
        together = threading.Barrier(1)
        turn()
        assert len(threads) == 1 and threads[0].name.startswith("agcore-loop-")


def test_the_idle_limit_of_turn_threads_is_sixty_seconds():
    from agcore_sync.tools.registry import TURN_THREAD_IDLE_SECS

    assert TURN_THREAD_IDLE_SECS == 60.0
