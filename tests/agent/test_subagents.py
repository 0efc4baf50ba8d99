"""Agents as tools: agent_tool runs a sub-session's turn inside a tool call (issue 27)."""

from __future__ import annotations

import threading

import pytest

from agcore_sync import (
    AgentSession,
    ApprovalRequired,
    CostUpdate,
    CycleConfig,
    HookEvent,
    LlmConnectionError,
    MessageStart,
    MockProvider,
    RunUsage,
    StreamEvent,
    SubagentEvent,
    TextDelta,
    ToolExecutionCompleted,
    ToolExecutionStarted,
    ToolTimeoutError,
    Usage,
    UsageLimitExceeded,
    UsageLimits,
    agent_tool,
    tool,
)
from agcore_sync.agent.subagents import AgentFactoryError, SubagentError
from agcore_sync.llm.cost import cost_usd

CONFIG = CycleConfig(retry=None, tool_timeout_secs=None)
#: Bound on every wait for something that must happen.
WAIT = 5.0


def session(provider, *tools, config=CONFIG, prompt=None):
    agent = AgentSession(provider, config, system_prompt=prompt)
    agent.registry.register_all(tools)  # the session made this registry: it closes it
    return agent


def tool_results(provider, index):
    """The tool-result blocks after the last assistant message of request ``index``."""
    blocks = []
    for message in reversed(provider.requests[index].messages):
        if message.role.value == "assistant":
            break
        blocks[:0] = message.content
    return blocks


def test_an_agent_tool_runs_one_sub_turn_and_returns_its_final_text():
    made = []

    def research():
        provider = MockProvider([MockProvider.text("Paris is the capital.")])
        made.append(provider)
        return session(provider, prompt="You research.")

    tool = agent_tool(research, name="research", description="Research a question.")
    assert made == []  # the factory runs only when the tool does
    assert tool.parameters["required"] == ["input"]
    parent = MockProvider([MockProvider.tool_calls(("c1", "research", {"input": "capital of France?"})),
                           MockProvider.text("It is Paris.")])
    with session(parent, tool) as top:
        answer = top.submit_turn("What is the capital of France?")
    assert answer.message.text == "It is Paris."
    [child] = made
    assert child.requests[0].system == "You research."
    assert child.requests[0].messages[-1].text == "capital of France?"
    [result] = tool_results(parent, 1)
    assert (result.tool_use_id, result.content, result.is_error) == ("c1", "Paris is the capital.", False)


