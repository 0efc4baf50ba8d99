"""One session through all five providers, Gemini and Bedrock back to back, checked request by request.

The chain is Chat -> Gemini -> Bedrock -> Gemini -> (save, resume) ->
Bedrock -> Anthropic -> Responses -> Gemini -> Chat -> Bedrock, with tool
calls in most rounds and reasoning in the Gemini, Bedrock, Anthropic and
Responses rounds. Every request body the target receives is checked: tool
calls and results are translated and stay paired whatever made their ids,
each provider's own reasoning goes back to it unchanged (Gemini's thought
parts and ``thoughtSignature``, Bedrock's signed and redacted
``reasoningContent``, Anthropic's signed thinking, the Responses reasoning
item), and no provider receives another's opaque reasoning.
"""

from __future__ import annotations

import json
from contextlib import ExitStack, closing
from typing import Any, Dict, List

import pytest

from agcore_sync import (
    AgentSession,
    AnthropicProvider,
    BedrockProvider,
    CycleConfig,
    Error,
    GeminiProvider,
    OpenAIProvider,
    OpenAIResponsesProvider,
)
from tests.support import bedrock_wire as bw
from tests.support.gemini import gemini_chunk, gemini_sse, gemini_usage
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
    openai_chunk,
    openai_text_stream,
    openai_tool_call_stream,
    sse_data,
)

GEMINI_MODEL = "gemini-2.5-flash"
GEMINI_PATH = f"{GEMINI_MODEL}:streamGenerateContent?alt=sse"
CLAUDE_ON_BEDROCK = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
GEMINI_SIGNATURE = "CiQBcsjafK7Q2r0p3n9k1w+/x8Yb3Lz0aQw5mTn6e0Rz4oJ2K1c="
GEMINI_THOUGHT = "**Adding**\n\nI should call add."
BEDROCK_SIGNATURE = "EqoBCkgIBxABGAIiQBedrockSignatureOfRound1xQ=="
BEDROCK_REDACTED = "RXFvQkNrZ0lCeEFCR0FJaVFCZWRyb2NrUmVkYWN0ZWQ="
ENCRYPTED = "gAAAAABpLx7Q-opaque-reasoning"


@pytest.fixture
def aws(monkeypatch, tmp_path):
    bw.isolate_aws(monkeypatch, tmp_path)


# -- answers, built with the shared wire builders -------------------------------


def _chat_blank_text_then_call() -> List[bytes]:
    # "\n\n" before the call, as some OpenAI-compatible servers send it: Gemini takes it, Converse would not.
    return [sse_data(openai_chunk({"role": "assistant", "content": "\n\n"}, id="chatcmpl-1")),
            *openai_tool_call_stream("chatcmpl-1", [("call_1", "add", {"a": 1, "b": 2})], (10, 5))]


def _gemini_thinking_call(a: int, b: int) -> List[bytes]:
    return [gemini_sse(
        gemini_chunk([{"text": GEMINI_THOUGHT, "thought": True}]),
        gemini_chunk([{"functionCall": {"name": "add", "args": {"a": a, "b": b}},
                       "thoughtSignature": GEMINI_SIGNATURE}], "STOP",
                     usage=gemini_usage(40, 8, thoughtsTokenCount=30)),
    )]


def _gemini_text(text: str) -> List[bytes]:
    return [gemini_sse(gemini_chunk([{"text": text}], "STOP", usage=gemini_usage(60, 2)))]


def _bedrock_reasoning_call(call_id: str, a: int, b: int) -> List[bytes]:
    return [bw.message_start(), bw.reasoning_delta(0, text="Use the "), bw.reasoning_delta(0, text="add tool."),
            bw.reasoning_delta(0, signature=BEDROCK_SIGNATURE), bw.block_stop(0),
            bw.tool_start(1, call_id, "add"), bw.tool_delta(1, f'{{"a": {a}, '), bw.tool_delta(1, f'"b": {b}}}'),
            bw.block_stop(1), bw.message_stop("tool_use"), bw.metadata(40, 25)]


def _bedrock_redacted_text(text: str) -> List[bytes]:
    return [bw.message_start(), bw.reasoning_delta(0, redacted=BEDROCK_REDACTED), bw.block_stop(0),
            bw.text_delta(1, text), bw.block_stop(1), bw.message_stop("end_turn"), bw.metadata(50, 10)]


def _anthropic_thinking_call() -> List[bytes]:
    return [anthropic_sse(
        message_start(),
        block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        block_delta(0, {"type": "thinking_delta", "thinking": "Add them."}),
        block_delta(0, {"type": "signature_delta", "signature": SIGNATURE}),
        block_stop(0),
        block_start(1, {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "add", "input": {}}),
        block_delta(1, {"type": "input_json_delta", "partial_json": '{"a": 4, "b": 4}'}),
        block_stop(1),
        message_delta("tool_use", 30),
        MESSAGE_STOP,
    )]


