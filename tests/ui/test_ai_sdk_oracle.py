"""The AI SDK stream, read by the ``ai`` package's own parser and message builder (Node).

Each test serves a scripted turn from a real Flask route and checks that
every chunk passes ``uiMessageChunkSchema``, that ``readUIMessageStream``
builds the message a browser would show, and that the message fed back
through :func:`from_ai_sdk` equals the session's history.
"""

from __future__ import annotations

import copy

from agcore_sync import AgentSession, MockProvider, ToolRegistry, tool
from agcore_sync.llm.types import Message, MessageResponse, StopReason, TextBlock, ThinkingBlock, Usage
from agcore_sync.ui import from_ai_sdk
from tests.support.ui_peers import ui_client


@tool
def multiply(a: int, b: int) -> dict:
    """Multiply two integers."""
    return {"product": a * b}


@tool(requires_approval=True)
def send_email(to: str) -> str:
    """Send an email (a human approves it first)."""
    return f"sent to {to}"


def _session(provider: MockProvider) -> AgentSession:
    registry = ToolRegistry()
    registry.register(multiply)
    registry.register(send_email)
    return AgentSession(provider, registry=registry)


def _user(text: str, message_id: str = "u1") -> dict:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}


def test_a_tool_turn_is_read_by_the_ai_package_and_comes_back_as_the_session_history(ui_server):
    provider = MockProvider([
        MockProvider.tool_calls(("multiply", {"a": 17, "b": 23}), ("multiply", {"a": 2, "b": 3}),
                                text="Let me compute."),
        MockProvider.text("17 * 23 = 391"),
    ])
    server = ui_server(lambda: _session(provider))
    body = {"id": "chat-1", "messages": [_user("What is 17 * 23?")], "trigger": "submit-message"}

    seen = ui_client("ai-sdk", server.url + "/ai-sdk", body)

    assert seen["status"] == 200
    assert seen["headers"]["x-vercel-ai-ui-message-stream"] == "v1"
    assert seen["invalid"] == [] and seen["errors"] == []
    types = [chunk["type"] for chunk in seen["chunks"]]
    assert types[0] == "start" and types[-1] == "finish"
    assert types.count("start-step") == 2 == types.count("finish-step")
    message = seen["message"]
    assert message["id"] == "msg-1" and message["role"] == "assistant"
    tools = [part for part in message["parts"] if part["type"] == "tool-multiply"]
    assert [(part["state"], part["input"], part["output"]) for part in tools] == [
        ("output-available", {"a": 17, "b": 23}, {"product": 391}),
        ("output-available", {"a": 2, "b": 3}, {"product": 6}),
    ]
    texts = [part["text"] for part in message["parts"] if part["type"] == "text"]
    assert texts == ["Let me compute.", "17 * 23 = 391"]
    assert message["metadata"]["usage"]["inputTokens"] > 0

    session = server.sessions["chat-1"]
    assert from_ai_sdk([_user("What is 17 * 23?"), message]) == session.messages()
    session.registry.close()


def test_a_paused_tool_is_approved_through_the_ai_package_and_the_turn_goes_on_in_the_same_message(ui_server):
    provider = MockProvider([MockProvider.tool_calls(("send_email", {"to": "ann@example.com"})),
                             MockProvider.text("Done.")])
    server = ui_server(lambda: _session(provider))
    user = _user("Email Ann")
    first = ui_client("ai-sdk", server.url + "/ai-sdk", {"id": "chat-2", "messages": [user]})
    assert first["invalid"] == [] and first["errors"] == []
    paused = first["message"]
    [part] = [part for part in paused["parts"] if part["type"] == "tool-send_email"]
    assert part["state"] == "approval-requested" and part["approval"]["id"] == part["toolCallId"]
    assert first["chunks"][-1] == {"type": "finish", "finishReason": "tool-calls",
                                   "messageMetadata": first["chunks"][-1]["messageMetadata"]}

    # What useChat's addToolApprovalResponse does to the part before it posts again.
    answered = copy.deepcopy(paused)
    for p in answered["parts"]:
        if p["type"] == "tool-send_email":
            p["state"] = "approval-responded"
            p["approval"] = {"id": p["approval"]["id"], "approved": True}
    second = ui_client("ai-sdk", server.url + "/ai-sdk", {"id": "chat-2", "messages": [user, answered]},
                       previous=answered)

    assert second["invalid"] == [] and second["errors"] == []
    assert "messageId" not in second["chunks"][0]
    message = second["message"]
    assert message["id"] == paused["id"]
    [part] = [part for part in message["parts"] if part["type"] == "tool-send_email"]
    assert part["state"] == "output-available" and part["output"] == "sent to ann@example.com"
    assert [p["text"] for p in message["parts"] if p["type"] == "text"] == ["Done."]
    session = server.sessions["chat-2"]
    assert from_ai_sdk([user, message]) == session.messages()
    session.registry.close()


