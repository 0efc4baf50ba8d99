"""The span tree of session turns: names, parents across threads, attributes, failures, closes, metrics."""

from __future__ import annotations

import json
import threading
import types

import pytest
from opentelemetry.trace import SpanKind, StatusCode

from agcore_sync.agent.session import AgentSession
from agcore_sync.llm.errors import ServerError
from agcore_sync.llm.events import Error, ToolExecutionStarted
from agcore_sync.llm.mock import MockProvider, events_for
from agcore_sync.llm.types import Usage
from agcore_sync.loop.cycle import CycleConfig, LlmCycle
from agcore_sync.tools.function import tool
from agcore_sync.tools.registry import ToolRegistry

#: Bound on every wait for something that must happen.
WAIT = 5.0

TWO_ROUNDS = """\
request
  invoke_agent
    chat mock-model
    execute_tool add
    execute_tool mul
    chat mock-model"""


@pytest.fixture
def tools():
    """``add`` and ``mul``, which wait for each other: they only return if they run in parallel."""
    both = threading.Barrier(2, timeout=WAIT)
    threads = []

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        threads.append(threading.current_thread().name)
        both.wait()
        return a + b

    @tool
    def mul(a: int, b: int) -> int:
        """Multiply two integers."""
        threads.append(threading.current_thread().name)
        both.wait()
        return a * b

    with ToolRegistry() as registry:
        registry.register(add)
        registry.register(mul)
        yield types.SimpleNamespace(registry=registry, threads=threads)


def two_round_provider() -> MockProvider:
    return MockProvider([
        MockProvider.tool_calls(("call_a", "add", {"a": 2, "b": 3}), ("call_m", "mul", {"a": 4, "b": 5}),
                                usage=Usage(20, 10)),
        MockProvider.text("5 and 20", usage=Usage(40, 5)),
    ])


def assert_two_round_tree(otel, parallel) -> None:
    assert otel.tree() == TWO_ROUNDS
    request, turn = otel.span("request"), otel.span("invoke_agent")
    chats = [s for s in otel.spans() if s.name == "chat mock-model"]
    tools = {s.name: s for s in otel.spans() if s.name.startswith("execute_tool")}
    assert turn.parent.span_id == request.context.span_id
    # Chat spans (made in the stream worker) and tool spans (made in pool
    # threads) are all direct children of the turn span.
    assert {s.parent.span_id for s in [*chats, *tools.values()]} == {turn.context.span_id}
    assert {s.context.trace_id for s in otel.spans()} == {request.context.trace_id}
    assert all(name.startswith("agcore-tool-") for name in parallel.threads)

    assert turn.kind is SpanKind.INTERNAL
    assert dict(turn.attributes) == {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": "mock",
        "gen_ai.request.model": "mock-model", "gen_ai.usage.input_tokens": 60, "gen_ai.usage.output_tokens": 15,
    }
    assert turn.status.status_code is StatusCode.UNSET
    first, second = sorted(chats, key=lambda s: s.start_time)
    assert first.kind is SpanKind.CLIENT
    base = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "mock", "gen_ai.request.model": "mock-model",
            "gen_ai.response.model": "mock-model"}
    assert dict(first.attributes) == {**base, "gen_ai.response.id": first.attributes["gen_ai.response.id"],
                                      "gen_ai.response.finish_reasons": ("tool_use",),
                                      "gen_ai.usage.input_tokens": 20, "gen_ai.usage.output_tokens": 10}
    assert dict(second.attributes) == {**base, "gen_ai.response.id": second.attributes["gen_ai.response.id"],
                                       "gen_ai.response.finish_reasons": ("stop",),
                                       "gen_ai.usage.input_tokens": 40, "gen_ai.usage.output_tokens": 5}
    assert first.attributes["gen_ai.response.id"].startswith("mock-")
    assert dict(tools["execute_tool add"].attributes) == {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "add", "gen_ai.tool.type": "function",
        "gen_ai.tool.call.id": "call_a", "gen_ai.tool.description": "Add two integers.",
    }
    assert dict(tools["execute_tool mul"].attributes)["gen_ai.tool.call.id"] == "call_m"
    # Tools run after their round's chat span ended and before the next began.
    assert all(first.end_time <= t.start_time and t.end_time <= second.start_time for t in tools.values())


def test_a_streamed_two_round_turn_with_parallel_tools_makes_the_documented_span_tree(otel, tools):
    session = AgentSession(two_round_provider(), registry=tools.registry)
    with otel.tracer.start_as_current_span("request"):
        stream = session.submit_turn_stream("2+3 and 4*5?")
    events = list(stream)  # consumed outside the request span: the turn keeps its parent
    assert not any(isinstance(e, Error) for e in events)
    assert_two_round_tree(otel, tools)


