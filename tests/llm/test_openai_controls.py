"""OpenAIProvider: structured output, images and PDFs, reasoning_effort and extra_body on the Chat Completions wire.

Payloads follow OpenAI's documented shapes (Chat Completions reference,
"Structured Outputs" with its refusal example, "Images and vision", "File
inputs"); every request the provider sends is read back from the mock.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Dict

import pytest
import responses

from agcore_sync.llm.errors import OutputRefusedError, OutputValidationError
from agcore_sync.llm.events import MessageComplete
from agcore_sync.llm.media import DocumentBlock, ImageBlock
from agcore_sync.llm.openai import OpenAIProvider
from agcore_sync.llm.output import OutputSchema, openai_response_format
from agcore_sync.llm.types import Message, MessageRequest, TextBlock
from agcore_sync.loop.cycle import CycleConfig, LlmCycle
from agcore_sync.tools.function import tool
from agcore_sync.tools.registry import ToolRegistry

URL = "https://api.openai.com/v1/chat/completions"
MODEL = "gpt-4o-2024-08-06"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(24)


@dataclasses.dataclass
class City:
    """A city."""

    name: str
    population: int


def completion(message: Dict[str, Any], finish_reason: str = "stop") -> Dict[str, Any]:
    return {
        "id": "chatcmpl-9nYAG9LPNonX8DAyrkwYfemr3C8HC", "object": "chat.completion", "created": 1721596428,
        "model": MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "refusal": None, **message}, "logprobs": None,
                     "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 81, "completion_tokens": 11, "total_tokens": 92},
        "system_fingerprint": "fp_3407719c7f",
    }


@pytest.fixture
def api():
    with responses.RequestsMock() as rsps:
        yield rsps


@pytest.fixture
def provider():
    p = OpenAIProvider(MODEL, api_key="sk-test-0123456789abcdef")
    yield p
    p.close()


def sent(api, i: int = 0) -> Dict[str, Any]:
    return json.loads(api.calls[i].request.body)


def answer(api, message, **kwargs):
    api.add(responses.POST, URL, json=completion(message, **kwargs))


# -- structured output --------------------------------------------------------------


def test_native_output_sends_response_format_json_schema_strict_and_returns_the_instance(api, provider):
    answer(api, {"content": '{"name":"Lyon","population":522250}'})
    response = LlmCycle(provider).submit("Which city?", output=City)
    assert response.output == City("Lyon", 522250)
    wire = sent(api)
    assert wire["response_format"] == openai_response_format(OutputSchema.of(City))
    assert wire["response_format"]["json_schema"]["strict"] is True
    assert wire["response_format"]["json_schema"]["name"] == "City"


def test_the_documented_refusal_raises_output_refused_error_at_once(api, provider):
    answer(api, {"content": None, "refusal": "I'm sorry, I cannot assist with that request."})
    with pytest.raises(OutputRefusedError) as info:
        LlmCycle(provider, CycleConfig(output_retries=3)).submit("Which city?", output=City)
    assert info.value.refusal == "I'm sorry, I cannot assist with that request."
    assert len(api.calls) == 1


def test_an_invalid_answer_is_sent_back_as_a_user_message_then_raises_after_the_retries(api, provider):
    answer(api, {"content": '{"name":"Lyon"}'})
    answer(api, {"content": '{"name":"Lyon","population":"x"}'})
    with pytest.raises(OutputValidationError) as info:
        LlmCycle(provider).submit("Which city?", output=City)
    second = sent(api, 1)["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert "$: 'population' is a required property" in second[2]["content"]
    assert info.value.raw == '{"name":"Lyon","population":"x"}'


def test_tool_mode_sends_the_output_tool_with_a_forced_function_choice(api, provider):
    answer(api, {"content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {
        "name": "final_result", "arguments": '{"name":"Lyon","population":4}'}}]}, finish_reason="tool_calls")
    response = LlmCycle(provider, CycleConfig(output_mode="tool")).submit("Which city?", output=City)
    assert response.output == City("Lyon", 4)
    wire = sent(api)
    assert wire["tool_choice"] == {"type": "function", "function": {"name": "final_result"}}
    assert "response_format" not in wire


def test_prompted_mode_sends_neither_response_format_nor_tools(api, provider):
    answer(api, {"content": '{"name":"Lyon","population":5}'})
    LlmCycle(provider, CycleConfig(output_mode="prompted")).submit("Which city?", output=City)
    wire = sent(api)
    assert "response_format" not in wire and "tools" not in wire
    assert wire["messages"][0]["role"] == "system" and "JSON Schema" in wire["messages"][0]["content"]


def test_a_streamed_answer_carries_the_output_on_its_message_complete(api, provider):
    chunks = [
        {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": MODEL,
         "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]},
        {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": MODEL,
         "choices": [{"index": 0, "delta": {"content": '{"name":"Lyon",'}, "finish_reason": None}]},
        {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": MODEL,
         "choices": [{"index": 0, "delta": {"content": '"population":6}'}, "finish_reason": None}]},
        {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": MODEL,
         "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": MODEL, "choices": [],
         "usage": {"prompt_tokens": 9, "completion_tokens": 6, "total_tokens": 15}},
    ]
    raw = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    api.add(responses.POST, URL, body=raw.encode(), content_type="text/event-stream")
    events = list(LlmCycle(provider).submit_stream("Which city?", output=City))
    assert [e for e in events if isinstance(e, MessageComplete)][-1].full_response.output == City("Lyon", 6)
    assert "response_format" in sent(api)


# -- request controls ---------------------------------------------------------------


def test_reasoning_effort_is_sent_and_thinking_and_prompt_cache_are_ignored(api, provider):
    answer(api, {"content": "ok"})
    provider.chat(MessageRequest(None, [Message.user("q")], reasoning_effort="high", thinking=2048,
                                 prompt_cache=True, max_tokens=4096))
    wire = sent(api)
    assert wire["reasoning_effort"] == "high"
    assert not {"thinking", "cache_control", "prompt_cache_key"} & set(wire)


def test_extra_body_is_merged_last_and_carries_prompt_cache_key(api, provider):
    answer(api, {"content": "ok"})
    LlmCycle(provider, CycleConfig(extra_body={"prompt_cache_key": "user-42", "temperature": 0.0},
                                   temperature=0.9)).submit("q")
    wire = sent(api)
    assert wire["prompt_cache_key"] == "user-42" and wire["temperature"] == 0.0


# -- images and documents -------------------------------------------------------------


def test_a_user_message_with_media_sends_content_parts(api, provider):
    answer(api, {"content": "a cat"})
    image = ImageBlock.from_bytes(PNG, "image/png")
    pdf = DocumentBlock.from_bytes(b"%PDF-1.4 tiny", "application/pdf")
    provider.chat(MessageRequest(None, [Message.user("Describe", image, ImageBlock.from_url("https://x.test/a.png"),
                                                     pdf)]))
    parts = sent(api)["messages"][0]["content"]
    assert parts[0] == {"type": "text", "text": "Describe"}
    assert parts[1] == {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{image.data}"}}
    assert parts[2] == {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}}
    assert parts[3]["type"] == "file" and parts[3]["file"]["file_data"].startswith("data:application/pdf;base64,")


def test_a_text_only_user_message_still_sends_a_string(api, provider):
    answer(api, {"content": "ok"})
    provider.chat(MessageRequest(None, [Message.user("plain")]))
    assert sent(api)["messages"][0] == {"role": "user", "content": "plain"}


def test_tool_result_images_follow_the_round_s_tool_messages_in_a_user_message(api, provider):
    @tool
    def snapshot() -> Any:
        """Take a picture."""
        return [TextBlock("the garden"), ImageBlock.from_bytes(PNG, "image/png")]

    @tool
    def clock() -> str:
        """Tell the time."""
        return "noon"

    calls = [{"id": "call_a", "type": "function", "function": {"name": "snapshot", "arguments": "{}"}},
             {"id": "call_b", "type": "function", "function": {"name": "clock", "arguments": ""}}]
    answer(api, {"content": None, "tool_calls": calls}, finish_reason="tool_calls")
    answer(api, {"content": "A sunny garden at noon."})
    with ToolRegistry() as registry:
        registry.register(snapshot)
        registry.register(clock)
        LlmCycle(provider).submit_with_tools("What is outside?", registry)
    messages = sent(api, 1)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "user"]
    assert messages[2] == {"role": "tool", "tool_call_id": "call_a", "content": "the garden"}
    assert messages[3] == {"role": "tool", "tool_call_id": "call_b", "content": "noon"}
    images = messages[4]["content"]
    assert images[0] == {"type": "text", "text": "The tool call call_a returned:"}
    assert images[1]["type"] == "image_url" and images[1]["image_url"]["url"].startswith("data:image/png;base64,")
