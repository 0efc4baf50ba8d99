"""UsageLimits: every limit in the blocking and the streaming loop, per turn and summed over a session."""

from __future__ import annotations

import pickle

import pytest

from agcore_sync.agent.session import AgentSession
from agcore_sync.hooks import HookEvent, Hooks
from agcore_sync.llm.cost import Pricing
from agcore_sync.llm.events import Error, ToolExecutionStarted
from agcore_sync.llm.mock import MockProvider
from agcore_sync.llm.types import Usage
from agcore_sync.loop.cycle import CycleConfig, LlmCycle
from agcore_sync.loop.limits import RunUsage, UsageLimitExceeded, UsageLimits
from agcore_sync.tools.function import tool
from agcore_sync.tools.registry import ToolRegistry

#: One dollar per million tokens, in and out: a token costs 1e-6.
PRICING = {"mock-model": Pricing(1.0, 1.0)}


@pytest.fixture
def ran():
    """The texts the ``echo`` tool was run with."""
    return []


@pytest.fixture
def registry(ran):
    @tool
    def echo(text: str) -> str:
        """Echo the text."""
        ran.append(text)
        return text

    with ToolRegistry() as registry:
        registry.register(echo)
        yield registry


def script():
    """Round 1: two tool calls, 20 in / 10 out; round 2: the answer, 40 in / 5 out."""
    return [MockProvider.tool_calls(("c1", "echo", {"text": "a"}), ("c2", "echo", {"text": "b"}),
                                    usage=Usage(20, 10)),
            MockProvider.text("done", usage=Usage(40, 5))]


#: (limits, the limit hit, provider requests made, tool calls run, usage in the error)
TURN_CASES = {
    "requests, before the second request": (
        UsageLimits(max_requests=1), "max_requests", 1, 2, RunUsage(requests=1, tool_calls=2, input_tokens=20,
                                                                    output_tokens=10, cost_usd=30e-6)),
    "tool calls, before any tool of the round runs": (
        UsageLimits(max_tool_calls=1), "max_tool_calls", 1, 0, RunUsage(requests=1, input_tokens=20,
                                                                        output_tokens=10, cost_usd=30e-6)),
    "input tokens used up, before the next request": (
        UsageLimits(max_input_tokens=20), "max_input_tokens", 1, 2, RunUsage(requests=1, tool_calls=2,
                                                                             input_tokens=20, output_tokens=10,
                                                                             cost_usd=30e-6)),
    "input tokens passed, after the response": (
        UsageLimits(max_input_tokens=15), "max_input_tokens", 1, 0, RunUsage(requests=1, input_tokens=20,
                                                                             output_tokens=10, cost_usd=30e-6)),
    "output tokens passed, after the response": (
        UsageLimits(max_output_tokens=12), "max_output_tokens", 2, 2, RunUsage(requests=2, tool_calls=2,
                                                                               input_tokens=60, output_tokens=15,
                                                                               cost_usd=75e-6)),
    "total tokens used up, before the next request": (
        UsageLimits(max_total_tokens=30), "max_total_tokens", 1, 2, RunUsage(requests=1, tool_calls=2,
                                                                             input_tokens=20, output_tokens=10,
                                                                             cost_usd=30e-6)),
    "cost passed, after the response": (
        UsageLimits(max_cost_usd=20e-6), "max_cost_usd", 1, 0, RunUsage(requests=1, input_tokens=20,
                                                                        output_tokens=10, cost_usd=30e-6)),
}


def check_error(exc, limits, limit, usage, scope="turn"):
    assert isinstance(exc, UsageLimitExceeded)
    assert (exc.limit, exc.value, exc.scope) == (limit, getattr(limits, limit), scope)
    assert exc.usage.requests == usage.requests and exc.usage.tool_calls == usage.tool_calls
    assert (exc.usage.input_tokens, exc.usage.output_tokens) == (usage.input_tokens, usage.output_tokens)
    assert exc.usage.cost_usd == pytest.approx(usage.cost_usd)
    assert limit in str(exc) and scope in str(exc)