def _anthropic_text(text: str) -> List[bytes]:
    return [anthropic_sse(message_start(), block_start(0, {"type": "text", "text": ""}),
                          block_delta(0, {"type": "text_delta", "text": text}), block_stop(0),
                          message_delta("end_turn", 3), MESSAGE_STOP)]


def _turn(session: AgentSession, text: str) -> None:
    events = list(session.submit_turn_stream(text))
    assert not [e for e in events if isinstance(e, Error)], events


# -- readers of the request bodies ------------------------------------------------


def _gemini_parts(body: Dict[str, Any], role: str) -> List[Dict[str, Any]]:
    return [p for c in body["contents"] if c["role"] == role for p in c["parts"]]


def _has_run(parts: List[Dict[str, Any]], run: List[Dict[str, Any]]) -> bool:
    return any(parts[i:i + len(run)] == run for i in range(len(parts)))


def _gemini_pairs(body: Dict[str, Any]) -> List[Any]:
    calls = [(p["functionCall"]["name"], p["functionCall"].get("id")) for p in _gemini_parts(body, "model")
             if "functionCall" in p]
    results = [(p["functionResponse"]["name"], p["functionResponse"].get("id"))
               for p in _gemini_parts(body, "user") if "functionResponse" in p]
    assert calls == results
    return calls


def _bedrock_blocks(body: Dict[str, Any], key: str) -> List[Any]:
    return [b[key] for m in body["messages"] for b in m["content"] if key in b]


def _bedrock_pairs(body: Dict[str, Any]) -> List[str]:
    uses = [u["toolUseId"] for u in _bedrock_blocks(body, "toolUse")]
    results = [r["toolUseId"] for r in _bedrock_blocks(body, "toolResult")]
    assert uses == results
    blank = [b for m in body["messages"] for b in m["content"] if "text" in b and not b["text"].strip()]
    assert not blank, blank  # Converse refuses a blank text block
    roles = [m["role"] for m in body["messages"]]
    assert all(first != second for first, second in zip(roles, roles[1:])), roles  # Converse alternates
    return uses


