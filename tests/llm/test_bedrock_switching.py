"""Bedrock in a tool loop and in a session that moves between all four providers.

Request bodies are checked: round 2 of a Bedrock tool loop carries round 1's
toolUse and reasoning signature unchanged with the tool's result; when the
session moves on, each provider sends the reasoning it can read (Bedrock its
``reasoningContent``, Anthropic its signed thinking, Responses its
reasoning item) and drops the others', and every tool call stays paired
with its result.
"""

from __future__ import annotations

from contextlib import ExitStack, closing

import pytest

from agcore_sync import (
    AgentSession,
    AnthropicProvider,
    BedrockProvider,
    CycleConfig,
    Error,
    OpenAIProvider,
    OpenAIResponsesProvider,
)
from agcore_sync.llm._thinking_origin import BEDROCK, origin_of
from agcore_sync.llm.types import ThinkingBlock
from tests.support import bedrock_wire as bw
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

CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
BEDROCK_SIG = "EqoBCkgIBxABGAIiQBedrockSignatureOfRound1xQ=="
ENCRYPTED = "gAAAAABpLx7Q-opaque-reasoning"


@pytest.fixture
def aws(monkeypatch, tmp_path):
    bw.isolate_aws(monkeypatch, tmp_path)


def _bedrock_reasoning_call(call_id: str, a: int, b: int) -> list:
    return [bw.message_start(), bw.reasoning_delta(0, text="Use the "), bw.reasoning_delta(0, text="add tool."),
            bw.reasoning_delta(0, signature=BEDROCK_SIG), bw.block_stop(0),
            bw.tool_start(1, call_id, "add"), bw.tool_delta(1, f'{{"a": {a}, '), bw.tool_delta(1, f'"b": {b}}}'),
            bw.block_stop(1), bw.message_stop("tool_use"), bw.metadata(40, 25)]


def _turn(session: AgentSession, text: str) -> None:
    events = list(session.submit_turn_stream(text))
    assert not [e for e in events if isinstance(e, Error)], events


def test_round_two_carries_round_ones_tool_use_and_reasoning_signature_unchanged(aws, stream_server, registry):
    stream_server.add_response(_bedrock_reasoning_call("tooluse_R1abc", 2, 3), headers=bw.STREAM_HEADERS)
    stream_server.add_response(bw.text_stream(["It is 5."]), headers=bw.STREAM_HEADERS)
    with closing(BedrockProvider(CLAUDE, base_url=stream_server.url)) as provider:
        session = AgentSession(provider, CycleConfig(model=None, retry=None, thinking=2048), registry)
        _turn(session, "2+3?")
    first, second = (r.json for r in stream_server.requests)
    assert first["additionalModelRequestFields"] == {"thinking": {"type": "enabled", "budget_tokens": 2048}}
    assert second["messages"][:1] == first["messages"]
    assert second["messages"][1] == {"role": "assistant", "content": [
        {"reasoningContent": {"reasoningText": {"text": "Use the add tool.", "signature": BEDROCK_SIG}}},
        {"toolUse": {"toolUseId": "tooluse_R1abc", "name": "add", "input": {"a": 2, "b": 3}}},
    ]}
    assert second["messages"][2] == {"role": "user", "content": [
        {"toolResult": {"toolUseId": "tooluse_R1abc", "content": [{"text": "5"}], "status": "success"}}]}
    thinking = [b for m in session.messages() for b in m.content if isinstance(b, ThinkingBlock)]
    assert [origin_of(b) for b in thinking] == [BEDROCK]


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


