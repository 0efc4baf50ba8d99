"""Gemini in tool loops, structured output modes, and a session that moves between all the providers.

The two-round loop proves the ``thoughtSignature`` contract: round 2's
request carries round 1's call with its signature unchanged, and the
tool's result. The switching test checks every request body: each
provider gets what it can read, Gemini's thoughts and signatures go back
only to Gemini (also after a save and a resume), and every call stays
paired with its result whatever made its id.
"""

from __future__ import annotations

import json
from contextlib import ExitStack, closing

import pytest

from agcore_sync import (
    AgentSession,
    AnthropicProvider,
    CycleConfig,
    Error,
    GeminiProvider,
    OpenAIProvider,
    OpenAIResponsesProvider,
)
from agcore_sync.llm._thinking_origin import GEMINI, origin_of
from agcore_sync.llm.types import ThinkingBlock
from tests.support.gemini import gemini_chunk, gemini_sse, gemini_usage
from tests.support.responses_wire import text_stream
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

GEMINI_SIGNATURE = "CiQBcsjafK7Q2r0p3n9k1w+/x8Yb3Lz0aQw5mTn6e0Rz4oJ2K1c="
MODEL = "gemini-2.5-flash"


def _thinking_call(a: int, b: int) -> bytes:
    return gemini_sse(
        gemini_chunk([{"text": "**Adding**\n\nI should call add.", "thought": True}]),
        gemini_chunk([{"functionCall": {"name": "add", "args": {"a": a, "b": b}},
                       "thoughtSignature": GEMINI_SIGNATURE}], "STOP",
                     usage=gemini_usage(40, 8, thoughtsTokenCount=30)),
    )


def _text(text: str) -> bytes:
    return gemini_sse(gemini_chunk([{"text": text}], "STOP", usage=gemini_usage(60, 2)))


def _turn(session: AgentSession, text: str) -> None:
    events = list(session.submit_turn_stream(text))
    assert not [e for e in events if isinstance(e, Error)], events


def test_round_two_carries_round_ones_call_with_its_signature_unchanged_and_the_tool_result(
        stream_server, registry):
    stream_server.add_response([_thinking_call(2, 3)])
    stream_server.add_response([_text("5")])
    with closing(GeminiProvider(MODEL, api_key="test-key", base_url=stream_server.url)) as provider:
        session = AgentSession(provider, CycleConfig(model=None, retry=None), registry)
        _turn(session, "2+3?")
    first, second = [r.json for r in stream_server.requests]
    assert first["contents"] == [{"role": "user", "parts": [{"text": "2+3?"}]}]
    assert second["contents"][1:] == [
        {"role": "model", "parts": [
            {"text": "**Adding**\n\nI should call add.", "thought": True},
            {"functionCall": {"name": "add", "args": {"a": 2, "b": 3}}, "thoughtSignature": GEMINI_SIGNATURE},
        ]},
        {"role": "user", "parts": [{"functionResponse": {"name": "add", "response": {"output": "5"}}}]},
    ]
    assert session.messages()[-1].text == "5"
    assert stream_server.requests[1].headers["x-goog-api-key"] == "test-key"
    assert not stream_server.errors