def test_a_session_moves_through_all_five_providers_and_each_receives_only_what_it_can_read(
        aws, stream_server, registry):
    server = stream_server
    server.add_response(_chat_blank_text_then_call())
    server.add_response(openai_text_stream("chatcmpl-2", ["3"], (20, 1)))
    server.add_response(_gemini_thinking_call(2, 3))                                        # 2 Gemini
    server.add_response(_gemini_text("5"))
    server.add_response(_bedrock_reasoning_call("tooluse_B1", 3, 4), headers=bw.STREAM_HEADERS)  # 4 Bedrock
    server.add_response(bw.text_stream(["7"]), headers=bw.STREAM_HEADERS)
    server.add_response(_gemini_text("noted"))                                              # 6 Gemini
    server.add_response(_bedrock_redacted_text("ok"), headers=bw.STREAM_HEADERS)            # 7 Bedrock, resumed
    server.add_response(_anthropic_thinking_call())                                         # 8 Anthropic
    server.add_response(_anthropic_text("8"))
    server.add_response(reasoning_calls_stream("r1", "Sum again.", ENCRYPTED,               # 10 Responses
                                               [("call_r", "add", {"a": 5, "b": 5})]))
    server.add_response(text_stream("r2", ["10"]))
    server.add_response(_gemini_text("fine"))                                               # 12 Gemini
    server.add_response(openai_text_stream("chatcmpl-3", ["done"], (30, 1)))                # 13 Chat
    server.add_response(bw.text_stream(["bye"]), headers=bw.STREAM_HEADERS)                 # 14 Bedrock

    with ExitStack() as stack:
        chat = stack.enter_context(closing(OpenAIProvider("gpt-4o-mini", api_key="", base_url=server.url + "/v1")))
        gemini = stack.enter_context(closing(GeminiProvider(GEMINI_MODEL, api_key="test-key", base_url=server.url)))
        bedrock = stack.enter_context(closing(BedrockProvider(CLAUDE_ON_BEDROCK, base_url=server.url)))
        claude = stack.enter_context(closing(AnthropicProvider("claude-sonnet-4-5", api_key="", base_url=server.url)))
        responses = stack.enter_context(closing(
            OpenAIResponsesProvider("o4-mini", api_key="", base_url=server.url + "/v1")))
        session = AgentSession(chat, CycleConfig(model=None, retry=None, thinking=2048), registry)
        _turn(session, "1+2?")
        session.provider = gemini
        _turn(session, "2+3?")
        session.provider = bedrock
        _turn(session, "3+4?")
        session.provider = gemini
        _turn(session, "thanks")
        saved = json.loads(json.dumps(session.to_dict()))
        session = AgentSession.from_dict(saved, provider=bedrock, registry=registry)
        assert session.to_dict() == saved
        _turn(session, "still there?")
        session.provider = claude
        _turn(session, "4+4?")
        session.provider = responses
        _turn(session, "5+5?")
        session.provider = gemini
        _turn(session, "again")
        session.provider = chat
        _turn(session, "and now?")
        session.provider = bedrock
        _turn(session, "bye")
        assert session.messages()[-1].text == "bye"

    assert [r.path.rsplit("/", 1)[-1] for r in server.requests] == [
        "completions", "completions", GEMINI_PATH, GEMINI_PATH, "converse-stream", "converse-stream", GEMINI_PATH,
        "converse-stream", "messages", "messages", "responses", "responses", GEMINI_PATH, "completions",
        "converse-stream"]
    assert not server.errors
    bodies = [r.json for r in server.requests]
    texts = [r.body.decode() for r in server.requests]
    own_gemini_parts = [{"text": GEMINI_THOUGHT, "thought": True},
                        {"functionCall": {"name": "add", "args": {"a": 2, "b": 3}},
                         "thoughtSignature": GEMINI_SIGNATURE}]
    own_bedrock_reasoning = [{"reasoningText": {"text": "Use the add tool.", "signature": BEDROCK_SIGNATURE}},
                             {"redactedContent": BEDROCK_REDACTED}]

    # 2: Chat -> Gemini. Chat's call keeps its id and is paired with its result.
    assert bodies[2]["contents"][1] == {"role": "model", "parts": [
        {"text": "\n\n"}, {"functionCall": {"name": "add", "args": {"a": 1, "b": 2}, "id": "call_1"}}]}
    assert _gemini_pairs(bodies[2]) == [("add", "call_1")]
    assert bodies[2]["generationConfig"]["thinkingConfig"] == {"includeThoughts": True, "thinkingBudget": 2048}
    # 3: Gemini's round two carries its own thought and signed call unchanged; the id it did not give stays out.
    assert _gemini_parts(bodies[3], "model")[-2:] == own_gemini_parts
    assert _gemini_pairs(bodies[3]) == [("add", "call_1"), ("add", None)]
    gemini_call_id = bodies[4]["messages"][5]["content"][0]["toolUse"]["toolUseId"]

    # 4: Gemini -> Bedrock. Gemini's thought and signature dropped, its call (an id this library made) paired.
    for index in (4, 5):
        assert GEMINI_SIGNATURE not in texts[index] and "I should call add" not in texts[index]
        assert "agcore_origin" not in texts[index]
    assert bodies[4]["messages"][5] == {"role": "assistant", "content": [
        {"toolUse": {"toolUseId": gemini_call_id, "name": "add", "input": {"a": 2, "b": 3}}}]}
    assert gemini_call_id.startswith("gcall_")
    assert _bedrock_pairs(bodies[4]) == ["call_1", gemini_call_id]
    assert bodies[4]["additionalModelRequestFields"] == {"thinking": {"type": "enabled", "budget_tokens": 2048}}
    # 5: Bedrock's round two carries its own reasoning with its signature, then its call.
    assert _bedrock_blocks(bodies[5], "reasoningContent") == own_bedrock_reasoning[:1]
    assert bodies[5]["messages"][-2]["content"][:2] == [
        {"reasoningContent": own_bedrock_reasoning[0]},
        {"toolUse": {"toolUseId": "tooluse_B1", "name": "add", "input": {"a": 3, "b": 4}}}]
    assert _bedrock_pairs(bodies[5]) == ["call_1", gemini_call_id, "tooluse_B1"]

    # 6: Bedrock -> Gemini. Bedrock's reasoning dropped, its call sent with its id; Gemini's own parts unchanged.
    assert BEDROCK_SIGNATURE not in texts[6] and "Use the add tool." not in texts[6]
    assert "agcore_origin" not in texts[6]
    assert _has_run(_gemini_parts(bodies[6], "model"), own_gemini_parts)
    assert {"functionCall": {"name": "add", "args": {"a": 3, "b": 4}, "id": "tooluse_B1"}} in \
        _gemini_parts(bodies[6], "model")
    assert _gemini_pairs(bodies[6]) == [("add", "call_1"), ("add", None), ("add", "tooluse_B1")]

    # 7: Gemini -> Bedrock after a save and a resume: Bedrock's own signed reasoning back, Gemini's not.
    assert GEMINI_SIGNATURE not in texts[7] and "I should call add" not in texts[7]
    assert _bedrock_blocks(bodies[7], "reasoningContent") == own_bedrock_reasoning[:1]
    assert _bedrock_pairs(bodies[7]) == ["call_1", gemini_call_id, "tooluse_B1"]

    # 8, 9: Bedrock -> Anthropic. No Bedrock or Gemini blob, signed or redacted; Anthropic's own thinking back.
    for index in (8, 9):
        for blob in (BEDROCK_SIGNATURE, BEDROCK_REDACTED, GEMINI_SIGNATURE, "agcore_origin"):
            assert blob not in texts[index], (index, blob)
    uses = [b["id"] for m in bodies[9]["messages"] for b in m["content"] if b.get("type") == "tool_use"]
    results = [b["tool_use_id"] for m in bodies[9]["messages"] for b in m["content"] if b.get("type") == "tool_result"]
    assert uses == results == ["call_1", gemini_call_id, "tooluse_B1", "toolu_01A09q90qw90lq917835lq9"]
    blank = [b for m in bodies[9]["messages"] for b in m["content"]
             if b.get("type") == "text" and not b["text"].strip()]
    assert blank == []  # Anthropic refuses whitespace-only text ("\n\n" from Chat before its call)
    thinking = [b for m in bodies[9]["messages"] for b in m["content"] if b.get("type") in ("thinking",
                                                                                          "redacted_thinking")]
    assert thinking == [{"type": "thinking", "thinking": "Add them.", "signature": SIGNATURE}]

    # 10, 11: Anthropic -> Responses. Only its own reasoning item, every call paired.
    for index in (10, 11):
        for blob in (BEDROCK_SIGNATURE, BEDROCK_REDACTED, GEMINI_SIGNATURE, SIGNATURE, "agcore_origin"):
            assert blob not in texts[index], (index, blob)
    calls = [i["call_id"] for i in bodies[11]["input"] if i.get("type") == "function_call"]
    outputs = [i["call_id"] for i in bodies[11]["input"] if i.get("type") == "function_call_output"]
    assert calls == outputs == ["call_1", gemini_call_id, "tooluse_B1", "toolu_01A09q90qw90lq917835lq9", "call_r"]
    assert [i for i in bodies[11]["input"] if i.get("type") == "reasoning"] == [
        {"id": "rs_r1", "type": "reasoning", "encrypted_content": ENCRYPTED,
         "summary": [{"type": "summary_text", "text": "Sum again."}]}]

    # 12: Responses -> Gemini. Its own parts only.
    for blob in (BEDROCK_SIGNATURE, BEDROCK_REDACTED, SIGNATURE, ENCRYPTED, "agcore_origin"):
        assert blob not in texts[12], blob
    assert _has_run(_gemini_parts(bodies[12], "model"), own_gemini_parts)
    assert [p for p in _gemini_parts(bodies[12], "model") if "thoughtSignature" in p or p.get("thought")] == \
        own_gemini_parts
    assert _gemini_pairs(bodies[12]) == [("add", "call_1"), ("add", None), ("add", "tooluse_B1"),
                                         ("add", "toolu_01A09q90qw90lq917835lq9"), ("add", "call_r")]

    # 13: Gemini -> Chat. No opaque blob of anyone; every call answered.
    for blob in (BEDROCK_SIGNATURE, BEDROCK_REDACTED, GEMINI_SIGNATURE, SIGNATURE, ENCRYPTED, "agcore_origin"):
        assert blob not in texts[13], blob
    chat_calls = [c["id"] for m in bodies[13]["messages"] for c in m.get("tool_calls") or ()]
    chat_results = [m["tool_call_id"] for m in bodies[13]["messages"] if m["role"] == "tool"]
    assert chat_calls == chat_results == ["call_1", gemini_call_id, "tooluse_B1", "toolu_01A09q90qw90lq917835lq9",
                                          "call_r"]

    # 14: Chat -> Bedrock. Its own signed and redacted reasoning exactly, nobody else's.
    for blob in (GEMINI_SIGNATURE, SIGNATURE, ENCRYPTED, "I should call add", "Add them.", "Sum again."):
        assert blob not in texts[14], blob
    assert _bedrock_blocks(bodies[14], "reasoningContent") == own_bedrock_reasoning
    assert _bedrock_pairs(bodies[14]) == ["call_1", gemini_call_id, "tooluse_B1", "toolu_01A09q90qw90lq917835lq9",
                                          "call_r"]
