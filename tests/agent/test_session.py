"""AgentSession: turns (plain and streamed), how a turn ends, cost, hooks, persistence, asyncio."""

from __future__ import annotations

import asyncio
import gc
import json
import threading

import pytest

from agcore_sync.agent.errors import AgentError, SlotReadonlyError
from agcore_sync.agent.session import AgentSession, TurnStream
from agcore_sync.hooks import HookError, HookEvent, Hooks
from agcore_sync.llm.cost import Pricing
from agcore_sync.llm.errors import ServerError
from agcore_sync.llm.events import Error, MessageComplete, TextDelta, ToolExecutionStarted
from agcore_sync.llm.mock import MockProvider
from agcore_sync.llm.types import Message, Role, StopReason, Usage
from agcore_sync.loop.cycle import CycleConfig
from agcore_sync.tools.function import tool

#: Bound on every wait for something that must happen.
WAIT = 5.0

ALL_EVENTS = tuple(HookEvent)


@pytest.fixture
def release():
    """An Event a held tool waits on; set at teardown so a failed test never leaves the tool blocked."""
    event = threading.Event()
    yield event
    event.set()


def held_tool(entered, release):
    @tool
    def held() -> str:
        entered.set()
        release.wait(WAIT)
        return "released"

    return held


def recording_hooks(*events):
    """Hooks that record ``(event, turn_index, thread)`` for ``events`` (all six by default)."""
    hooks = Hooks()
    fired = []
    for event in events or ALL_EVENTS:
        hooks.on(event, lambda ctx: fired.append((ctx.event, ctx.turn_index, threading.current_thread())))
    return hooks, fired


def names(fired):
    return [event for event, _, _ in fired]


def tool_round(call_id="c1", usage=Usage(100, 10)):
    return MockProvider.tool_calls((call_id, "add", {"a": 2, "b": 3}), usage=usage)


# -- submit_turn -------------------------------------------------------------------------------------------------


def test_submit_turn_runs_the_tool_loop_and_ends_the_turn(registry):
    hooks, fired = recording_hooks(HookEvent.ON_TURN_START, HookEvent.ON_TURN_END)
    provider = MockProvider([tool_round(), MockProvider.text("5")])
    session = AgentSession(provider, CycleConfig(), registry, system_prompt="Be exact.", hooks=hooks)
    assert session.turn_index == 0
    response = session.submit_turn("2 + 3?")
    assert response.message.text == "5" and response.stop_reason is StopReason.STOP
    assert session.turn_index == 1
    assert [m.role for m in session.messages()] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    assert session.messages()[0] == Message.user("2 + 3?")
    assert [(e, i) for e, i, _ in fired] == [(HookEvent.ON_TURN_START, 0), (HookEvent.ON_TURN_END, 0)]
    assert provider.requests[0].system == "Be exact."


def test_cost_so_far_sums_every_round_of_every_turn_and_cost_usd_follows_the_pricing(registry):
    provider = MockProvider([
        tool_round("c1", Usage(100, 10)), MockProvider.text("5", usage=Usage(200, 20)),
        tool_round("c2", Usage(300, 30)), tool_round("c3", Usage(400, 40)),
        MockProvider.text("5", usage=Usage(500, 50)),
    ])
    session = AgentSession(provider, CycleConfig(), registry, pricing=Pricing(1.0, 2.0))
    assert session.cost_so_far == Usage() and session.cost_usd == 0.0
    session.submit_turn("one")
    assert session.cost_so_far == Usage(300, 30)
    assert session.cost_usd == pytest.approx((300 * 1.0 + 30 * 2.0) / 1e6)
    list(session.submit_turn_stream("two"))
    assert session.cost_so_far == Usage(1500, 150)
    assert session.cost_usd == pytest.approx((1500 * 1.0 + 150 * 2.0) / 1e6)


