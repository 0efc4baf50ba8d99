"""One conversation through OpenAI Chat, Anthropic and the Responses API, and back.

``session.provider = other`` switches from the next request on. Every request
body is checked: each provider sends what it can read, drops the others'
opaque blobs (Anthropic thinking signatures, Responses reasoning items), and
every tool call stays paired with its result whatever made its id.
"""

from __future__ import annotations

import json
from contextlib import ExitStack, closing

from agcore_sync import (
    AgentSession,
    AnthropicProvider,
    CycleConfig,
    Error,
    OpenAIProvider,
    OpenAIResponsesProvider,
    ThinkingBlock,
)
from agcore_sync.llm._responses_wire import reasoning_block
from agcore_sync.llm._thinking_origin import ANTHROPIC, OPENAI_RESPONSES, origin_of
from tests.support.responses_wire import reasoning_calls_stream, text_stream
from tests.support.wire import (
    MESSAGE_STOP,
    SIGNATURE,
    anthropic_sse,
    block_delta,
    block_start,
    block_stop,
    message_delta,
    message_start,
    openai_text_stream,
    openai_tool_call_stream,
)

ENCRYPTED = "gAAAAABpLx7Q-opaque-reasoning"


def _anthropic_thinking_call() -> bytes:
    return anthropic_sse(
        message_start(),
        block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        block_delta(0, {"type": "thinking_delta", "thinking": "Add them."}),
        block_delta(0, {"type": "signature_delta", "signature": SIGNATURE}),
        block_stop(0),
        block_start(1, {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "add", "input": {}}),
        block_delta(1, {"type": "input_json_delta", "partial_json": '{"a": 2, "b": 3}'}),
        block_stop(1),
        message_delta("tool_use", 30),
        MESSAGE_STOP,
    )


def _anthropic_text(text: str) -> bytes:
    return anthropic_sse(message_start(), block_start(0, {"type": "text", "text": ""}),
                         block_delta(0, {"type": "text_delta", "text": text}), block_stop(0),
                         message_delta("end_turn", 3), MESSAGE_STOP)


def _turn(session: AgentSession, text: str) -> None:
    events = list(session.submit_turn_stream(text))
    assert not [e for e in events if isinstance(e, Error)], events


