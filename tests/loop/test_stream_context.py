"""The streaming loops run hooks and tools in a copy of the caller's contextvars context.

The copy is taken when the stream is created (``submit_with_tools_stream``,
``submit_turn_stream``): a ``ContextVar`` set in, say, a Flask view is seen by
the worker's hooks and tools, and what they set does not reach the caller.
"""

from __future__ import annotations

import contextvars
import threading

import pytest

from agcore_sync.agent.session import AgentSession
from agcore_sync.hooks import HookEvent, Hooks
from agcore_sync.llm.events import Error, ToolExecutionCompleted
from agcore_sync.llm.mock import MockProvider
from agcore_sync.loop.cycle import CycleConfig, LlmCycle
from agcore_sync.tools.function import tool
from agcore_sync.tools.registry import ToolRegistry

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="unset")


@tool
def whoami() -> str:
    """Return the request id the tool sees; then set it, which must stay inside the tool."""
    seen = request_id.get()
    request_id.set("set-by-tool")
    return seen


def script():
    return [MockProvider.tool_calls(("whoami", {}), ("whoami", {})), MockProvider.text("done")]


def recording_hooks():
    """Hooks that record ``(event, request_id, thread name)`` for every event."""
    hooks = Hooks()
    seen = []

    def record(ctx):
        seen.append((ctx.event, request_id.get(), threading.current_thread().name))

    for event in HookEvent:
        hooks.on(event, record)
    return hooks, seen


@pytest.fixture
def registry():
    with ToolRegistry() as reg:
        reg.register(whoami)
        yield reg


CONFIGS = [CycleConfig(), CycleConfig(tool_timeout_secs=None)]
IDS = ["tools-on-the-pool", "tools-inline-in-the-worker"]


def consume(stream):
    events = list(stream)
    assert not [e for e in events if isinstance(e, Error)]
    return [e.result_summary for e in events if isinstance(e, ToolExecutionCompleted)]


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_tools_and_hooks_of_submit_with_tools_stream_see_the_callers_variable(registry, config):
    hooks, seen = recording_hooks()
    cycle = LlmCycle(MockProvider(script()), config, hooks=hooks)

    def view():
        request_id.set("req-42")
        summaries = consume(cycle.submit_with_tools_stream("go", registry))
        return summaries, request_id.get()

    summaries, after = contextvars.Context().run(view)
    assert summaries == ["req-42", "req-42"]
    assert after == "req-42"  # the tools set it in their copies only
    in_worker = [(event, value) for event, value, thread in seen if thread.startswith("agcore-stream-")]
    assert [event for event, _ in in_worker] == [
        HookEvent.PRE_REQUEST, HookEvent.POST_REQUEST, HookEvent.PRE_TOOL_USE, HookEvent.PRE_TOOL_USE,
        HookEvent.POST_TOOL_USE, HookEvent.POST_TOOL_USE, HookEvent.PRE_REQUEST, HookEvent.POST_REQUEST]
    assert {value for _, value in in_worker} == {"req-42"}
    assert request_id.get() == "unset"


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_tools_and_hooks_of_submit_turn_stream_see_the_callers_variable(registry, config):
    hooks, seen = recording_hooks()
    session = AgentSession(MockProvider(script()), config, registry, hooks=hooks)

    def view():
        request_id.set("turn-7")
        stream = session.submit_turn_stream("go")
        summaries = consume(stream)
        return summaries, request_id.get()

    summaries, after = contextvars.Context().run(view)
    assert summaries == ["turn-7", "turn-7"]
    assert after == "turn-7"
    # Every hook saw the caller's value: ON_TURN_START and ON_TURN_END in the
    # caller's thread, the request and tool hooks on the worker.
    assert {value for _, value, _ in seen} == {"turn-7"}
    assert {event for event, _, thread in seen if thread.startswith("agcore-stream-")} == {
        HookEvent.PRE_REQUEST, HookEvent.POST_REQUEST, HookEvent.PRE_TOOL_USE, HookEvent.POST_TOOL_USE}
    assert [event for event, _, _ in seen][0] == HookEvent.ON_TURN_START
    assert [event for event, _, _ in seen][-1] == HookEvent.ON_TURN_END
    assert session.turn_index == 1


def test_a_hook_on_the_worker_that_sets_the_variable_does_not_change_the_callers_value(registry):
    hooks = Hooks()
    hooks.on(HookEvent.PRE_REQUEST, lambda ctx: request_id.set("set-by-hook") and None)
    session = AgentSession(MockProvider([MockProvider.text("done")]), CycleConfig(), registry, hooks=hooks)

    def view():
        request_id.set("mine")
        consume(session.submit_turn_stream("go"))
        return request_id.get()

    assert contextvars.Context().run(view) == "mine"


def test_a_variable_set_after_the_stream_was_created_is_not_seen_by_its_worker(registry):
    entered, release = threading.Event(), threading.Event()
    hooks = Hooks()
    seen = []

    def hold(ctx):
        entered.set()
        assert release.wait(5.0)
        seen.append(request_id.get())

    hooks.on(HookEvent.PRE_REQUEST, hold)
    cycle = LlmCycle(MockProvider([MockProvider.text("done")]), CycleConfig(), hooks=hooks)

    def view():
        request_id.set("at-submit")
        stream = cycle.submit_with_tools_stream("go", registry)
        assert entered.wait(5.0)
        request_id.set("later")
        release.set()
        list(stream)

    contextvars.Context().run(view)
    assert seen == ["at-submit"]