def test_cost_usd_is_none_once_a_counted_response_has_no_price(registry):
    provider = MockProvider([MockProvider.text("a", usage=Usage(10, 1), model="priced-1"),
                             MockProvider.text("b", usage=Usage(10, 1), model="unknown-model")])
    session = AgentSession(provider, CycleConfig(), registry, pricing={"priced": Pricing(1.0, 1.0)})
    session.submit_turn("one")
    assert session.cost_usd == pytest.approx(11 / 1e6)
    session.submit_turn("two")
    assert session.cost_usd is None
    assert session.cost_so_far == Usage(20, 2)
    # With the built-in table, the mock's model has no price at all.
    unpriced = AgentSession(MockProvider([MockProvider.text("x")]), CycleConfig(), registry)
    unpriced.submit_turn("hi")
    assert unpriced.cost_usd is None


def test_every_hook_of_a_turn_sees_that_turns_index(registry):
    hooks, fired = recording_hooks()
    provider = MockProvider([tool_round("c1"), MockProvider.text("5"), tool_round("c2"), MockProvider.text("5")])
    session = AgentSession(provider, CycleConfig(), registry, hooks=hooks)
    session.submit_turn("first")
    first = list(fired)
    del fired[:]
    list(session.submit_turn_stream("second"))
    assert names(first) == names(fired) == [
        HookEvent.ON_TURN_START, HookEvent.PRE_REQUEST, HookEvent.POST_REQUEST, HookEvent.PRE_TOOL_USE,
        HookEvent.POST_TOOL_USE, HookEvent.PRE_REQUEST, HookEvent.POST_REQUEST, HookEvent.ON_TURN_END]
    assert {i for _, i, _ in first} == {0} and {i for _, i, _ in fired} == {1}
    assert session.turn_index == 2


def test_a_failed_turn_still_ends_then_raises(registry):
    hooks, fired = recording_hooks(HookEvent.ON_TURN_START, HookEvent.ON_TURN_END)
    provider = MockProvider([tool_round("c1", Usage(100, 10)), ServerError("down", status_code=503)])
    session = AgentSession(provider, CycleConfig(retry=None), registry, hooks=hooks)
    with pytest.raises(ServerError):
        session.submit_turn("go")
    assert names(fired) == [HookEvent.ON_TURN_START, HookEvent.ON_TURN_END]
    assert session.turn_index == 1
    assert session.cost_so_far == Usage(100, 10)
    assert [m.role for m in session.messages()] == [Role.USER, Role.ASSISTANT, Role.TOOL]
    provider.add(MockProvider.text("recovered"))
    assert session.submit_turn("again").message.text == "recovered"


# -- submit_turn_stream ------------------------------------------------------------------------------------------


def test_a_streamed_turn_starts_before_submit_returns_and_ends_in_the_consumers_step_at_exhaustion(registry):
    hooks, fired = recording_hooks(HookEvent.ON_TURN_START, HookEvent.ON_TURN_END)
    provider = MockProvider([tool_round(usage=Usage(100, 10)), MockProvider.text("5", usage=Usage(200, 20))])
    session = AgentSession(provider, CycleConfig(), registry, hooks=hooks)
    stream = session.submit_turn_stream("2 + 3?")
    assert isinstance(stream, TurnStream)
    assert fired == [(HookEvent.ON_TURN_START, 0, threading.current_thread())]
    events = []
    while not (events and isinstance(events[-1], MessageComplete)
               and events[-1].full_response.stop_reason is StopReason.STOP):
        events.append(next(stream))
    stream.worker.join(WAIT)
    # The worker is done, but the turn ends only when the consumer sees the end.
    assert session.turn_index == 0 and len(fired) == 1 and session.messages() == []
    with pytest.raises(StopIteration):
        next(stream)
    assert fired[1] == (HookEvent.ON_TURN_END, 0, threading.current_thread())
    assert session.turn_index == 1
    assert session.cost_so_far == Usage(300, 30)
    assert session.messages() == list(stream.new_messages)
    assert [m.role for m in session.messages()] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    assert stream.final_response is events[-1].full_response