def test_a_custom_input_schema_sends_the_arguments_as_json_and_structured_output_is_returned():
    child = MockProvider([MockProvider.text('{"city": "Paris"}')])
    tool = agent_tool(lambda: session(child), name="locate", description="Find a city.",
                      input_schema={"type": "object", "properties": {"country": {"type": "string"}}},
                      output={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
    parent = MockProvider([MockProvider.tool_calls(("c1", "locate", {"country": "France"})), MockProvider.text("ok")])
    with session(parent, tool) as top:
        top.submit_turn("where?")
    assert child.requests[0].messages[-1].text == '{"country": "France"}'
    assert tool_results(parent, 1)[0].content == '{"city": "Paris"}'


def test_cost_and_usage_roll_up_into_the_parent_exactly_with_a_per_agent_breakdown():
    model = "gpt-4o-mini"  # priced in the built-in table
    inner_usage, child_usage, parent_usage = Usage(100, 7), Usage(300, 20), Usage(1000, 50)

    def checker():
        return session(MockProvider([MockProvider.text("checked", usage=inner_usage, model=model)]))

    def research():
        return session(MockProvider([
            MockProvider.tool_calls(("r1", "check", {"input": "is it?"}), usage=child_usage, model=model),
            MockProvider.text("Paris", usage=child_usage, model=model),
        ]), agent_tool(checker, name="check", description="Check a fact."))

    parent = MockProvider([
        MockProvider.tool_calls(("c1", "research", {"input": "q"}), usage=parent_usage, model=model),
        MockProvider.text("Paris.", usage=parent_usage, model=model),
    ])
    with session(parent, agent_tool(research, name="research", description="Research.")) as top:
        top.submit_turn("q")
        every = [parent_usage] * 2 + [child_usage] * 2 + [inner_usage]
        total = Usage()
        for usage in every:
            total = total + usage
        assert top.cost_so_far == total
        assert top.cost_usd == pytest.approx(sum(cost_usd(usage, model, None) for usage in every), abs=1e-12)
        assert top.usage.requests == 5 and top.usage.tool_calls == 2
        assert top.usage.input_tokens == total.prompt_tokens
        research_used = top.usage_by_agent["research"]
        assert (research_used.requests, research_used.tool_calls) == (3, 1)
        assert research_used.input_tokens == 2 * child_usage.prompt_tokens + inner_usage.prompt_tokens
        assert top.usage_by_agent["research/check"] == RunUsage(
            requests=1, input_tokens=100, output_tokens=7, cost_usd=cost_usd(inner_usage, model, None))
        saved = top.to_dict()
    loaded = AgentSession.from_dict(saved, provider=MockProvider())
    assert loaded.usage_by_agent == top.usage_by_agent


def test_usage_limits_of_the_parent_count_the_sub_agents_usage():
    def research():
        return session(MockProvider([MockProvider.text("long answer", usage=Usage(5000, 10))]))

    parent = MockProvider([MockProvider.tool_calls(("c1", "research", {"input": "q"}), usage=Usage(10, 5)),
                           MockProvider.text("never")])
    top = session(parent, agent_tool(research, name="research", description="Research."),
                  config=CycleConfig(retry=None, tool_timeout_secs=None,
                                     usage_limits=UsageLimits(max_input_tokens=1000)))
    with top, pytest.raises(UsageLimitExceeded) as caught:
        top.submit_turn("q")
    assert caught.value.limit == "max_input_tokens"
    assert caught.value.usage.input_tokens == 5010
    assert len(parent.requests) == 1  # the parent was stopped before its next request


def test_sub_agent_events_arrive_wrapped_in_the_parent_stream_nested_three_deep():
    def level3():
        return session(MockProvider([MockProvider.text("deep answer")]))

    def level2():
        return session(MockProvider([MockProvider.tool_calls(("c3", "level3", {"input": "go on"})),
                                     MockProvider.text("middle answer")]),
                       agent_tool(level3, name="level3", description="Third."))

    def level1():
        return session(MockProvider([MockProvider.tool_calls(("c2", "level2", {"input": "go on"})),
                                     MockProvider.text("first answer")]),
                       agent_tool(level2, name="level2", description="Second."))

    parent = MockProvider([MockProvider.tool_calls(("c1", "level1", {"input": "start"})),
                           MockProvider.text("top answer")])
    with session(parent, agent_tool(level1, name="level1", description="First.")) as top:
        events = list(top.submit_turn_stream("go"))
        assert top.messages()[-1].text == "top answer"
    deep = [e for e in events if isinstance(e, SubagentEvent) and e.depth == 3]
    assert deep and all(isinstance(e.event, SubagentEvent) and isinstance(e.event.event, SubagentEvent)
                        for e in deep)
    assert {(e.tool_call_id, e.event.tool_call_id, e.event.event.tool_call_id) for e in deep} == {("c1", "c2", "c3")}
    assert {(e.agent_name, e.event.agent_name, e.event.event.agent_name) for e in deep} == {
        ("level1", "level2", "level3")}
    assert "".join(e.innermost.text for e in deep if isinstance(e.innermost, TextDelta)) == "deep answer"
    # The level-2 events between its call's Started and Completed carry the level-3 agent's answer.
    middle = [e.event for e in events if isinstance(e, SubagentEvent) and e.depth == 2]
    completed = [e.event for e in middle if isinstance(e.event, ToolExecutionCompleted)]
    assert [(c.tool_call_id, c.output) for c in completed] == [("c3", "deep answer")]
    # Every wrapped event survives to_dict / from_dict, nesting included.
    assert [StreamEvent.from_dict(e.to_dict()) for e in events] == events
    # The outer stream is still well formed: its own Started / Completed around the wrapped events.
    kinds = [type(e).__name__ for e in events if not isinstance(e, SubagentEvent)]
    assert kinds.index("ToolExecutionStarted") < kinds.index("ToolExecutionCompleted")
    first_wrapped = next(i for i, e in enumerate(events) if isinstance(e, SubagentEvent))
    assert isinstance(events[first_wrapped - 1], ToolExecutionStarted)


@pytest.mark.parametrize("streamed", [False, True], ids=["sync", "streamed"])
def test_parallel_sub_agent_calls_run_at_the_same_time(streamed):
    both_running = threading.Barrier(2, timeout=WAIT)

    def answer(text):
        def respond(request):
            both_running.wait()  # breaks (and fails the sub-turn) unless the other sub-agent runs meanwhile
            return MockProvider.text(text)
        return respond

    answers = iter(["alpha", "beta"])
    lock = threading.Lock()

    def worker():
        with lock:
            text = next(answers)
        return session(MockProvider([answer(text)]))

    parent = MockProvider([MockProvider.tool_calls(("a", "worker", {"input": "1"}), ("b", "worker", {"input": "2"})),
                           MockProvider.text("done")])
    with session(parent, agent_tool(worker, name="worker", description="Work.")) as top:
        if streamed:
            events = list(top.submit_turn_stream("go"))
            texts = {}
            for event in events:
                if isinstance(event, SubagentEvent) and isinstance(event.event, TextDelta):
                    texts[event.tool_call_id] = texts.get(event.tool_call_id, "") + event.event.text
            assert sorted(texts.values()) == ["alpha", "beta"] and set(texts) == {"a", "b"}
        else:
            top.submit_turn("go")
    results = tool_results(parent, 1)
    assert sorted(block.content for block in results) == ["alpha", "beta"]
    assert not any(block.is_error for block in results)


def test_an_error_inside_a_sub_agent_is_a_typed_tool_result_and_the_parent_goes_on():
    def broken():
        return session(MockProvider([LlmConnectionError("connection reset by the research API")]))

    seen = []
    parent = MockProvider([MockProvider.tool_calls(("c1", "research", {"input": "q"})),
                           MockProvider.text("I could not research it.")])
    with session(parent, agent_tool(broken, name="research", description="Research.")) as top:
        top.hooks.on(HookEvent.POST_TOOL_USE, lambda ctx: seen.append(ctx.invocation.error))
        answer = top.submit_turn("q")
    assert answer.message.text == "I could not research it."
    [result] = tool_results(parent, 1)
    assert result.is_error and "connection reset by the research API" in result.content
    [error] = seen
    assert isinstance(error, SubagentError) and isinstance(error.error, LlmConnectionError)
    assert error.agent_name == "research"


def test_an_agent_reaching_itself_through_its_tools_is_stopped_at_the_depth_limit():
    shared = MockProvider([MockProvider.tool_calls((f"d{i}", "me", {"input": "again"})) for i in range(6)]
                          + [MockProvider.text(f"answer {i}") for i in range(6)])

    def me():
        return session(shared, agent_tool(me, name="me", description="Myself."))

    with me() as top:
        answer = top.submit_turn("start")
    assert answer.message.text == "answer 5"
    # Levels 1..5 ran; the sixth call (made at depth 5) got the depth error as its result.
    refused = shared.requests[6].messages[-1].content[0]
    assert refused.is_error and "past the limit of 5" in refused.content
    assert len(shared.requests) == 12


def test_a_factory_that_returns_no_session_is_a_type_error_at_the_first_call():
    tool = agent_tool(lambda: "not a session", name="bad", description="Bad.")  # fine until it runs
    parent = MockProvider([MockProvider.tool_calls(("c1", "bad", {"input": "q"}))])
    with session(parent, tool) as top, pytest.raises(TypeError) as caught:
        top.submit_turn("q")
    assert isinstance(caught.value, AgentFactoryError)
    assert "must return an AgentSession, got str" in str(caught.value)
    with pytest.raises(TypeError):
        agent_tool("not callable", name="x", description="y")
    with pytest.raises(TypeError):
        agent_tool(lambda: None, name="", description="y")


def test_closing_the_parent_stream_closes_the_sub_agents_stream():
    started, release, child_closed = threading.Event(), threading.Event(), threading.Event()

    def held(request):
        try:
            yield MessageStart("m1", "mock-model")
            started.set()
            release.wait(WAIT)
            yield TextDelta("more")
            yield TextDelta("and more")
        finally:
            child_closed.set()

    child = MockProvider([MockProvider.stream(held), MockProvider.text("never asked")])
    parent = MockProvider([MockProvider.tool_calls(("c1", "research", {"input": "q"})), MockProvider.text("never")])
    with session(parent, agent_tool(lambda: session(child), name="research", description="Research.")) as top:
        stream = top.submit_turn_stream("q")
        for event in stream:
            if isinstance(event, SubagentEvent) and isinstance(event.event, MessageStart):
                break
        assert started.wait(WAIT)
        stream.close()
        release.set()
        assert child_closed.wait(WAIT)  # the sub-turn stopped at its next event and closed its provider stream
        stream._drive.ended.wait(WAIT)
    assert len(child.requests) == 1 and len(parent.requests) == 1


def test_a_sub_agent_without_a_streaming_parent_still_counts_but_emits_nothing_and_cost_updates_stay_wrapped():
    parent = MockProvider([MockProvider.tool_calls(("c1", "research", {"input": "q"})), MockProvider.text("ok")])
    child = MockProvider([MockProvider.text("child")])
    with session(parent, agent_tool(lambda: session(child), name="research", description="Research.")) as top:
        events = list(top.submit_turn_stream("q"))
    top_costs = [e for e in events if isinstance(e, CostUpdate)]
    wrapped_costs = [e.event for e in events if isinstance(e, SubagentEvent) and isinstance(e.event, CostUpdate)]
    assert len(top_costs) == 2 and len(wrapped_costs) == 1
    assert not any(isinstance(e, ApprovalRequired) for e in events)


def test_the_parents_tool_timeout_stops_the_sub_turn():
    release, child_ended = threading.Event(), threading.Event()
    ran = []

    @tool
    def note(text: str) -> str:
        """Take a note."""
        ran.append(text)
        return "noted"

    def slow_answer(request):
        release.wait(WAIT)  # answers only once the parent has timed out
        return MockProvider.tool_calls(("t1", "note", {"text": "too late"}))

    child = MockProvider([slow_answer, MockProvider.text("never asked")])

    def research():
        agent = session(child, note)
        agent.hooks.on(HookEvent.ON_TURN_END, lambda ctx: child_ended.set())
        return agent

    parent = MockProvider([MockProvider.tool_calls(("c1", "research", {"input": "q"}))])
    config = CycleConfig(retry=None, tool_timeout_secs=0.3)
    with session(parent, agent_tool(research, name="research", description="Research."), config=config) as top:
        with pytest.raises(ToolTimeoutError):
            top.submit_turn("q")
        release.set()
        assert child_ended.wait(WAIT)  # the sub-turn ended at its next step: cancelled, its tool not run
    assert ran == [] and len(child.requests) == 1