def test_a_session_moves_between_gemini_and_the_three_other_providers_and_every_request_is_readable(
        stream_server, registry):
    server = stream_server
    server.add_response(openai_tool_call_stream("chatcmpl-1", [("call_1", "add", {"a": 1, "b": 2})], (10, 5)))
    server.add_response(openai_text_stream("chatcmpl-2", ["3"], (20, 1)))
    server.add_response([_thinking_call(2, 3)])                      # Gemini
    server.add_response([_text("5")])
    server.add_response([anthropic_sse(                              # Anthropic, with its own signature
        message_start(),
        block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        block_delta(0, {"type": "thinking_delta", "thinking": "Fine."}),
        block_delta(0, {"type": "signature_delta", "signature": SIGNATURE}),
        block_stop(0),
        block_start(1, {"type": "text", "text": ""}),
        block_delta(1, {"type": "text_delta", "text": "ok"}),
        block_stop(1),
        message_delta("end_turn", 3), MESSAGE_STOP)])
    server.add_response(text_stream("r1", ["fine"]))                 # Responses
    server.add_response([_text("bye")])                              # Gemini again, after a resume

    with ExitStack() as stack:
        chat = stack.enter_context(closing(OpenAIProvider("gpt-4o-mini", api_key="", base_url=server.url + "/v1")))
        gemini = stack.enter_context(closing(GeminiProvider(MODEL, api_key="test-key", base_url=server.url)))
        claude = stack.enter_context(closing(AnthropicProvider("claude-sonnet-4-5", api_key="", base_url=server.url)))
        responses = stack.enter_context(closing(
            OpenAIResponsesProvider("o4-mini", api_key="", base_url=server.url + "/v1")))
        session = AgentSession(chat, CycleConfig(model=None, retry=None), registry)
        _turn(session, "1+2?")
        session.provider = gemini
        _turn(session, "2+3?")
        session.provider = claude
        _turn(session, "thanks")
        session.provider = responses
        _turn(session, "again")
        restored = AgentSession.from_dict(json.loads(json.dumps(session.to_dict())), provider=gemini,
                                          registry=registry)
        assert restored.messages() == session.messages()
        _turn(restored, "bye")

    bodies = [r.json for r in server.requests]
    texts = [r.body.decode() for r in server.requests]
    assert [r.path.split("/")[-1] for r in server.requests] == [
        "completions", "completions", f"{MODEL}:streamGenerateContent?alt=sse",
        f"{MODEL}:streamGenerateContent?alt=sse", "messages", "responses", f"{MODEL}:streamGenerateContent?alt=sse"]

    # Gemini reads Chat's call: its id goes along (not one Gemini made up), paired with the result by name and id.
    gemini_first = bodies[2]["contents"]
    assert gemini_first[1] == {"role": "model", "parts": [
        {"functionCall": {"name": "add", "args": {"a": 1, "b": 2}, "id": "call_1"}}]}
    assert gemini_first[2]["parts"][0] == {"functionResponse": {"name": "add", "response": {"output": "3"},
                                                                "id": "call_1"}}
    assert gemini_first[3] == {"role": "model", "parts": [{"text": "3"}]}

    # Anthropic: Gemini's thought and signature are dropped; the call Gemini made is paired with its result.
    assert GEMINI_SIGNATURE not in texts[4] and "I should call add" not in texts[4]
    uses = [b for m in bodies[4]["messages"] for b in m["content"] if b.get("type") == "tool_use"]
    results = [b for m in bodies[4]["messages"] for b in m["content"] if b.get("type") == "tool_result"]
    assert [u["id"] for u in uses] == [r["tool_use_id"] for r in results]
    assert uses[1]["id"].startswith("gcall_") and uses[1]["input"] == {"a": 2, "b": 3}

    # Responses: no blob of Gemini or Anthropic.
    assert GEMINI_SIGNATURE not in texts[5] and SIGNATURE not in texts[5]

    # Back on Gemini after a resume: its own thought and signature byte-exact, Anthropic's dropped,
    # the id it did not give left out.
    assert SIGNATURE not in texts[6]
    model_parts = [p for c in bodies[6]["contents"] if c["role"] == "model" for p in c["parts"]]
    assert {"text": "**Adding**\n\nI should call add.", "thought": True} in model_parts
    assert {"functionCall": {"name": "add", "args": {"a": 2, "b": 3}},
            "thoughtSignature": GEMINI_SIGNATURE} in model_parts
    assert "Fine." not in texts[6]
    assert not server.errors


def test_geminis_reasoning_blocks_are_marked_as_geminis():
    from agcore_sync.llm._gemini_wire import part_signature_envelope, thought_envelope

    assert origin_of(ThinkingBlock("", part_signature_envelope(GEMINI_SIGNATURE))) == GEMINI
    block = ThinkingBlock("t", thought_envelope({"thought": True}))
    assert origin_of(block) == GEMINI
    assert ThinkingBlock.from_dict(block.to_dict()) == block


@pytest.mark.parametrize("mode", ["native", "tool", "prompted"])
def test_structured_output_works_in_each_mode_and_sends_what_the_mode_says(stream_server, mode):
    import attrs

    @attrs.frozen
    class City:
        name: str
        population: int

    answer = {"name": "Oslo", "population": 709037}
    if mode == "tool":
        parts = [{"functionCall": {"name": "final_result", "args": answer}}]
    else:
        parts = [{"text": json.dumps(answer)[:9]}, {"text": json.dumps(answer)[9:]}]
    stream_server.add_response([gemini_sse(gemini_chunk(parts[:1]), gemini_chunk(parts[1:], "STOP"))])
    with closing(GeminiProvider(MODEL, api_key="test-key", base_url=stream_server.url)) as provider:
        with AgentSession(provider, CycleConfig(model=None, retry=None, output_mode=mode)) as session:
            with session.submit_turn_stream("Largest city of Norway?", output=City) as stream:
                list(stream)
            result = stream.final_response.output
    assert result == City("Oslo", 709037)
    body = stream_server.requests[0].json
    config = body.get("generationConfig", {})
    if mode == "native":
        assert config["responseMimeType"] == "application/json"
        assert config["responseJsonSchema"]["required"] == ["name", "population"]
    else:
        assert "responseJsonSchema" not in config
    if mode == "tool":
        assert body["tools"][0]["functionDeclarations"][0]["name"] == "final_result"
        assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames":
                                                                ["final_result"]}}
    if mode == "prompted":
        assert "JSON Schema" in body["systemInstruction"]["parts"][0]["text"]
