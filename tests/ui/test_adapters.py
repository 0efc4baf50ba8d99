"""The UI adapters in Python: bad input, closing, and the shapes the oracles do not pin."""

from __future__ import annotations

import base64
import json

import pytest

from agcore_sync import Approve, Deny
from agcore_sync.llm.events import (
    ApprovalRequired,
    ContentBlockEnd,
    ContentBlockStart,
    Error,
    TextDelta,
    ToolApprovalRequest,
    ToolCallEnd,
    ToolExecutionCompleted,
)
from agcore_sync.llm.media import DocumentBlock, ImageBlock
from agcore_sync.llm.types import Role, TextBlock
from agcore_sync.ui import (
    AI_SDK_HEADERS,
    UiRequestError,
    ag_ui_decisions,
    ai_sdk_decisions,
    from_ag_ui,
    from_ai_sdk,
    to_ag_ui,
    to_ai_sdk,
)

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 16).decode()


def _chunks(frames) -> list:
    out = []
    for frame in frames:
        assert frame.startswith(b"data: ") and frame.endswith(b"\n\n")
        body = frame[6:-2]
        out.append(body.decode() if body == b"[DONE]" else json.loads(body))
    return out


class _Events:
    """An event iterable that records whether it was closed."""

    def __init__(self, events):
        self._events = iter(events)
        self.closed = False

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._events)

    def close(self):
        self.closed = True


def test_the_ai_sdk_headers_name_the_protocol_and_hold_no_hop_by_hop_header():
    assert AI_SDK_HEADERS["x-vercel-ai-ui-message-stream"] == "v1"
    assert AI_SDK_HEADERS["content-type"] == "text/event-stream"
    assert "connection" not in {name.lower() for name in AI_SDK_HEADERS}


def test_closing_either_stream_closes_the_events_it_reads():
    for encode in (lambda e: to_ai_sdk(e), lambda e: to_ag_ui(e, thread_id="t", run_id="r")):
        events = _Events([ContentBlockStart(0, "text"), TextDelta("hi")])
        frames = encode(events)
        next(frames)
        frames.close()
        assert events.closed
        assert list(frames) == []


def test_an_ai_sdk_stream_of_events_that_raise_ends_with_an_error_then_finish_and_done():
    def events():
        yield ContentBlockStart(0, "text")
        yield TextDelta("par")
        raise RuntimeError("relay lost")

    chunks = _chunks(to_ai_sdk(events()))
    types = [c if isinstance(c, str) else c["type"] for c in chunks]
    assert types == ["start", "text-start", "text-delta", "text-end", "error", "finish", "[DONE]"]
    assert chunks[4]["errorText"] == "relay lost"


def test_an_error_event_is_an_error_chunk_and_a_run_error_and_nothing_follows_the_run_error():
    events = [Error("the provider failed"), ToolExecutionCompleted("t", "c1", "x", False, 0.1, output="x")]
    ai = _chunks(to_ai_sdk(events))
    assert [c if isinstance(c, str) else c["type"] for c in ai][1:] == [
        "error", "tool-output-available", "finish", "[DONE]"]
    ag = _chunks(to_ag_ui(events, thread_id="t", run_id="r"))
    assert [c["type"] for c in ag] == ["RUN_STARTED", "RUN_ERROR"]


def test_tool_outputs_reach_the_ui_whole_and_parsed_when_they_are_json():
    big = json.dumps({"rows": list(range(500))})
    events = [ToolExecutionCompleted("q", "c1", big[:200], False, 0.1, output=big),
              ToolExecutionCompleted("q", "c2", "plain text", False, 0.1, output="plain text"),
              ToolExecutionCompleted("q", "c3", "boom", True, 0.1, output="boom")]
    chunks = _chunks(to_ai_sdk(events))
    assert chunks[1] == {"type": "tool-output-available", "toolCallId": "c1", "output": {"rows": list(range(500))}}
    assert chunks[2]["output"] == "plain text"
    assert chunks[3] == {"type": "tool-output-error", "toolCallId": "c3", "errorText": "boom"}
    ag = _chunks(to_ag_ui(events, thread_id="t", run_id="r"))
    assert ag[1]["content"] == big


def test_a_paused_turn_sends_one_approval_request_per_call_and_an_interrupt_per_call():
    paused = [ToolCallEnd("c1", "send", '{"to": "a"}'), ToolCallEnd("c2", "send", '{"to": "b"}'),
              ApprovalRequired([ToolApprovalRequest("c1", "send", {"to": "a"}),
                                ToolApprovalRequest("c2", "send", {"to": "b"})])]
    ai = _chunks(to_ai_sdk(paused))
    requests = [c for c in ai if isinstance(c, dict) and c["type"] == "tool-approval-request"]
    assert requests == [{"type": "tool-approval-request", "approvalId": "c1", "toolCallId": "c1"},
                        {"type": "tool-approval-request", "approvalId": "c2", "toolCallId": "c2"}]
    ag = _chunks(to_ag_ui(paused, thread_id="t", run_id="r"))
    interrupts = ag[-1]["outcome"]["interrupts"]
    assert [(i["id"], i["toolCallId"]) for i in interrupts] == [("c1", "c1"), ("c2", "c2")]


