"""The AG-UI stream, run through ``@ag-ui/client``'s HttpAgent (Node).

HttpAgent parses the SSE, validates each event against ``@ag-ui/core``'s
schemas, checks the order with its event verifier and builds the
conversation; the tests check that conversation and feed it back through
:func:`from_ag_ui`.
"""

from __future__ import annotations

from agcore_sync import AgentSession, MockProvider, ToolRegistry, tool
from agcore_sync.llm.types import Message, MessageResponse, StopReason, TextBlock, ThinkingBlock, Usage
from agcore_sync.ui import from_ag_ui
from tests.support.ui_peers import ui_client


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


@tool(requires_approval=True)
def send_email(to: str) -> str:
    """Send an email (a human approves it first)."""
    return f"sent to {to}"


def _session(provider: MockProvider) -> AgentSession:
    registry = ToolRegistry()
    registry.register(multiply)
    registry.register(send_email)
    return AgentSession(provider, registry=registry)


def _input(thread: str, run: str, messages: list, **extra) -> dict:
    return {"threadId": thread, "runId": run, "messages": messages, "tools": [], "context": [], **extra}


USER = {"id": "u1", "role": "user", "content": "What is 17 * 23 and 2 * 3?"}


def test_a_tool_turn_passes_the_ag_ui_verifier_and_comes_back_as_the_session_history(ui_server):
    provider = MockProvider([
        MockProvider.tool_calls(("multiply", {"a": 17, "b": 23}), ("multiply", {"a": 2, "b": 3})),
        MockProvider.text("391 and 6"),
    ])
    server = ui_server(lambda: _session(provider))

    seen = ui_client("ag-ui", server.url + "/ag-ui", _input("t1", "run-1", [USER]))

    assert seen["errors"] == []
    types = [event["type"] for event in seen["events"]]
    assert types[0] == "RUN_STARTED" and types[-1] == "RUN_FINISHED"
    assert types.count("TOOL_CALL_RESULT") == 2
    roles = [(m["role"], m.get("content")) for m in seen["messages"]]
    assert roles[0] == ("user", USER["content"])
    assert [m["role"] for m in seen["messages"]] == ["user", "assistant", "tool", "tool", "assistant"]
    assert [call["function"]["name"] for call in seen["messages"][1]["toolCalls"]] == ["multiply", "multiply"]
    assert seen["messages"][-1]["content"] == "391 and 6"

    session = server.sessions["t1"]
    assert from_ag_ui(_input("t1", "run-1", seen["messages"])) == session.messages()
    session.registry.close()


def test_a_paused_turn_ends_its_run_with_an_interrupt_and_a_resume_run_finishes_it(ui_server):
    provider = MockProvider([MockProvider.tool_calls(("send_email", {"to": "ann@example.com"})),
                             MockProvider.text("Sent.")])
    server = ui_server(lambda: _session(provider))
    user = {"id": "u1", "role": "user", "content": "Email Ann"}

    first = ui_client("ag-ui", server.url + "/ag-ui", _input("t2", "run-1", [user]))

    assert first["errors"] == []
    finished = first["events"][-1]
    assert finished["type"] == "RUN_FINISHED" and finished["outcome"]["type"] == "interrupt"
    [interrupt] = finished["outcome"]["interrupts"]
    call_id = first["messages"][-1]["toolCalls"][0]["id"]
    assert interrupt["id"] == interrupt["toolCallId"] == call_id

    resume = [{"interruptId": call_id, "status": "resolved", "payload": {"approved": True}}]
    second = ui_client("ag-ui", server.url + "/ag-ui",
                       _input("t2", "run-2", first["messages"], resume=resume))

    assert second["errors"] == []
    assert second["events"][-1]["outcome"] == {"type": "success"}
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert second["messages"][2]["content"] == "sent to ann@example.com"
    session = server.sessions["t2"]
    assert from_ag_ui(_input("t2", "run-2", second["messages"])) == session.messages()
    session.registry.close()


def test_reasoning_is_sent_as_reasoning_messages_without_the_signature_and_a_failure_as_run_error(ui_server):
    thinking = MessageResponse(
        "r1", "mock-model",
        Message("assistant", (ThinkingBlock("Let me think.", signature="SECRET-SIG"), TextBlock("Three."))),
        StopReason.STOP, Usage(5, 5))
    broken = MessageResponse("r2", "mock-model", Message.assistant("never finished"), StopReason.STOP, Usage(1, 1))
    provider = MockProvider([thinking, MockProvider.failing_stream(broken, after_events=3)])
    server = ui_server(lambda: _session(provider))

    seen = ui_client("ag-ui", server.url + "/ag-ui", _input("t3", "run-1", [USER]))
    assert seen["errors"] == []
    types = [event["type"] for event in seen["events"]]
    assert "REASONING_MESSAGE_CONTENT" in types and not any(t.startswith("THINKING") for t in types)
    assert "SECRET-SIG" not in str(seen["events"])

    failed = ui_client("ag-ui", server.url + "/ag-ui", _input("t3", "run-2", seen["messages"]))
    assert failed["events"][-1]["type"] == "RUN_ERROR"
    server.sessions["t3"].registry.close()
