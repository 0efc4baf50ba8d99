"""MockProvider streams like a real provider; PartialMessageResponse rebuilds responses."""

from __future__ import annotations

import pytest

from agcore_sync.llm.errors import LlmConnectionError, LlmError, RateLimitError, ServerError
from agcore_sync.llm.events import (
    ContentBlockEnd,
    ContentBlockStart,
    CostUpdate,
    Error,
    MessageComplete,
    MessageStart,
    TextDelta,
    ThinkingDelta,
    ToolCallArgumentsDelta,
    ToolCallEnd,
    ToolExecutionStarted,
)
from agcore_sync.llm.mock import MockProvider, MockStream, events_for
from agcore_sync.llm.partial import PartialMessageResponse, parse_tool_arguments
from agcore_sync.llm.types import (
    Message,
    MessageRequest,
    MessageResponse,
    Role,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
)

REQUEST = MessageRequest(None, [Message.user("hi")])


def _rich_response():
    return MessageResponse("r1", "mock-model", Message(Role.ASSISTANT, [
        ThinkingBlock("thinking about it carefully", signature="sig-1"),
        TextBlock("The answer needs two tools."),
        ToolUseBlock("c1", "add", {"a": 17, "b": 23}),
        ToolUseBlock("c2", "search", {"query": "a long query that spans several pieces"}),
    ]), StopReason.TOOL_USE, Usage(30, 12))


def test_mock_stream_follows_the_pinned_event_order_with_text_in_several_deltas():
    response = MockProvider.text("Hello there, this is a longer answer.")
    events = list(MockProvider([response]).chat_stream(REQUEST))
    assert isinstance(events[0], MessageStart) and events[0].id == response.id
    assert events[1] == ContentBlockStart(0, "text")
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 2
    assert "".join(d.text for d in deltas) == response.message.text
    assert events[-3] == ContentBlockEnd(0)
    assert isinstance(events[-2], CostUpdate) and events[-2].usage == response.usage
    assert events[-1] == MessageComplete(response)


def test_mock_stream_of_tool_calls_sends_argument_pieces_then_the_end_of_each_call():
    response = _rich_response()
    events = list(MockProvider([response]).chat_stream(REQUEST))
    starts = [e for e in events if isinstance(e, ContentBlockStart)]
    assert [s.index for s in starts] == [0, 1, 2, 3]
    assert starts[2] == ContentBlockStart(2, "tool_use", "c1", "add")
    pieces = [e for e in events if isinstance(e, ToolCallArgumentsDelta) and e.tool_call_id == "c2"]
    assert len(pieces) > 1 and all(p.index == 3 for p in pieces)
    ends = [e for e in events if isinstance(e, ToolCallEnd)]
    assert [(e.tool_call_id, e.tool_name) for e in ends] == [("c1", "add"), ("c2", "search")]
    end_c1 = events.index(ends[0])
    assert events[end_c1 + 1] == ContentBlockEnd(2)
    assert ThinkingDelta("", "sig-1") in events


def test_replaying_the_mock_events_without_message_complete_rebuilds_the_response():
    response = _rich_response()
    partial = PartialMessageResponse()
    for event in MockProvider([response]).chat_stream(REQUEST):
        if not isinstance(event, MessageComplete):
            assert partial.apply(event)
    partial.stop_reason = StopReason.TOOL_USE
    assert partial.finalize() == response


def test_partial_ignores_meta_events_and_refuses_errors_and_strangers():
    partial = PartialMessageResponse()
    assert partial.apply(ToolExecutionStarted("t", "c", "{}"))
    assert not partial.apply(Error("x"))  # an error is no part of the message, nor a meta event
    assert not partial.apply(ToolCallArgumentsDelta(5, "nope", "{"))
    assert not partial.apply(ToolCallEnd("nope", "t", "{}"))


def test_partial_infers_the_stop_reason_and_parses_arguments_when_no_completion_arrived():
    partial = PartialMessageResponse()
    for event in (MessageStart("r", "m"), ContentBlockStart(0, "tool_use", "c", "f"),
                  ToolCallArgumentsDelta(0, "c", ""), ToolCallEnd("c", "f", ""), ContentBlockEnd(0)):
        partial.apply(event)
    response = partial.finalize()
    assert response.stop_reason is StopReason.TOOL_USE
    assert response.message.tool_uses[0].input == {}


def test_tool_arguments_that_are_not_json_are_kept_raw():
    assert parse_tool_arguments('{"a": 1}') == {"a": 1}
    assert parse_tool_arguments("  ") == {}
    assert parse_tool_arguments('{"a": ') == '{"a": '


def test_mock_records_requests_runs_callables_and_raises_scripted_errors():
    error = RateLimitError("slow down", status_code=429)
    provider = MockProvider([lambda req: MockProvider.text(f"{len(req.messages)} messages"), error])
    assert provider.chat(REQUEST).message.text == "1 messages"
    with pytest.raises(RateLimitError):
        provider.chat(REQUEST)
    assert provider.requests == [REQUEST, REQUEST]


def test_a_mock_out_of_responses_says_so():
    provider = MockProvider([])
    with pytest.raises(LlmError, match="no scripted response left"):
        list(provider.chat_stream(REQUEST))


