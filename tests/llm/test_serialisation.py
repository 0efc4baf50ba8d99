"""Every value type and event round-trips through to_dict / JSON / from_dict."""

from __future__ import annotations

import inspect
import json

import pytest

from agcore_sync.llm import events as events_module
from agcore_sync.llm import media as media_module
from agcore_sync.llm import types as types_module
from agcore_sync.llm.events import (
    ApprovalRequired,
    ContentBlockEnd,
    ContentBlockStart,
    CostUpdate,
    Error,
    MessageComplete,
    MessageStart,
    StreamEvent,
    SubagentEvent,
    TextDelta,
    ThinkingDelta,
    ToolApprovalRequest,
    ToolCallArgumentsDelta,
    ToolCallEnd,
    ToolExecutionCompleted,
    ToolExecutionStarted,
)
from agcore_sync.llm.media import DocumentBlock, ImageBlock
from agcore_sync.llm.retry import RetryConfig
from agcore_sync.llm.types import (
    ContentBlock,
    Message,
    MessageRequest,
    MessageResponse,
    Role,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolChoice,
    ToolDef,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from agcore_sync.loop.cycle import CycleConfig

RESPONSE = MessageResponse(
    "resp_1", "gpt-4o", Message(Role.ASSISTANT, [
        ThinkingBlock("hmm", signature="sig"),
        TextBlock("Let me check é€😀"),
        ToolUseBlock("call_1", "add", {"a": 1, "b": [2, 3]}),
    ]), StopReason.TOOL_USE, Usage(10, 5, 2, 1),
)

SAMPLES = {
    TextBlock: TextBlock("hi"),
    ToolUseBlock: ToolUseBlock("c1", "add", {"a": 1}),
    ToolResultBlock: ToolResultBlock("c1", "3", is_error=True),
    ImageBlock: ImageBlock("image/png", data="iVBORw0KGgo="),
    DocumentBlock: DocumentBlock("text/plain", text="Terms é€", title="terms.txt"),
    ThinkingBlock: ThinkingBlock("", redacted_data="opaque"),
    Message: Message.tool_result("c1", "42"),
    ToolDef: ToolDef("add", "Add two numbers.", {"type": "object", "properties": {"a": {"type": "integer"}}}),
    ToolChoice: ToolChoice.tool("add"),
    MessageRequest: MessageRequest(
        "m", [Message.user("hi"), RESPONSE.message], system="be brief", tools=[ToolDef("t", "d")],
        tool_choice=ToolChoice.tool("t"), max_tokens=5, temperature=0.5, stop=["END"],
    ),
    Usage: Usage(1, 2, 3, 4),
    MessageResponse: RESPONSE,
    MessageStart: MessageStart("resp_1", "gpt-4o"),
    ContentBlockStart: ContentBlockStart(2, "tool_use", "call_1", "add"),
    TextDelta: TextDelta("é"),
    ThinkingDelta: ThinkingDelta("", signature="sig"),
    ToolCallArgumentsDelta: ToolCallArgumentsDelta(2, "call_1", '{"a"'),
    ToolCallEnd: ToolCallEnd("call_1", "add", '{"a": 1}'),
    ContentBlockEnd: ContentBlockEnd(2),
    CostUpdate: CostUpdate(Usage(10, 5), 0.00012),
    MessageComplete: MessageComplete(RESPONSE),
    ToolExecutionStarted: ToolExecutionStarted("add", "call_1", '{"a": 1}'),
    ToolExecutionCompleted: ToolExecutionCompleted("add", "call_1", "3", False, 0.01),
    Error: Error("boom"),
    ToolApprovalRequest: ToolApprovalRequest("call_1", "send_email", {"to": "ada@example.com", "cc": ["é"]}),
    ApprovalRequired: ApprovalRequired((ToolApprovalRequest("call_1", "send_email", {"to": "ada@example.com"}),
                                        ToolApprovalRequest("call_2", "delete", {}))),
    SubagentEvent: SubagentEvent("call_1", "research", SubagentEvent("call_7", "fact_check", TextDelta("é"))),
    RetryConfig: RetryConfig(max_retries=5, jitter=False),
    CycleConfig: CycleConfig("m", max_tokens=10, retry=RetryConfig(max_retries=1)),
}


def _public_classes(module):
    return {
        obj for name, obj in vars(module).items()
        if inspect.isclass(obj) and obj.__module__ == module.__name__ and not name.startswith("_")
        and hasattr(obj, "to_dict") and obj not in (ContentBlock, StreamEvent)
    }


def test_every_serialisable_class_has_a_sample_so_none_can_be_forgotten():
    classes = _public_classes(types_module) | _public_classes(events_module) | _public_classes(media_module)
    missing = {c.__name__ for c in classes} - {c.__name__ for c in SAMPLES}
    assert not missing


@pytest.mark.parametrize("cls", list(SAMPLES), ids=lambda c: c.__name__)
def test_a_value_survives_json_through_to_dict_and_from_dict(cls):
    value = SAMPLES[cls]
    data = json.loads(json.dumps(value.to_dict()))
    assert cls.from_dict(data) == value


@pytest.mark.parametrize("cls", [c for c in SAMPLES if issubclass(c, StreamEvent)], ids=lambda c: c.__name__)
def test_the_stream_event_base_dispatches_on_the_type_tag(cls):
    data = json.loads(json.dumps(SAMPLES[cls].to_dict()))
    assert type(StreamEvent.from_dict(data)) is cls
    assert data["type"] == cls.type


def test_event_type_tags_are_the_snake_case_class_names():
    assert ToolCallArgumentsDelta.type == "tool_call_arguments_delta"
    assert MessageComplete.type == "message_complete"
    assert Error.type == "error"


def test_content_blocks_dispatch_on_their_type_tag():
    for block in (TextBlock("a"), ToolUseBlock("i", "n", {}), ToolResultBlock("i", "c"), ThinkingBlock("t")):
        assert ContentBlock.from_dict(json.loads(json.dumps(block.to_dict()))) == block


def test_an_unknown_type_tag_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown stream event type"):
        StreamEvent.from_dict({"type": "nope"})
    with pytest.raises(ValueError, match="unknown content block type"):
        ContentBlock.from_dict({"type": "video"})


def test_the_error_event_writes_its_exception_as_class_and_message_and_ignores_it_in_equality():
    event = Error("failed", ValueError("bad value"))
    data = event.to_dict()
    assert data == {"type": "error", "message": "failed", "error": {"class": "ValueError", "message": "bad value"}}
    restored = StreamEvent.from_dict(json.loads(json.dumps(data)))
    assert restored.error is None
    assert restored == event


def test_message_helpers_build_the_documented_shapes():
    assert Message.user("hi") == Message(Role.USER, (TextBlock("hi"),))
    assert Message("assistant", [TextBlock("a"), TextBlock("b")]).text == "ab"
    msg = Message(Role.ASSISTANT, [TextBlock("x"), ToolUseBlock("1", "f", {}), ToolUseBlock("2", "g", {})])
    assert [u.id for u in msg.tool_uses] == ["1", "2"]
    assert isinstance(msg.content, tuple)
    assert Message.tool_result("1", "out", is_error=True).content == (ToolResultBlock("1", "out", True),)


def test_message_content_must_be_blocks():
    with pytest.raises(TypeError, match="content blocks"):
        Message(Role.USER, [{"type": "text", "text": "x"}])


def test_usage_adds_and_totals():
    total = Usage(1, 2, 3, 4) + Usage(10, 20, 30, 40)
    assert total == Usage(11, 22, 33, 44)
    assert total.total_tokens == 33


def test_tool_choice_accepts_the_three_modes_or_a_named_tool_only():
    for mode in ("auto", "none", "required"):
        assert MessageRequest(None, [], tool_choice=mode).tool_choice == mode
    with pytest.raises(ValueError, match="tool_choice"):
        MessageRequest(None, [], tool_choice="any")


def test_response_reports_tool_calls():
    assert RESPONSE.has_tool_calls
    assert not MessageResponse("i", "m", Message.assistant("x"), "stop").has_tool_calls


@pytest.mark.parametrize("block", [
    ToolResultBlock("c1", [TextBlock("a chart:"), ImageBlock("image/png", data="iVBORw0KGgo=")]),
    ImageBlock.from_url("https://example.com/a.png"),
    ImageBlock(None, url="https://example.com/picture"),
    DocumentBlock("application/pdf", data="JVBERi0=", title="spec"),
    DocumentBlock("application/pdf", url="https://example.com/spec.pdf"),
    Message.user("What is in these?", ImageBlock("image/gif", data="R0lGODlh"), DocumentBlock("text/plain", text="x")),
], ids=["tool result with blocks", "image url", "image url without type", "pdf data", "pdf url", "user message"])
def test_media_and_block_content_survive_json(block):
    data = json.loads(json.dumps(block.to_dict()))
    assert type(block).from_dict(data) == block