def test_a_resumed_ai_sdk_stream_omits_the_message_id():
    assert _chunks(to_ai_sdk([]))[0] == {"type": "start"}
    assert _chunks(to_ai_sdk([], message_id="m1"))[0] == {"type": "start", "messageId": "m1"}


def test_a_text_block_left_open_is_closed_before_the_finish():
    chunks = _chunks(to_ai_sdk([ContentBlockStart(0, "text"), TextDelta("a")]))
    assert [c if isinstance(c, str) else c["type"] for c in chunks][-3:] == ["text-end", "finish", "[DONE]"]
    ag = _chunks(to_ag_ui([ContentBlockStart(0, "text"), TextDelta("a"), ContentBlockEnd(0)],
                          thread_id="t", run_id="r"))
    assert [c["type"] for c in ag][-2:] == ["TEXT_MESSAGE_END", "RUN_FINISHED"]


def test_from_ai_sdk_reads_files_as_images_and_documents_and_skips_parts_it_has_no_block_for():
    messages = [{"id": "u", "role": "user", "parts": [
        {"type": "text", "text": "look"},
        {"type": "file", "mediaType": "image/png", "url": f"data:image/png;base64,{PNG}"},
        {"type": "file", "mediaType": "text/plain", "url": "data:text/plain;base64,"
         + base64.b64encode("héllo".encode()).decode()},
        {"type": "source-url", "sourceId": "s", "url": "https://example.com"},
        {"type": "data-weather", "data": {"t": 3}},
    ]}]
    [message] = from_ai_sdk({"messages": messages})
    assert message.role is Role.USER
    text, image, document = message.content
    assert text == TextBlock("look")
    assert isinstance(image, ImageBlock) and image.data == PNG
    assert isinstance(document, DocumentBlock) and document.text == "héllo"


@pytest.mark.parametrize(("body", "field"), [
    ({"nothing": 1}, "messages"),
    ({"messages": "hi"}, "messages"),
    ({"messages": [{"role": "robot", "parts": []}]}, "messages[0].role"),
    ({"messages": [{"role": "user", "parts": {}}]}, "messages[0].parts"),
    ({"messages": [{"role": "user", "parts": [{"type": "text", "text": 5}]}]}, "messages[0].parts[0].text"),
    ({"messages": [{"role": "user", "parts": [{"type": "file", "mediaType": "audio/wav", "url": "data:,"}]}]},
     "messages[0].parts[0].mediaType"),
    ({"messages": [{"role": "user", "parts": [{"type": "tool-x", "state": "output-available"}]}]},
     "messages[0].parts[0].toolCallId"),
])
def test_a_body_that_is_not_a_ui_message_list_is_a_400_error_naming_the_field(body, field):
    with pytest.raises(UiRequestError) as caught:
        from_ai_sdk(body)
    assert caught.value.field == field
    assert isinstance(caught.value, ValueError)
    assert "\n" not in str(caught.value)


def test_a_huge_data_url_is_refused_by_the_image_size_limit():
    huge = "data:image/png;base64," + "A" * (30 * 1024 * 1024)
    with pytest.raises(UiRequestError) as caught:
        from_ai_sdk([{"role": "user", "parts": [{"type": "file", "mediaType": "image/png", "url": huge}]}])
    assert caught.value.field == "messages[0].parts[0].url"
    assert len(str(caught.value)) < 500


def test_ai_sdk_decisions_count_only_responded_approvals():
    parts = [
        {"type": "tool-send", "toolCallId": "c1", "state": "approval-responded", "input": {},
         "approval": {"id": "c1", "approved": True}},
        {"type": "tool-send", "toolCallId": "c2", "state": "approval-responded", "input": {},
         "approval": {"id": "c2", "approved": False, "reason": "not Ann"}},
        {"type": "tool-send", "toolCallId": "c3", "state": "approval-requested", "input": {},
         "approval": {"id": "c3"}},
    ]
    decisions = ai_sdk_decisions([{"id": "a", "role": "assistant", "parts": parts}])
    assert decisions == {"c1": Approve(), "c2": Deny("not Ann")}
    with pytest.raises(UiRequestError):
        ai_sdk_decisions([{"role": "assistant", "parts": [{**parts[0], "approval": {"id": "c1"}}]}])