@pytest.mark.parametrize("case", TURN_CASES, ids=list(TURN_CASES))
def test_each_turn_limit_ends_the_blocking_tool_loop(case, registry, ran):
    limits, limit, requests, ran_count, usage = TURN_CASES[case]
    provider = MockProvider(script(), pricing=PRICING)
    cycle = LlmCycle(provider, CycleConfig(usage_limits=limits))
    with pytest.raises(UsageLimitExceeded) as caught:
        cycle.submit_with_tools("go", registry)
    check_error(caught.value, limits, limit, usage)
    assert len(provider.requests) == requests
    assert len(ran) == ran_count
    # The history keeps whole rounds only: no tool call without its result.
    uses = sum(len(m.tool_uses) for m in cycle.messages())
    results = sum(1 for m in cycle.messages() for b in m.content if type(b).__name__ == "ToolResultBlock")
    assert uses == results


@pytest.mark.parametrize("case", TURN_CASES, ids=list(TURN_CASES))
def test_each_turn_limit_ends_the_streaming_tool_loop_with_an_error_event(case, registry, ran):
    limits, limit, requests, ran_count, usage = TURN_CASES[case]
    provider = MockProvider(script(), pricing=PRICING)
    cycle = LlmCycle(provider, CycleConfig(usage_limits=limits))
    with cycle.submit_with_tools_stream("go", registry) as stream:
        events = list(stream)
    assert isinstance(events[-1], Error)
    check_error(events[-1].error, limits, limit, usage)
    assert stream.error is events[-1].error
    assert len(provider.requests) == requests
    assert len(ran) == ran_count
    if limit == "max_tool_calls":
        assert not any(isinstance(e, ToolExecutionStarted) for e in events)


def test_a_turn_within_its_limits_runs_to_the_end(registry):
    limits = UsageLimits(max_requests=2, max_tool_calls=2, max_input_tokens=60, max_output_tokens=15,
                         max_total_tokens=75, max_cost_usd=76e-6)
    provider = MockProvider(script(), pricing=PRICING)
    assert LlmCycle(provider, CycleConfig(usage_limits=limits)).submit_with_tools("go", registry).message.text == "done"


def turn_texts(n):
    return [MockProvider.text(f"answer {i}", usage=Usage(20, 10)) for i in range(n)]


#: (limits, the limit hit, provider requests made in total) for a session of 20-in / 10-out turns.
SESSION_CASES = {
    "requests": (UsageLimits(max_requests=2), "max_requests", 2),
    "input tokens, before the request": (UsageLimits(max_input_tokens=40), "max_input_tokens", 2),
    "output tokens, after the response": (UsageLimits(max_output_tokens=25), "max_output_tokens", 3),
    "total tokens, after the response": (UsageLimits(max_total_tokens=80), "max_total_tokens", 3),
    "cost, after the response": (UsageLimits(max_cost_usd=80e-6), "max_cost_usd", 3),
}


@pytest.mark.parametrize("stream", [False, True], ids=["submit_turn", "submit_turn_stream"])
@pytest.mark.parametrize("case", SESSION_CASES, ids=list(SESSION_CASES))
def test_each_session_limit_counts_every_turn(case, stream):
    limits, limit, requests = SESSION_CASES[case]
    provider = MockProvider(turn_texts(3), pricing=PRICING)
    ended = []
    hooks = Hooks()
    hooks.on(HookEvent.ON_TURN_END, lambda ctx: ended.append(ctx.turn_index))
    session = AgentSession(provider, hooks=hooks, usage_limits=limits, pricing=PRICING)
    for _ in range(2):
        session.submit_turn("hi")
    if stream:
        events = list(session.submit_turn_stream("hi"))
        error = events[-1].error
    else:
        with pytest.raises(UsageLimitExceeded) as caught:
            session.submit_turn("hi")
        error = caught.value
    assert (error.limit, error.scope) == (limit, "session")
    assert len(provider.requests) == requests
    # The failed turn still ended and counted what it used.
    assert session.turn_index == 3 and ended == [0, 1, 2]
    assert session.usage.requests == requests
    assert session.cost_so_far == Usage(20 * requests, 10 * requests)
    assert error.usage == session.usage


