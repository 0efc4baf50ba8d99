"""TurnThreads: the loop layer owns the turn threads and the deadline watcher of each registry; close() stops them."""

from __future__ import annotations

import threading

import pytest

from agcore_sync.llm.mock import MockProvider
from agcore_sync.loop._turn_threads import TurnThreads
from agcore_sync.loop.cycle import CycleConfig, LlmCycle
from agcore_sync.tools.error import ToolError
from agcore_sync.tools.function import tool
from agcore_sync.tools.invocation import ToolCall
from agcore_sync.tools.registry import CLOSE_TIMEOUT_SECS, ToolRegistry

WAIT = 10.0


@tool
def where() -> str:
    """Name the thread the tool runs in."""
    return threading.current_thread().name


def loop_threads():
    return [t for t in threading.enumerate() if t.name.startswith(("agcore-loop-", "agcore-deadlines-"))]


def test_one_turn_threads_owner_per_registry_made_on_first_use():
    with ToolRegistry() as first, ToolRegistry() as second:
        assert TurnThreads.of(first) is TurnThreads.of(first)
        assert TurnThreads.of(first) is not TurnThreads.of(second)


def test_closing_the_registry_joins_the_turn_thread_and_the_deadline_watcher_it_caused():
    before = set(loop_threads())
    registry = ToolRegistry()
    registry.register(where)
    provider = MockProvider([MockProvider.tool_calls(("call_1", "where", {})), MockProvider.text("done")])
    LlmCycle(provider, CycleConfig(tool_timeout_secs=30)).submit_with_tools("go", registry)
    started = [t for t in loop_threads() if t not in before]
    names = sorted(t.name.rsplit("-", 1)[0] for t in started)
    assert names == ["agcore-deadlines", "agcore-loop"]
    registry.close()  # joins them, within CLOSE_TIMEOUT_SECS
    assert not [t for t in started if t.is_alive()]


def test_a_closed_registry_gives_no_turn_threads_and_runs_nothing_here():
    registry = ToolRegistry()
    registry.register(where)
    registry.close()
    with pytest.raises(ToolError, match="closed"):
        TurnThreads.of(registry)
    with pytest.raises(ToolError, match="closed"):
        registry.invoke_here([ToolCall("where", {})], 1.0, on_complete=None, watch=lambda d, s: lambda: True)


def test_an_owner_closed_under_a_live_registry_refuses_work_with_a_typed_error():
    threads = TurnThreads()
    threads.close(CLOSE_TIMEOUT_SECS)
    with pytest.raises(ToolError, match="closed"):
        threads.hand_over(lambda: None, on_dropped=lambda: None)
    with pytest.raises(ToolError, match="closed"):
        threads.watch(0.0, list, on_overdue=lambda settle: None)
    threads.close(CLOSE_TIMEOUT_SECS)  # again: nothing


def test_invoke_here_runs_a_lone_call_in_the_calling_thread_and_disarms_its_watch():
    armed = []
    with ToolRegistry() as registry:
        registry.register(where)

        def watch(deadline, settle):
            armed.append(deadline)
            return lambda: True

        [result] = registry.invoke_here([ToolCall("where", {}, "c1")], 5.0, on_complete=None, watch=watch)
    assert result.output == threading.current_thread().name and result.tool_call_id == "c1"
    assert len(armed) == 1


def test_invoke_here_runs_several_calls_on_the_pool_without_a_watch():
    def watch(deadline, settle):
        raise AssertionError("several calls are not watched here")

    with ToolRegistry() as registry:
        registry.register(where)
        results = registry.invoke_here([ToolCall("where", {}), ("where", {})], 5.0, on_complete=None, watch=watch)
    assert all(r.output.startswith("agcore-tool-") for r in results)