def test_a_failing_turn_ends_with_an_error_chunk_then_a_valid_finish(ui_server):
    response = MessageResponse("r1", "mock-model", Message.assistant("partial answer that never"),
                               StopReason.STOP, Usage(5, 5))
    provider = MockProvider([MockProvider.failing_stream(response, after_events=4)])
    server = ui_server(lambda: _session(provider))

    seen = ui_client("ai-sdk", server.url + "/ai-sdk", {"id": "chat-3", "messages": [_user("hi")]})

    assert seen["invalid"] == []
    types = [chunk["type"] for chunk in seen["chunks"]]
    assert "error" in types
    assert types[types.index("error"):] == ["error", "finish-step", "finish"]
    assert seen["chunks"][-1]["finishReason"] == "error"
    server.sessions["chat-3"].registry.close()


def test_reasoning_reaches_the_ui_without_its_signature_and_structured_output_as_a_data_part(ui_server):
    thinking = MessageResponse(
        "r1", "mock-model",
        Message("assistant", (ThinkingBlock("Let me think.", signature="SECRET-SIG"), TextBlock('{"n": 3}'))),
        StopReason.STOP, Usage(5, 5))
    provider = MockProvider([thinking])
    server = ui_server(lambda: _session(provider))

    seen = ui_client("ai-sdk", server.url + "/ai-sdk", {"id": "chat-4", "messages": [_user("think")]})

    assert seen["invalid"] == [] and seen["errors"] == []
    assert "SECRET-SIG" not in str(seen)
    [reasoning] = [p for p in seen["message"]["parts"] if p["type"] == "reasoning"]
    assert reasoning["text"] == "Let me think."
    server.sessions["chat-4"].registry.close()


def test_a_sub_agents_paused_tool_shows_as_its_own_part_and_its_approval_resumes_both(ui_server):
    from agcore_sync import agent_tool

    inner_provider = MockProvider([MockProvider.tool_calls(("e1", "send_email", {"to": "ann@example.com"})),
                                   MockProvider.text("Sent.")])
    inner_registry = ToolRegistry()
    inner_registry.register(send_email)

    def mailer() -> AgentSession:
        return AgentSession(inner_provider, registry=inner_registry)

    parent_provider = MockProvider([MockProvider.tool_calls(("a1", "mailer", {"input": "email Ann"})),
                                    MockProvider.text("Done.")])

    def parent() -> AgentSession:
        registry = ToolRegistry()
        registry.register(agent_tool(mailer, name="mailer", description="Sends emails."))
        return AgentSession(parent_provider, registry=registry)

    server = ui_server(parent)
    user = _user("Email Ann")
    first = ui_client("ai-sdk", server.url + "/ai-sdk", {"id": "chat-5", "messages": [user]})
    assert first["invalid"] == [] and first["errors"] == []
    parts = {p["toolCallId"]: p for p in first["message"]["parts"] if p["type"].startswith("tool-")}
    assert parts["a1/e1"]["type"] == "tool-send_email" and parts["a1/e1"]["state"] == "approval-requested"
    assert parts["a1/e1"]["input"] == {"to": "ann@example.com"}

    answered = copy.deepcopy(first["message"])
    for p in answered["parts"]:
        if p.get("toolCallId") == "a1/e1":
            p.update(state="approval-responded", approval={"id": "a1/e1", "approved": True})
    second = ui_client("ai-sdk", server.url + "/ai-sdk", {"id": "chat-5", "messages": [user, answered]},
                       previous=answered)
    assert second["invalid"] == [] and second["errors"] == []
    parts = {p["toolCallId"]: p for p in second["message"]["parts"] if p["type"].startswith("tool-")}
    assert parts["a1/e1"]["state"] == "output-available" and parts["a1/e1"]["output"] == "sent to ann@example.com"
    assert parts["a1"]["state"] == "output-available" and parts["a1"]["output"] == "Sent."
    assert [p["text"] for p in second["message"]["parts"] if p["type"] == "text"] == ["Done."]
    server.sessions["chat-5"].registry.close()
    inner_registry.close()