def test_a_session_moves_between_bedrock_and_the_other_three_providers(aws, stream_server, registry):
    server = stream_server
    server.add_response(_bedrock_reasoning_call("tooluse_B1", 1, 2), headers=bw.STREAM_HEADERS)
    server.add_response(bw.text_stream(["3"]), headers=bw.STREAM_HEADERS)
    server.add_response([_anthropic_thinking_call()])
    server.add_response([_anthropic_text("5")])
    server.add_response(reasoning_calls_stream("r1", "Sum again.", ENCRYPTED, [("call_r", "add", {"a": 5, "b": 5})]))
    server.add_response(text_stream("r2", ["10"]))
    server.add_response(openai_tool_call_stream("chatcmpl-1", [("call_c", "add", {"a": 1, "b": 1})], (10, 5)))
    server.add_response(openai_text_stream("chatcmpl-2", ["2"], (20, 1)))
    server.add_response(bw.text_stream(["bye"]), headers=bw.STREAM_HEADERS)
    with ExitStack() as stack:
        bedrock = stack.enter_context(closing(BedrockProvider(CLAUDE, base_url=server.url)))
        claude = stack.enter_context(closing(AnthropicProvider("claude-sonnet-4-5", api_key="", base_url=server.url)))
        responses = stack.enter_context(closing(
            OpenAIResponsesProvider("o4-mini", api_key="", base_url=server.url + "/v1")))
        chat = stack.enter_context(closing(OpenAIProvider("gpt-4o-mini", api_key="", base_url=server.url + "/v1")))
        session = AgentSession(bedrock, CycleConfig(model=None, retry=None), registry)
        _turn(session, "1+2?")
        session.provider = claude
        _turn(session, "2+3?")
        session.provider = responses
        _turn(session, "5+5?")
        session.provider = chat
        _turn(session, "1+1?")
        session.provider = bedrock
        _turn(session, "thanks")

    assert [r.path.rsplit("/", 1)[-1] for r in server.requests] == [
        "converse-stream", "converse-stream", "messages", "messages", "responses", "responses",
        "completions", "completions", "converse-stream"]
    bodies = [r.json for r in server.requests]
    texts = [r.body.decode() for r in server.requests]

    # Anthropic: Bedrock's reasoning dropped, its call paired with its result.
    assert BEDROCK_SIG not in texts[2]
    claude_messages = bodies[2]["messages"]
    assert {"type": "tool_use", "id": "tooluse_B1", "name": "add", "input": {"a": 1, "b": 2}} in \
        claude_messages[1]["content"]
    assert claude_messages[2]["content"][0]["tool_use_id"] == "tooluse_B1"
    assert all(b.get("type") != "thinking" for b in claude_messages[1]["content"])

    # Responses and Chat: no Bedrock or Anthropic blob.
    for index in (4, 6):
        assert BEDROCK_SIG not in texts[index] and SIGNATURE not in texts[index]
    assert ENCRYPTED not in texts[6]

    # Back on Bedrock: its own reasoning goes back, the others' do not; every call paired.
    final = bodies[8]
    assert SIGNATURE not in texts[8] and ENCRYPTED not in texts[8]
    reasoning = [b["reasoningContent"] for m in final["messages"] for b in m["content"] if "reasoningContent" in b]
    assert reasoning == [{"reasoningText": {"text": "Use the add tool.", "signature": BEDROCK_SIG}}]
    uses = [b["toolUse"]["toolUseId"] for m in final["messages"] for b in m["content"] if "toolUse" in b]
    results = [b["toolResult"]["toolUseId"] for m in final["messages"] for b in m["content"] if "toolResult" in b]
    assert uses == results == ["tooluse_B1", "toolu_01A09q90qw90lq917835lq9", "call_r", "call_c"]
    assert [m["role"] for m in final["messages"]] == ["user", "assistant"] * (len(final["messages"]) // 2) + (
        ["user"] if len(final["messages"]) % 2 else [])
    assert not server.errors


def test_usage_limits_count_bedrock_cache_tokens_as_input_and_stop_the_tool_loop(aws, stream_server, registry):
    from agcore_sync import UsageLimitExceeded, UsageLimits

    # 10 + 900 read + 100 written = 1010 input tokens.
    answer = bw.converse_response([{"toolUse": {"toolUseId": "tooluse_L1", "name": "add", "input": {"a": 1, "b": 1}}}],
                                  "tool_use", (10, 25), cache_read=900, cache_write=100)
    stream_server.add_response([bw.json_body(answer)], headers=bw.JSON_HEADERS)
    with closing(BedrockProvider(CLAUDE, base_url=stream_server.url)) as provider:
        session = AgentSession(provider, CycleConfig(model=None, retry=None,
                                                     usage_limits=UsageLimits(max_input_tokens=1000)), registry)
        with pytest.raises(UsageLimitExceeded) as caught:
            session.submit_turn("1+1?")
    assert caught.value.limit == "max_input_tokens"
    assert caught.value.usage.input_tokens == 1010
    assert len(stream_server.requests) == 1