def test_a_session_moves_between_chat_anthropic_and_responses_and_every_request_is_readable(
        stream_server, registry):
    server = stream_server
    stream_server.add_response(openai_tool_call_stream("chatcmpl-1", [("call_1", "add", {"a": 1, "b": 2})], (10, 5)))
    stream_server.add_response(openai_text_stream("chatcmpl-2", ["3"], (20, 1)))
    stream_server.add_response([_anthropic_thinking_call()])
    stream_server.add_response([_anthropic_text("5")])
    stream_server.add_response(
        reasoning_calls_stream("r1", "Sum again.", ENCRYPTED, [("call_r", "add", {"a": 5, "b": 5})]))
    stream_server.add_response(text_stream("r2", ["10"]))
    stream_server.add_response(openai_text_stream("chatcmpl-3", ["done"], (30, 1)))
    stream_server.add_response([_anthropic_text("ok")])

    with ExitStack() as stack:
        chat = stack.enter_context(closing(OpenAIProvider("gpt-4o-mini", api_key="", base_url=server.url + "/v1")))
        claude = stack.enter_context(closing(AnthropicProvider("claude-sonnet-4-5", api_key="", base_url=server.url)))
        responses = stack.enter_context(closing(
            OpenAIResponsesProvider("o4-mini", api_key="", base_url=server.url + "/v1")))
        session = AgentSession(chat, CycleConfig(model=None, retry=None), registry)
        _turn(session, "1+2?")
        session.provider = claude
        _turn(session, "2+3?")
        session.provider = responses
        _turn(session, "5+5?")
        # The reasoning item survives a save and a resume.
        restored = AgentSession.from_dict(json.loads(json.dumps(session.to_dict())), provider=chat, registry=registry)
        assert restored.messages() == session.messages()
        restored.provider = chat
        _turn(restored, "thanks")
        restored.provider = claude
        _turn(restored, "bye")

    paths = [r.path for r in server.requests]
    assert paths == ["/v1/chat/completions"] * 2 + ["/v1/messages"] * 2 + ["/v1/responses"] * 2 + [
        "/v1/chat/completions", "/v1/messages"]
    bodies = [r.json for r in server.requests]
    texts = [r.body.decode() for r in server.requests]

    # Anthropic reads Chat's call_ ids unchanged, paired with their results.
    claude_first = bodies[2]["messages"]
    assert {"type": "tool_use", "id": "call_1", "name": "add", "input": {"a": 1, "b": 2}} in claude_first[1]["content"]
    assert claude_first[2]["content"][0]["tool_use_id"] == "call_1"

    # Responses: no Anthropic signature, both foreign ids paired, then its own reasoning item byte-exact.
    first, second = bodies[4], bodies[5]
    assert SIGNATURE not in texts[4] and "reasoning" not in [i.get("type") for i in first["input"]]
    calls = {i["call_id"] for i in first["input"] if i.get("type") == "function_call"}
    outputs = {i["call_id"] for i in first["input"] if i.get("type") == "function_call_output"}
    assert calls == outputs == {"call_1", "toolu_01A09q90qw90lq917835lq9"}
    assert first["include"] == ["reasoning.encrypted_content"]
    reasoning = [i for i in second["input"] if i.get("type") == "reasoning"]
    assert reasoning == [{"id": "rs_r1", "type": "reasoning", "encrypted_content": ENCRYPTED,
                          "summary": [{"type": "summary_text", "text": "Sum again."}]}]
    position = second["input"].index(reasoning[0])
    assert second["input"][position + 1] == {"type": "function_call", "call_id": "call_r", "name": "add",
                                             "arguments": '{"a": 5, "b": 5}', "id": "fc_1"}

    # Back on Chat: no blob of anyone, every call answered.
    assert ENCRYPTED not in texts[6] and SIGNATURE not in texts[6]
    chat_calls = [c["id"] for m in bodies[6]["messages"] for c in m.get("tool_calls") or ()]
    chat_results = [m["tool_call_id"] for m in bodies[6]["messages"] if m["role"] == "tool"]
    assert chat_calls == chat_results == ["call_1", "toolu_01A09q90qw90lq917835lq9", "call_r"]

    # Back on Anthropic: its own signature goes back, the Responses item does not.
    assert ENCRYPTED not in texts[7]
    thinking = [b for m in bodies[7]["messages"] for b in m["content"] if isinstance(b, dict) and
                b.get("type") == "thinking"]
    assert thinking == [{"type": "thinking", "thinking": "Add them.", "signature": SIGNATURE}]
    assert not server.errors


def test_each_thinking_block_knows_which_provider_made_its_blob():
    assert origin_of(ThinkingBlock("t", SIGNATURE)) == ANTHROPIC
    assert origin_of(ThinkingBlock("", None, "redacted-bytes")) == ANTHROPIC
    assert origin_of(ThinkingBlock("plain reasoning_content")) is None
    block = reasoning_block({"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "E"}, "fc_1")
    assert origin_of(block) == OPENAI_RESPONSES
    assert ThinkingBlock.from_dict(block.to_dict()) == block  # to_dict keeps its old shape
    assert set(block.to_dict()) == {"type", "text", "signature", "redacted_data"}


def test_an_id_anthropic_would_refuse_maps_to_one_safe_id_in_the_call_and_in_its_result():
    from agcore_sync import Message, ToolUseBlock
    from agcore_sync.llm.anthropic import _messages_to_wire

    odd = "functions.add:0"  # as some OpenAI-compatible servers name their calls
    _, wire = _messages_to_wire((Message("assistant", [ToolUseBlock(odd, "add", {"a": 1})]),
                                 Message.tool_result(odd, "1"), Message.tool_result("toolu_01AbC", "2")))
    use_id = wire[0]["content"][0]["id"]
    assert use_id == wire[1]["content"][0]["tool_use_id"]
    assert use_id != odd and all(c.isalnum() or c in "_-" for c in use_id) and len(use_id) <= 64
    assert wire[1]["content"][1]["tool_use_id"] == "toolu_01AbC"  # a safe id is sent as it is