@pytest.mark.parametrize("stream", [False, True], ids=["submit_turn", "submit_turn_stream"])
def test_the_session_tool_call_limit_counts_every_turn(registry, ran, stream):
    provider = MockProvider([MockProvider.tool_calls(("c1", "echo", {"text": "a"})), MockProvider.text("1"),
                             MockProvider.tool_calls(("c2", "echo", {"text": "b"}))])
    session = AgentSession(provider, registry=registry, usage_limits=UsageLimits(max_tool_calls=1))
    session.submit_turn("one")
    if stream:
        error = list(session.submit_turn_stream("two"))[-1].error
    else:
        with pytest.raises(UsageLimitExceeded) as caught:
            session.submit_turn("two")
        error = caught.value
    assert (error.limit, error.value, error.usage.tool_calls) == ("max_tool_calls", 1, 1)
    assert ran == ["a"]
    assert session.usage.tool_calls == 1 and session.turn_index == 2


def test_turn_and_session_limits_apply_together():
    config = CycleConfig(usage_limits=UsageLimits(max_requests=5))
    session = AgentSession(MockProvider(turn_texts(2)), config, usage_limits=UsageLimits(max_requests=1))
    session.submit_turn("hi")
    with pytest.raises(UsageLimitExceeded) as caught:
        session.submit_turn("hi")
    assert caught.value.scope == "session"


def test_session_limits_and_usage_survive_to_dict_and_from_dict():
    limits = UsageLimits(max_requests=2, max_cost_usd=0.5)
    session = AgentSession(MockProvider(turn_texts(1)), CycleConfig(usage_limits=UsageLimits(max_tool_calls=3)),
                           usage_limits=limits)
    session.submit_turn("hi")
    data = session.to_dict()
    restored = AgentSession.from_dict(data, provider=MockProvider(turn_texts(2)))
    assert restored.usage_limits == limits
    assert restored.usage == session.usage == RunUsage(requests=1, input_tokens=20, output_tokens=10)
    assert restored.config.usage_limits == UsageLimits(max_tool_calls=3)
    restored.submit_turn("again")
    with pytest.raises(UsageLimitExceeded):
        restored.submit_turn("third")


def test_bad_limits_are_refused_at_construction():
    with pytest.raises(ValueError, match="max_requests"):
        UsageLimits(max_requests=-1)
    with pytest.raises(ValueError, match="max_cost_usd"):
        UsageLimits(max_cost_usd="1")
    with pytest.raises(TypeError, match="usage_limits"):
        AgentSession(MockProvider(), usage_limits={"max_requests": 1})


def test_usage_limit_exceeded_is_an_agcore_error_that_pickles():
    from agcore_sync.errors import AgcoreError

    exc = UsageLimitExceeded("over", limit="max_requests", value=1, usage=RunUsage(requests=1), scope="session")
    assert isinstance(exc, AgcoreError)
    again = pickle.loads(pickle.dumps(exc))
    assert (again.limit, again.value, again.usage, again.scope) == ("max_requests", 1, RunUsage(requests=1), "session")


def test_a_paused_turn_keeps_counting_after_it_is_resumed():
    from agcore_sync.hooks import Approve

    @tool(requires_approval=True)
    def delete(path: str) -> str:
        """Delete a file."""
        return f"deleted {path}"

    with ToolRegistry() as registry:
        registry.register(delete)
        provider = MockProvider([MockProvider.tool_calls(("c1", "delete", {"path": "a"})),
                                 MockProvider.tool_calls(("c2", "delete", {"path": "b"}))])
        config = CycleConfig(usage_limits=UsageLimits(max_tool_calls=1))
        session = AgentSession(provider, config, registry=registry)
        session.submit_turn("delete a and b")
        with pytest.raises(UsageLimitExceeded) as caught:
            session.resume_turn({"c1": Approve()})
    # The call counted before the pause still counts: the second one is over the turn's limit.
    assert (caught.value.limit, caught.value.usage.tool_calls, caught.value.usage.requests) == ("max_tool_calls", 1, 2)
    assert session.usage.tool_calls == 1 and session.turn_index == 1
