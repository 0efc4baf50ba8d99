"""MockProvider streams like a real provider; PartialMessageResponse rebuilds responses."""

from __future__ import annotations

import pytest

from agcore_sync.llm.errors import LlmError, RateLimitError
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
from agcore_sync.llm.mock import MockProvider
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