def test_a_blocking_turn_makes_the_same_span_tree(otel, tools):
    session = AgentSession(two_round_provider(), registry=tools.registry)
    with otel.tracer.start_as_current_span("request"):
        assert session.submit_turn("2+3 and 4*5?").message.text == "5 and 20"
    assert_two_round_tree(otel, tools)


def test_a_failed_turn_records_the_error_on_its_chat_and_turn_spans(otel):
    provider = MockProvider([ServerError("provider returned HTTP 500: overloaded", status_code=500)])
    session = AgentSession(provider, CycleConfig(retry=None))
    with otel.tracer.start_as_current_span("request"):
        events = list(session.submit_turn_stream("hi"))
    assert isinstance(events[-1], Error)
    assert otel.tree() == "request\n  invoke_agent\n    chat mock-model"
    for name in ("invoke_agent", "chat mock-model"):
        span = otel.span(name)
        assert span.status.status_code is StatusCode.ERROR
        assert span.attributes["error.type"] == "ServerError"
        assert [e.name for e in span.events] == ["exception"]
        assert span.events[0].attributes["exception.type"].endswith("ServerError")
    assert session.turn_index == 1


def test_a_failed_blocking_turn_records_the_error(otel):
    session = AgentSession(MockProvider([ServerError("down", status_code=503)]), CycleConfig(retry=None))
    with pytest.raises(ServerError):
        session.submit_turn("hi")
    assert otel.span("invoke_agent").attributes["error.type"] == "ServerError"
    assert otel.span("chat mock-model").status.status_code is StatusCode.ERROR


def test_retries_are_events_on_the_chat_span(otel):
    from agcore_sync.llm.retry import RetryConfig

    provider = MockProvider([ServerError("busy", status_code=503), MockProvider.text("ok")])
    session = AgentSession(provider, CycleConfig(retry=RetryConfig(initial_backoff=0.0, jitter=False)))
    assert session.submit_turn("hi").message.text == "ok"
    chat = otel.span("chat mock-model")
    assert [e.name for e in chat.events] == ["agcore.retry"]
    assert dict(chat.events[0].attributes) == {"error.type": "ServerError", "agcore.retry.attempt": 1,
                                               "agcore.retry.delay_s": 0.0}
    assert chat.status.status_code is StatusCode.UNSET


def test_a_closed_stream_ends_its_chat_and_turn_spans_as_cancelled(otel):
    reached, go = threading.Event(), threading.Event()

    def held(request):
        events = list(events_for(MockProvider.text("a long answer " * 20)))
        yield from events[:3]  # MessageStart, ContentBlockStart, TextDelta
        reached.set()
        assert go.wait(WAIT)  # a slow network read, until the test lets it go
        yield from events[3:]

    session = AgentSession(MockProvider([MockProvider.stream(held)]))
    stream = session.submit_turn_stream("hi")
    assert type(next(stream)).__name__ == "MessageStart"
    assert reached.wait(WAIT)
    stream.close()
    go.set()
    stream.worker.join(WAIT)
    assert not stream.worker.is_alive()
    assert otel.tree() == "invoke_agent\n  chat mock-model"
    for name in ("invoke_agent", "chat mock-model"):
        span = otel.span(name)
        assert span.status.status_code is StatusCode.ERROR
        assert span.attributes["error.type"] == "cancelled"
    assert session.turn_index == 1


def test_a_stream_closed_between_rounds_ends_the_turn_span_as_cancelled(otel):
    ran = threading.Event()
    release = threading.Event()

    @tool
    def slow() -> str:
        """Wait to be released."""
        ran.set()
        assert release.wait(WAIT)
        return "done"

    with ToolRegistry() as registry:
        registry.register(slow)
        session = AgentSession(MockProvider([MockProvider.tool_calls(("c1", "slow", {}))]), registry=registry)
        stream = session.submit_turn_stream("hi")
        for event in stream:
            if isinstance(event, ToolExecutionStarted):
                break
        assert ran.wait(WAIT)
        stream.close()
        release.set()
        stream.worker.join(WAIT)
    assert otel.tree() == "invoke_agent\n  chat mock-model\n  execute_tool slow"
    assert otel.span("invoke_agent").attributes["error.type"] == "cancelled"
    assert otel.span("execute_tool slow").status.status_code is StatusCode.UNSET  # the tool itself finished


def test_a_tool_failure_is_an_error_on_its_tool_span_only(otel):
    @tool
    def boom() -> str:
        """Fail."""
        raise RuntimeError("no")

    with ToolRegistry() as registry:
        registry.register(boom)
        provider = MockProvider([MockProvider.tool_calls(("c1", "boom", {})), MockProvider.text("sorry")])
        AgentSession(provider, registry=registry).submit_turn("hi")
    span = otel.span("execute_tool boom")
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == "ToolExecutionError"
    assert otel.span("invoke_agent").status.status_code is StatusCode.UNSET