def test_a_stream_closed_early_ends_its_turn_with_its_complete_rounds_and_the_usage_received(registry, release):
    entered = threading.Event()
    registry.register(held_tool(entered, release))
    hooks, fired = recording_hooks(HookEvent.ON_TURN_START, HookEvent.ON_TURN_END)
    provider = MockProvider([tool_round("c1", Usage(100, 10)),
                             MockProvider.tool_calls(("c2", "held", {}), usage=Usage(200, 20)),
                             MockProvider.text("never requested")])
    session = AgentSession(provider, CycleConfig(), registry, hooks=hooks)
    stream = session.submit_turn_stream("go")
    started = 0
    for event in stream:
        started += isinstance(event, ToolExecutionStarted)
        if started == 2:
            break
    assert entered.wait(WAIT)
    stream.close()
    # No thread iterates, so close() itself ended the turn.
    assert names(fired) == [HookEvent.ON_TURN_START, HookEvent.ON_TURN_END]
    assert session.turn_index == 1
    assert [m.role for m in session.messages()] == [Role.USER, Role.ASSISTANT, Role.TOOL]
    assert session.cost_so_far == Usage(300, 30)  # the held round's response was received
    release.set()
    stream.worker.join(WAIT)
    assert not stream.worker.is_alive() and len(provider.requests) == 2
    stream.close()
    assert names(fired) == [HookEvent.ON_TURN_START, HookEvent.ON_TURN_END]  # ended once


def test_when_another_thread_is_ending_the_turn_the_consumers_loop_ends_only_after_it(registry, release):
    entered = threading.Event()
    registry.register(held_tool(entered, release))
    closer_ending = threading.Event()
    consumer_looked = threading.Event()

    def slow_turn_end(ctx):
        closer_ending.set()
        consumer_looked.wait(0.3)  # keeps the closing thread inside the turn's end for a moment

    hooks = Hooks()
    hooks.on(HookEvent.ON_TURN_END, slow_turn_end)
    provider = MockProvider([MockProvider.tool_calls(("c1", "held", {}))])
    session = AgentSession(provider, CycleConfig(), registry, hooks=hooks)
    stream = session.submit_turn_stream("go")
    for event in stream:
        if isinstance(event, ToolExecutionStarted):
            break
    assert entered.wait(WAIT)
    # This thread is between steps, so the closing thread ends the turn.
    closer = threading.Thread(target=stream.close, name="test-closer")
    closer.start()
    try:
        assert closer_ending.wait(WAIT)
        with pytest.raises(StopIteration):
            next(stream)
        seen = (session.turn_index, stream.new_messages, stream.closed, session.messages())
    finally:
        consumer_looked.set()
        closer.join(WAIT)
        release.set()
    assert seen == (1, (Message.user("go"),), True, [Message.user("go")])
    stream.worker.join(WAIT)
    assert not stream.worker.is_alive() and not closer.is_alive()


def test_a_stream_dropped_without_close_ends_its_turn_when_it_is_collected(registry, release):
    entered = threading.Event()
    registry.register(held_tool(entered, release))
    hooks, fired = recording_hooks(HookEvent.ON_TURN_END)
    provider = MockProvider([MockProvider.tool_calls(("c1", "held", {}))])
    session = AgentSession(provider, CycleConfig(), registry, hooks=hooks)
    stream = session.submit_turn_stream("go")
    worker = stream.worker
    for event in stream:
        if isinstance(event, ToolExecutionStarted):
            break
    assert entered.wait(WAIT)
    del stream, event
    gc.collect()
    assert names(fired) == [HookEvent.ON_TURN_END]
    assert session.turn_index == 1 and session.messages() == [Message.user("go")]
    release.set()
    worker.join(WAIT)
    assert not worker.is_alive() and len(provider.requests) == 1
    provider.add(MockProvider.text("a new turn"))
    assert session.submit_turn("next").message.text == "a new turn"


