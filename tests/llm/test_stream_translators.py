"""The stream translators are pure: SSE events in, stream events out, no provider, no I/O.

These tests build the translators alone and feed them ``SseEvent`` values, as
the HTTP driver does; nothing here opens a socket or makes a provider.
"""

from __future__ import annotations

import inspect
import json
from typing import Any, Dict, List

import pytest

from agcore_sync._http.masking import Masker
from agcore_sync._http.sse import SseEvent
from agcore_sync.llm import _anthropic_stream, _openai_stream
from agcore_sync.llm._anthropic_stream import AnthropicStreamTranslator
from agcore_sync.llm._openai_stream import OpenAIStreamTranslator
from agcore_sync.llm.cost import Pricing
from agcore_sync.llm.errors import ResponseParseError, ServerError
from agcore_sync.llm.events import (
    ContentBlockEnd,
    ContentBlockStart,
    CostUpdate,
    MessageComplete,
    MessageStart,
    TextDelta,
)
from agcore_sync.llm.types import Usage

KEY = "sk-ant-api03-secret-0123456789"
PRICE = Pricing(input=3.0, output=15.0)


def event(data: Dict[str, Any], name: str = "message") -> SseEvent:
    return SseEvent(name, json.dumps(data))


def anthropic_translator() -> AnthropicStreamTranslator:
    return AnthropicStreamTranslator("claude-sonnet-4-5", pricing=PRICE, masker=Masker(KEY))


def feed_all(translator: Any, events: List[SseEvent]) -> List[Any]:
    out: List[Any] = []
    for item in events:
        out.extend(translator.feed(item))
    return out


MESSAGE_START = {"type": "message_start", "message": {
    "id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude-sonnet-4-5-20250929",
    "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 12, "output_tokens": 1}}}


def test_the_translators_take_no_provider_and_their_modules_import_no_http_client():
    for cls in (AnthropicStreamTranslator, OpenAIStreamTranslator):
        assert list(inspect.signature(cls).parameters) == ["model", "pricing", "masker"]
    for module in (_anthropic_stream, _openai_stream):
        source = inspect.getsource(module)
        assert "import requests" not in source and "_provider." not in source


def test_an_anthropic_stream_translates_and_sets_done_at_message_stop():
    translator = anthropic_translator()
    events = feed_all(translator, [
        event(MESSAGE_START, "message_start"),
        event({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        event({"type": "ping"}, "ping"),
        event({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}),
        event({"type": "content_block_stop", "index": 0}),
        event({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}}),
    ])
    assert not translator.done
    assert translator.unreported_usage() == Usage(prompt_tokens=12, completion_tokens=3)
    assert events == [MessageStart("msg_1", "claude-sonnet-4-5-20250929"), ContentBlockStart(0, "text"),
                      TextDelta("Hi"), ContentBlockEnd(0)]
    last = translator.feed(event({"type": "message_stop"}, "message_stop"))
    assert translator.done and translator.unreported_usage() is None
    usage = Usage(prompt_tokens=12, completion_tokens=3)
    assert last[0] == CostUpdate(usage, PRICE.cost(usage))
    assert isinstance(last[1], MessageComplete) and last[1].full_response.message.text == "Hi"


def test_an_anthropic_error_event_raises_its_typed_error_with_the_key_masked():
    translator = anthropic_translator()
    translator.feed(event(MESSAGE_START, "message_start"))
    with pytest.raises(ServerError) as info:
        translator.feed(event({"type": "error", "error": {"type": "overloaded_error",
                                                          "message": f"Overloaded (key {KEY})"}}, "error"))
    assert info.value.status_code == 529
    assert KEY not in str(info.value) and KEY not in json.dumps(info.value.body)
    assert "***" in str(info.value)


def test_an_anthropic_event_of_an_unknown_shape_is_a_parse_error_with_the_key_masked():
    translator = anthropic_translator()
    with pytest.raises(ResponseParseError) as info:
        translator.feed(event({"type": "message_start", "message": {"note": KEY}}, "message_start"))
    assert KEY not in json.dumps(info.value.body)


def test_an_openai_stream_translates_and_sets_done_at_the_done_marker():
    translator = OpenAIStreamTranslator("gpt-4o-mini", pricing=PRICE, masker=Masker("sk-test"))
    chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini-2024-07-18",
             "choices": [{"index": 0, "delta": {"content": "Hi"}, "logprobs": None, "finish_reason": None}]}
    usage_chunk = {**chunk, "choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 1}}
    events = feed_all(translator, [event(chunk), event(usage_chunk)])
    assert translator.unreported_usage() == Usage(prompt_tokens=4, completion_tokens=1)
    assert events == [MessageStart("chatcmpl-1", "gpt-4o-mini-2024-07-18"), ContentBlockStart(0, "text"),
                      TextDelta("Hi")]
    last = translator.feed(SseEvent("message", "[DONE]"))
    assert translator.done and translator.unreported_usage() is None
    assert last[0] == ContentBlockEnd(0)
    assert isinstance(last[1], CostUpdate) and isinstance(last[2], MessageComplete)


def test_an_openai_chunk_that_is_not_an_object_is_a_parse_error_with_the_key_masked():
    translator = OpenAIStreamTranslator("gpt-4o-mini", pricing=None, masker=Masker("sk-test-key"))
    with pytest.raises(ResponseParseError) as info:
        translator.feed(SseEvent("message", '["sk-test-key"]'))
    assert "sk-test-key" not in info.value.body