def test_content_is_recorded_only_with_capture_content(otel, tools):
    from agcore_sync import telemetry

    AgentSession(two_round_provider(), registry=tools.registry, system_prompt="Be brief.").submit_turn("2+3 and 4*5?")
    assert not any(k.startswith(("gen_ai.input", "gen_ai.output", "gen_ai.system", "gen_ai.tool.call.a",
                                 "gen_ai.tool.call.r"))
                   for s in otel.spans() for k in s.attributes)
    otel.exporter.clear()
    telemetry.instrument(tracer_provider=otel.tracer_provider, capture_content=True)
    AgentSession(two_round_provider(), registry=tools.registry, system_prompt="Be brief.").submit_turn("2+3 and 4*5?")
    first = sorted((s for s in otel.spans() if s.name.startswith("chat")), key=lambda s: s.start_time)[0]
    assert json.loads(first.attributes["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "2+3 and 4*5?"}]}]
    assert json.loads(first.attributes["gen_ai.system_instructions"]) == [{"type": "text", "content": "Be brief."}]
    assert json.loads(first.attributes["gen_ai.output.messages"]) == [{
        "role": "assistant", "finish_reason": "tool_use",
        "parts": [{"type": "tool_call", "id": "call_a", "name": "add", "arguments": {"a": 2, "b": 3}},
                  {"type": "tool_call", "id": "call_m", "name": "mul", "arguments": {"a": 4, "b": 5}}]}]
    add = otel.span("execute_tool add")
    assert json.loads(add.attributes["gen_ai.tool.call.arguments"]) == {"a": 2, "b": 3}
    assert add.attributes["gen_ai.tool.call.result"] == "5"


def test_token_usage_and_duration_histograms_are_recorded_per_provider_call(otel, tools):
    AgentSession(two_round_provider(), registry=tools.registry).submit_turn("2+3 and 4*5?")
    usage = {p.attributes["gen_ai.token.type"]: p for p in otel.metric_points("gen_ai.client.token.usage")}
    assert (usage["input"].count, usage["input"].sum) == (2, 60)
    assert (usage["output"].count, usage["output"].sum) == (2, 15)
    assert dict(usage["input"].attributes) == {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "mock", "gen_ai.request.model": "mock-model",
        "gen_ai.response.model": "mock-model", "gen_ai.token.type": "input"}
    (duration,) = otel.metric_points("gen_ai.client.operation.duration")
    assert duration.count == 2 and duration.sum > 0
    assert usage["input"].explicit_bounds[:3] == (1, 4, 16)


def test_a_tool_loop_outside_a_session_puts_its_spans_under_the_current_span(otel):
    cycle = LlmCycle(MockProvider([MockProvider.text("hi")]))
    with otel.tracer.start_as_current_span("job"):
        list(cycle.submit_with_tools_stream("hello", ToolRegistry()))
    assert otel.tree() == "job\n  chat mock-model"


def test_uninstrument_stops_new_spans(otel):
    from agcore_sync import telemetry

    assert telemetry.is_instrumented()
    telemetry.uninstrument()
    assert not telemetry.is_instrumented()
    AgentSession(MockProvider([MockProvider.text("hi")])).submit_turn("hello")
    assert otel.spans() == []


def test_a_paused_turn_ends_its_span_at_the_pause_and_its_resumption_gets_its_own(otel):
    from agcore_sync.hooks import Approve

    @tool(requires_approval=True)
    def delete(path: str) -> str:
        """Delete a file."""
        return f"deleted {path}"

    with ToolRegistry() as registry:
        registry.register(delete)
        provider = MockProvider([MockProvider.tool_calls(("c1", "delete", {"path": "a.txt"}), usage=Usage(20, 10)),
                                 MockProvider.text("done", usage=Usage(40, 5))])
        session = AgentSession(provider, registry=registry)
        session.submit_turn("delete a.txt")
        assert [r.tool_call_id for r in session.pending_approvals] == ["c1"]
        assert otel.tree() == "invoke_agent\n  chat mock-model"
        assert otel.span("invoke_agent").status.status_code is StatusCode.UNSET
        otel.exporter.clear()
        assert session.resume_turn({"c1": Approve()}).message.text == "done"
    assert otel.tree() == "invoke_agent\n  execute_tool delete\n  chat mock-model"
    # The resumed span carries the whole turn's usage; the session counts it once.
    assert otel.span("invoke_agent").attributes["gen_ai.usage.input_tokens"] == 60
    assert (session.usage.requests, session.usage.tool_calls, session.usage.input_tokens) == (2, 1, 60)