def test_a_hook_that_raises_in_a_streamed_turn_is_the_last_event_and_the_turn_still_ends(registry):
    hooks, fired = recording_hooks(HookEvent.ON_TURN_END)

    def broken(ctx):
        raise RuntimeError("audit log unavailable")

    hooks.on(HookEvent.POST_TOOL_USE, broken)
    provider = MockProvider([tool_round("c1", Usage(100, 10)), MockProvider.text("never requested")])
    session = AgentSession(provider, CycleConfig(), registry, hooks=hooks)
    events = list(session.submit_turn_stream("go"))
    assert isinstance(events[-1], Error) and isinstance(events[-1].error, HookError)
    assert sum(isinstance(e, Error) for e in events) == 1
    assert names(fired) == [HookEvent.ON_TURN_END] and session.turn_index == 1
    assert session.messages() == [Message.user("go")]  # no half round
    assert session.cost_so_far == Usage(100, 10)


# -- finalize_turn -----------------------------------------------------------------------------------------------


def test_finalize_turn_does_nothing_for_a_turn_that_already_ended(registry):
    hooks, fired = recording_hooks(HookEvent.ON_TURN_END)
    provider = MockProvider([MockProvider.text("one", usage=Usage(10, 1)),
                             MockProvider.text("two", usage=Usage(10, 1))])
    session = AgentSession(provider, CycleConfig(), registry, hooks=hooks)
    stream = session.submit_turn_stream("hi")
    list(stream)
    response = session.submit_turn("again")
    state = (session.turn_index, session.cost_so_far, session.messages(), len(fired))
    session.finalize_turn(stream.final_response)
    session.finalize_turn(stream.final_response, list(stream.new_messages))
    session.finalize_turn(response)
    assert (session.turn_index, session.cost_so_far, session.messages(), len(fired)) == state == (
        2, Usage(20, 2), state[2], 2)


def test_finalize_turn_records_a_turn_built_by_hand_exactly_once(registry):
    hooks, fired = recording_hooks(HookEvent.ON_TURN_END)
    session = AgentSession(MockProvider([]), CycleConfig(), registry, hooks=hooks)
    response = MockProvider.text("made elsewhere", usage=Usage(7, 3))
    turn = [Message.user("question"), response.message]
    session.finalize_turn(response, turn)
    session.finalize_turn(response, turn)
    assert session.turn_index == 1
    assert session.cost_so_far == Usage(7, 3)
    assert session.messages() == turn
    assert [(e, i) for e, i, _ in fired] == [(HookEvent.ON_TURN_END, 0)]


# -- one turn at a time ------------------------------------------------------------------------------------------


def test_starting_a_turn_while_one_is_open_raises_agent_error_and_sends_nothing(registry):
    provider = MockProvider([MockProvider.text("first"), MockProvider.text("second")])
    session = AgentSession(provider, CycleConfig(), registry)
    stream = session.submit_turn_stream("one")
    with pytest.raises(AgentError):
        session.submit_turn("two")
    with pytest.raises(AgentError):
        session.submit_turn_stream("two")
    assert "".join(e.text for e in stream if isinstance(e, TextDelta)) == "first"
    assert len(provider.requests) == 1 and session.turn_index == 1
    assert session.submit_turn("two").message.text == "second"


def test_a_turn_on_a_readonly_slot_is_refused_before_anything_is_sent(registry):
    hooks, fired = recording_hooks()
    provider = MockProvider([MockProvider.text("never")])
    session = AgentSession(provider, CycleConfig(), registry, hooks=hooks)
    session.create_slot("archive", readonly=True, messages=[Message.user("old")])
    session.switch_slot("archive")
    threads = set(threading.enumerate())
    with pytest.raises(SlotReadonlyError):
        session.submit_turn("hi")
    with pytest.raises(SlotReadonlyError):
        session.submit_turn_stream("hi")
    assert set(threading.enumerate()) == threads  # no stream was started
    assert fired == [] and provider.requests == [] and session.turn_index == 0
    assert session.messages() == [Message.user("old")]
    session.switch_slot("default")
    assert session.submit_turn("hi").message.text == "never"


