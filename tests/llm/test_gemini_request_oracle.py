"""google-genai as the oracle for GeminiProvider's request bodies and URLs.

For each conversation, our provider and google-genai (given the same
conversation as its own types) post to a local capture server; the bodies
must be equal as JSON once both use the API's JSON key names (google-genai
3.x sends a few nested objects under their protobuf names, which the API
reads too: see :mod:`tests.support.gemini`). The SDK is pinned to the API
versions DESIGN.md names (``v1beta`` for the Gemini API, ``v1`` for Vertex
AI), so the paths must be equal too.
"""

from __future__ import annotations

import base64
import json
from contextlib import closing
from typing import Any, Dict, Tuple

import pytest

from agcore_sync import GeminiProvider, Message, MessageRequest, ToolChoice, ToolDef
from agcore_sync.llm.media import DocumentBlock, ImageBlock
from agcore_sync.llm.output import OutputSchema
from agcore_sync.llm.types import TextBlock, ThinkingBlock, ToolUseBlock
from tests.support.gemini import camel_keys, gemini_chunk, sdk_client

genai = pytest.importorskip("google.genai")
types = pytest.importorskip("google.genai.types")

MODEL = "gemini-2.5-flash"
PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000")
PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"
SIGNATURE = base64.b64encode(b"\x12\x9a opaque signature bytes \x00\xff").decode()
WEATHER = ToolDef("get_weather", "Weather of a city",
                  {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
SDK_WEATHER = types.Tool(function_declarations=[types.FunctionDeclaration(
    name="get_weather", description="Weather of a city", parameters_json_schema=WEATHER.parameters)])


def _envelope_blocks() -> Tuple[Any, ...]:
    """An assistant turn as the provider reads it: a thought, a signed call, an unsigned parallel call."""
    from agcore_sync.llm._gemini_wire import part_signature_envelope, thought_envelope

    return (
        ThinkingBlock("**Planning**", thought_envelope({"thought": True})),
        ThinkingBlock("", part_signature_envelope(SIGNATURE)),
        ToolUseBlock("gcall_0123456789abcdef01234567", "get_weather", {"city": "Oslo"}),
        ToolUseBlock("fc_lima", "get_weather", {"city": "Lima"}),
    )


CASES: Dict[str, Tuple[Any, Any]] = {}


def case(name):
    def register(fn):
        CASES[name] = fn
        return fn
    return register


@case("plain_text")
def _plain():
    return (MessageRequest(None, [Message.user("Hello there")]),
            dict(contents="Hello there"))


@case("system_prompt_and_settings")
def _system():
    ours = MessageRequest(None, [Message.user("Hi")], system="Be brief.", max_tokens=300, temperature=0.2,
                          stop=["END"])
    config = types.GenerateContentConfig(system_instruction="Be brief.", max_output_tokens=300, temperature=0.2,
                                         stop_sequences=["END"])
    return ours, dict(contents="Hi", config=config)


@case("tools_and_forced_choice")
def _tools():
    ours = MessageRequest(None, [Message.user("Weather in Oslo?")], tools=[WEATHER],
                          tool_choice=ToolChoice.tool("get_weather"))
    config = types.GenerateContentConfig(tools=[SDK_WEATHER], tool_config=types.ToolConfig(
        function_calling_config=types.FunctionCallingConfig(mode="ANY", allowed_function_names=["get_weather"])))
    return ours, dict(contents="Weather in Oslo?", config=config)


@case("tool_choice_required_and_none")
def _required():
    ours = MessageRequest(None, [Message.user("Go")], tools=[WEATHER], tool_choice="required")
    config = types.GenerateContentConfig(tools=[SDK_WEATHER], tool_config=types.ToolConfig(
        function_calling_config=types.FunctionCallingConfig(mode="ANY")))
    return ours, dict(contents="Go", config=config)


@case("parallel_calls_thinking_and_tool_results")
def _tool_round():
    history = [
        Message.user("Weather in Oslo and Lima?"),
        Message("assistant", _envelope_blocks()),
        Message.tool_result("gcall_0123456789abcdef01234567", "12C"),
        Message.tool_result("fc_lima", "no such city", is_error=True),
    ]
    ours = MessageRequest(None, history, tools=[WEATHER], thinking=2048)
    contents = [
        types.Content(role="user", parts=[types.Part(text="Weather in Oslo and Lima?")]),
        types.Content(role="model", parts=[
            types.Part(text="**Planning**", thought=True),
            types.Part(function_call=types.FunctionCall(name="get_weather", args={"city": "Oslo"}),
                       thought_signature=base64.b64decode(SIGNATURE)),
            types.Part(function_call=types.FunctionCall(id="fc_lima", name="get_weather", args={"city": "Lima"})),
        ]),
        types.Content(role="user", parts=[
            types.Part(function_response=types.FunctionResponse(name="get_weather", response={"output": "12C"})),
            types.Part(function_response=types.FunctionResponse(id="fc_lima", name="get_weather",
                                                                response={"error": "no such city"})),
        ]),
    ]
    config = types.GenerateContentConfig(tools=[SDK_WEATHER], thinking_config=types.ThinkingConfig(
        include_thoughts=True, thinking_budget=2048))
    return ours, dict(contents=contents, config=config)


@case("adaptive_thinking_and_level")
def _adaptive():
    ours = MessageRequest(None, [Message.user("Think")], thinking="adaptive", reasoning_effort="low")
    config = types.GenerateContentConfig(thinking_config=types.ThinkingConfig(
        include_thoughts=True, thinking_budget=-1, thinking_level="LOW"))
    return ours, dict(contents="Think", config=config)


@case("structured_output")
def _structured():
    schema = OutputSchema({"type": "object", "properties": {"name": {"type": "string"},
                                                            "population": {"type": "integer"}},
                           "required": ["name", "population"], "additionalProperties": False}, name="City")
    ours = MessageRequest(None, [Message.user("Largest city of Norway?")], output=schema)
    config = types.GenerateContentConfig(response_mime_type="application/json",
                                         response_json_schema=schema.json_schema)
    return ours, dict(contents="Largest city of Norway?", config=config)


@case("images_and_pdf")
def _media():
    blocks = (TextBlock("Describe both."), ImageBlock.from_bytes(PNG, "image/png"),
              DocumentBlock.from_bytes(PDF, "application/pdf"),
              ImageBlock.from_url("https://example.com/cat.jpg"))
    ours = MessageRequest(None, [Message("user", blocks)])
    contents = [types.Content(role="user", parts=[
        types.Part(text="Describe both."),
        types.Part(inline_data=types.Blob(mime_type="image/png", data=PNG)),
        types.Part(inline_data=types.Blob(mime_type="application/pdf", data=PDF)),
        types.Part(file_data=types.FileData(mime_type="image/jpeg", file_uri="https://example.com/cat.jpg")),
    ])]
    return ours, dict(contents=contents)


@case("text_signature_and_multi_turn")
def _text_signature():
    from agcore_sync.llm._gemini_wire import part_signature_envelope, thought_envelope

    answer = Message("assistant", (ThinkingBlock("", part_signature_envelope(SIGNATURE)), TextBlock("Yes."),
                                   ThinkingBlock("", thought_envelope({"thoughtSignature": SIGNATURE}))))
    ours = MessageRequest(None, [Message.user("Sure?"), answer, Message.user("Why?")])
    contents = [
        types.Content(role="user", parts=[types.Part(text="Sure?")]),
        types.Content(role="model", parts=[
            types.Part(text="Yes.", thought_signature=base64.b64decode(SIGNATURE)),
            types.Part(text="", thought_signature=base64.b64decode(SIGNATURE))]),
        types.Content(role="user", parts=[types.Part(text="Why?")]),
    ]
    return ours, dict(contents=contents)


def _capture(stream_server, send) -> Any:
    body = json.dumps(gemini_chunk([{"text": "ok"}], "STOP")).encode()
    stream_server.add_response([body], headers={"Content-Type": "application/json"})
    send()
    return stream_server.requests[-1]


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_request_body_equals_what_google_genai_sends_for_the_same_conversation(name, stream_server):
    ours_request, sdk_kwargs = CASES[name]()
    client = sdk_client(stream_server.url)
    try:
        sdk = _capture(stream_server, lambda: client.models.generate_content(model=MODEL, **sdk_kwargs))
    finally:
        client.close()
    with closing(GeminiProvider(MODEL, api_key="test-key", base_url=stream_server.url)) as provider:
        got = _capture(stream_server, lambda: provider.chat(ours_request))
    assert got.json == camel_keys(sdk.json)
    assert got.json == camel_keys(got.json)  # we send the JSON names only
    assert got.path == sdk.path == f"/v1beta/models/{MODEL}:generateContent"
    assert got.headers["x-goog-api-key"] == sdk.headers["x-goog-api-key"] == "test-key"


def test_a_vertex_request_goes_where_google_genai_sends_it_with_the_same_body(stream_server):
    ours_request, sdk_kwargs = CASES["parallel_calls_thinking_and_tool_results"]()
    client = sdk_client(stream_server.url, vertex=True)
    try:
        sdk = _capture(stream_server, lambda: client.models.generate_content(model=MODEL, **sdk_kwargs))
    finally:
        client.close()
    with closing(GeminiProvider(MODEL, base_url=stream_server.url, vertex=True, project="test-project",
                                location="us-central1", credentials=lambda: "test-token")) as provider:
        got = _capture(stream_server, lambda: provider.chat(ours_request))
    path = f"/v1/projects/test-project/locations/us-central1/publishers/google/models/{MODEL}:generateContent"
    assert got.path == sdk.path == path
    assert got.json == camel_keys(sdk.json)
    assert got.headers["authorization"] == "Bearer test-token"
    assert "x-goog-api-key" not in got.headers


def test_a_vertex_stream_goes_to_the_sse_method_google_genai_uses(stream_server):
    client = sdk_client(stream_server.url, vertex=True)
    body = b"data: " + json.dumps(gemini_chunk([{"text": "ok"}], "STOP")).encode() + b"\r\n\r\n"
    stream_server.add_response([body])
    stream_server.add_response([body])
    try:
        list(client.models.generate_content_stream(model=MODEL, contents="hi"))
    finally:
        client.close()
    with closing(GeminiProvider(MODEL, base_url=stream_server.url, vertex=True, project="test-project",
                                location="us-central1", credentials=lambda: "test-token")) as provider:
        events = list(provider.chat_stream(MessageRequest(None, [Message.user("hi")])))
    sdk, got = stream_server.requests[-2], stream_server.requests[-1]
    assert got.path == sdk.path
    assert got.path.endswith(f"/models/{MODEL}:streamGenerateContent?alt=sse")
    assert got.json == camel_keys(sdk.json)
    assert events[-1].full_response.message.text == "ok"