def test_ag_ui_decisions_read_resume_entries_and_bad_ones_name_the_field():
    run_input = {"threadId": "t", "runId": "r", "messages": [], "resume": [
        {"interruptId": "c1", "status": "resolved", "payload": {"approved": True}},
        {"interruptId": "c2", "status": "resolved", "payload": False},
        {"interruptId": "c3", "status": "cancelled"},
    ]}
    assert ag_ui_decisions(run_input) == {"c1": Approve(), "c2": Deny("denied by the user"),
                                          "c3": Deny("cancelled by the user")}
    with pytest.raises(UiRequestError) as caught:
        ag_ui_decisions({**run_input, "resume": [{"interruptId": "c1", "status": "resolved", "payload": {}}]})
    assert caught.value.field == "RunAgentInput.resume[0].payload.approved"


@pytest.mark.parametrize(("run_input", "field"), [
    ([], "RunAgentInput"),
    ({"runId": "r", "messages": []}, "RunAgentInput.threadId"),
    ({"threadId": "t", "runId": "r"}, "RunAgentInput.messages"),
    ({"threadId": "t", "runId": "r", "messages": [{"role": "alien"}]}, "RunAgentInput.messages[0].role"),
    ({"threadId": "t", "runId": "r", "messages": [
        {"id": "a", "role": "assistant", "toolCalls": [{"id": "c", "function": {"name": "f", "arguments": "{"}}]}]},
     "RunAgentInput.messages[0].toolCalls[0].function.arguments"),
])
def test_a_body_that_is_not_a_run_agent_input_is_a_400_error_naming_the_field(run_input, field):
    with pytest.raises(UiRequestError) as caught:
        from_ag_ui(run_input)
    assert caught.value.field == field


def test_from_ag_ui_reads_image_parts_and_skips_reasoning_messages():
    run_input = {"threadId": "t", "runId": "r", "messages": [
        {"id": "u", "role": "user", "content": [{"type": "text", "text": "see"},
                                                {"type": "image", "source": {"type": "data", "value": PNG,
                                                                             "mimeType": "image/png"}}]},
        {"id": "x", "role": "reasoning", "content": "hmm"},
        {"id": "s", "role": "developer", "content": "be brief"},
    ]}
    user, system = from_ag_ui(run_input)
    assert isinstance(user.content[1], ImageBlock) and user.content[1].data == PNG
    assert system.role is Role.SYSTEM and system.text == "be brief"


def test_ui_request_errors_pickle():
    import pickle

    error = pickle.loads(pickle.dumps(UiRequestError("messages[0]", "must be a UIMessage object")))
    assert error.field == "messages[0]" and str(error) == "messages[0]: must be a UIMessage object"


def test_structured_output_reaches_the_ai_sdk_as_a_data_part_and_ag_ui_as_the_run_result():
    from agcore_sync.llm.events import MessageComplete
    from agcore_sync.llm.types import Message, MessageResponse, StopReason

    response = MessageResponse("r", "m", Message.assistant('{"city": "Paris"}'), StopReason.STOP,
                               output={"city": "Paris"})
    ai = _chunks(to_ai_sdk([MessageComplete(response)]))
    assert {"type": "data-output", "data": {"city": "Paris"}} in ai
    ag = _chunks(to_ag_ui([MessageComplete(response)], thread_id="t", run_id="r"))
    assert ag[-1]["result"] == {"city": "Paris"} and ag[-1]["outcome"] == {"type": "success"}


def test_a_sub_agents_tool_calls_become_tool_calls_named_by_their_path_and_its_text_stays_inside():
    from agcore_sync import SubagentEvent
    from agcore_sync.llm.events import ToolExecutionStarted

    started = SubagentEvent("a1", "mailer", SubagentEvent("m1", "sender", ToolExecutionStarted("send", "e1",
                                                                                               '{"to": "bob"}')))
    done = SubagentEvent("a1", "mailer", SubagentEvent("m1", "sender", ToolExecutionCompleted(
        "send", "e1", "ok", False, 0.1, output="ok")))
    text = SubagentEvent("a1", "mailer", TextDelta("inner words"))
    ai = _chunks(to_ai_sdk([started, started, text, done]))
    assert ai[1:-2] == [
        {"type": "tool-input-start", "toolCallId": "a1/m1/e1", "toolName": "send"},
        {"type": "tool-input-available", "toolCallId": "a1/m1/e1", "toolName": "send", "input": {"to": "bob"}},
        {"type": "tool-output-available", "toolCallId": "a1/m1/e1", "output": "ok"},
    ]
    ag = _chunks(to_ag_ui([started, text, done], thread_id="t", run_id="r"))
    assert [(e["type"], e.get("toolCallId")) for e in ag[1:-1]] == [
        ("TOOL_CALL_START", "a1/m1/e1"), ("TOOL_CALL_ARGS", "a1/m1/e1"), ("TOOL_CALL_END", "a1/m1/e1"),
        ("TOOL_CALL_RESULT", "a1/m1/e1")]