def test_a_session_without_a_registry_runs_the_loops_with_no_tools():
    provider = MockProvider([MockProvider.tool_calls(("c1", "add", {"a": 1, "b": 1})), MockProvider.text("no tools")])
    with AgentSession(provider, CycleConfig()) as session:
        assert session.submit_turn("go").message.text == "no tools"
    assert provider.requests[0].tools == ()
    result = provider.requests[1].messages[-1].content[0]
    assert result.is_error and "add" in result.content


# -- persistence -------------------------------------------------------------------------------------------------


def test_a_session_survives_json_and_resumes_where_it_stopped(registry):
    config = CycleConfig(model="m-1", max_tool_turns=4, retry=None, tool_timeout_secs=None, max_tool_result_bytes=64)
    provider = MockProvider([tool_round("c1", Usage(100, 10)), MockProvider.text("5", usage=Usage(200, 20))])
    session = AgentSession(provider, config, registry, system_prompt="Be exact.")
    session.submit_turn("2 + 3?")
    session.create_slot("notes", readonly=True, messages=[Message.user("remember 5")])
    data = json.loads(json.dumps(session.to_dict()))
    assert data["format_version"] == 2

    hooks, fired = recording_hooks(HookEvent.ON_TURN_START)
    later = MockProvider([MockProvider.text("still 5", usage=Usage(1, 1))])
    resumed = AgentSession.from_dict(data, provider=later, registry=registry, hooks=hooks)
    assert resumed.config == config
    assert resumed.system_prompt == "Be exact."
    assert resumed.messages() == session.messages()
    assert resumed.slots == ["default", "notes"] and resumed.current_slot == "default"
    assert resumed.cost_so_far == Usage(300, 30) and resumed.turn_index == 1
    resumed.submit_turn("and now?")
    request = later.requests[0]
    assert list(request.messages[:4]) == session.messages() and request.messages[4] == Message.user("and now?")
    assert request.system == "Be exact." and request.model == "m-1"
    assert fired[0][1] == 1 and resumed.turn_index == 2
    assert resumed.cost_so_far == Usage(301, 31)
    resumed.switch_slot("notes")
    with pytest.raises(SlotReadonlyError):
        resumed.submit_turn("write here")


@pytest.mark.parametrize("version", [3, None, "1"])
def test_loading_an_unknown_or_missing_format_version_is_an_agent_error(registry, version):
    data = AgentSession(MockProvider([]), CycleConfig(), registry).to_dict()
    if version is None:
        del data["format_version"]
    else:
        data["format_version"] = version
    with pytest.raises(AgentError, match="format_version"):
        AgentSession.from_dict(data, provider=MockProvider([]))


# -- inside a running event loop ---------------------------------------------------------------------------------


def test_a_session_works_unchanged_inside_a_running_asyncio_event_loop(registry):
    provider = MockProvider([tool_round("c1"), MockProvider.text("5"), tool_round("c2"), MockProvider.text("5 again")])
    session = AgentSession(provider, CycleConfig(), registry)

    async def cell():
        # As a Jupyter cell does: plain calls, no await, while the loop runs.
        asyncio.get_running_loop()
        answer = session.submit_turn("2 + 3?")
        events = list(session.submit_turn_stream("once more"))
        return answer, events

    answer, events = asyncio.run(cell())
    assert answer.message.text == "5"
    assert events[-1].full_response.message.text == "5 again"
    assert session.turn_index == 2 and len(session.messages()) == 8


@pytest.mark.parametrize("data", [{"messages": []}, [1, 2], "{}"], ids=["dict", "list", "str"])
def test_from_dict_of_something_that_is_not_a_session_says_so(data):
    from agcore_sync.agent.errors import AgentError

    with pytest.raises(AgentError, match="is not a saved session; pass what session.to_dict"):
        AgentSession.from_dict(data, provider=MockProvider([]))