def test_mock_cost_update_uses_the_given_pricing():
    from agcore_sync.llm.cost import Pricing

    provider = MockProvider([MockProvider.text("x", usage=Usage(1_000_000, 1_000_000))], pricing=Pricing(1.0, 2.0))
    cost = [e for e in provider.chat_stream(REQUEST) if isinstance(e, CostUpdate)][0]
    assert cost.cost_usd == pytest.approx(3.0)


# -- the builders and the stream entries (DESIGN Round 4, issue 8) ---------------------------------------


def test_the_builders_make_text_and_tool_call_responses_with_unique_ids():
    first, second = MockProvider.text("hi"), MockProvider.text("hi", usage=Usage(3, 4), model="m",
                                                                stop_reason=StopReason.LENGTH)
    assert first.id != second.id
    assert (first.message, first.stop_reason, first.model) == (Message.assistant("hi"), StopReason.STOP, "mock-model")
    assert (second.usage, second.model, second.stop_reason) == (Usage(3, 4), "m", StopReason.LENGTH)
    block = ToolUseBlock("given", "c", {"z": 1})
    calls = MockProvider.tool_calls(("a", {"x": 1}), ("id-b", "b", {}), block, text="Let me see.")
    assert calls.stop_reason is StopReason.TOOL_USE and calls.message.text == "Let me see."
    uses = calls.message.tool_uses
    assert [(u.name, u.input) for u in uses] == [("a", {"x": 1}), ("b", {}), ("c", {"z": 1})]
    assert uses[1].id == "id-b" and uses[2] is block
    other = MockProvider.tool_calls(("a", {"x": 1}))
    assert uses[0].id != other.message.tool_uses[0].id  # generated ids never repeat


def test_a_failing_stream_sends_the_first_events_of_its_response_then_raises_from_the_iterator():
    response = MockProvider.text("Hello, world")
    cut = ServerError("overloaded", status_code=529)
    provider = MockProvider([MockProvider.failing_stream(response, after_events=3, error=cut)])
    stream = provider.chat_stream(REQUEST)
    received = [next(stream) for _ in range(3)]
    assert received == list(events_for(response))[:3]
    with pytest.raises(ServerError) as info:
        next(stream)
    assert info.value is cut
    assert provider.requests == [REQUEST] and provider.remaining == 0


def test_a_failing_stream_by_default_is_a_retryable_connection_error_and_chat_raises_it_too():
    entry = MockProvider.failing_stream(MockProvider.text("Hi"), after_events=0)
    provider = MockProvider([entry, entry])
    with pytest.raises(LlmConnectionError) as info:
        list(provider.chat_stream(REQUEST))
    assert info.value.retryable and "after 0 events" in str(info.value)
    with pytest.raises(LlmConnectionError):
        provider.chat(REQUEST)


@pytest.mark.parametrize("after", [-1, 6, 1.5, True])
def test_a_failing_stream_refuses_a_count_it_cannot_cut_at(after):
    # "Hi" streams as 6 events: MessageStart, ContentBlockStart, TextDelta, ContentBlockEnd, CostUpdate,
    # MessageComplete; a cut after all of them would not fail at all.
    with pytest.raises(ValueError, match="after_events must be an int from 0 to 5"):
        MockProvider.failing_stream(MockProvider.text("Hi"), after_events=after)


def test_a_failing_stream_refuses_an_error_that_is_not_an_exception():
    with pytest.raises(TypeError, match="error must be an exception instance, not str"):
        MockProvider.failing_stream(MockProvider.text("Hi"), after_events=1, error="boom")


def test_a_stream_entry_streams_its_own_events_and_is_closed_with_the_provider_stream():
    closed = []

    def script(request):
        try:
            yield MessageStart("r1", "mock-model")
            yield TextDelta(f"{len(request.messages)} messages")
        finally:
            closed.append(True)

    provider = MockProvider([MockProvider.stream(script)])
    stream = provider.chat_stream(REQUEST)
    assert next(stream) == MessageStart("r1", "mock-model")
    assert next(stream) == TextDelta("1 messages")
    stream.close()
    assert closed == [True]


def test_chat_on_a_stream_entry_returns_its_completed_response_or_says_it_has_none():
    response = MockProvider.text("whole")
    provider = MockProvider([MockStream(lambda request: events_for(response)),
                             MockStream(lambda request: iter([MessageStart("r2", "mock-model")]))])
    assert provider.chat(REQUEST) is response
    with pytest.raises(LlmError, match="ended without a MessageComplete"):
        provider.chat(REQUEST)


def test_tool_execution_started_offers_its_arguments_parsed_as_hooks_see_them():
    from agcore_sync.llm.events import ToolExecutionStarted

    assert ToolExecutionStarted("add", "c1", '{"a": 1, "b": [2]}').parsed_arguments == {"a": 1, "b": [2]}
    assert ToolExecutionStarted("add", "c1", "").parsed_arguments == {}
    assert ToolExecutionStarted("add", "c1", '{"a": ').parsed_arguments == '{"a": '
    event = ToolExecutionStarted("add", "c1", '{"a": 1}')
    assert "parsed_arguments" not in event.to_dict()
