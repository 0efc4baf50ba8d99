"""Tool calls without a usable id get a unique one, used by every event and block after.

Some OpenAI-compatible servers send tool calls with no ``id`` or with ``""``
(and a few repeat one). Each such call gets ``call_<24 hex>`` (OpenAI) or
``toolu_<24 hex>`` (Anthropic) when the response is parsed, streamed or not,
so results go back under ids the model can tell apart. Payloads are shaped
like the documented ones, minus the id the servers in question leave out.
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List

import pytest
import responses

from agcore_sync.llm.anthropic import AnthropicProvider
from agcore_sync.llm.events import (
    ContentBlockStart,
    MessageComplete,
    ToolCallArgumentsDelta,
    ToolCallEnd,
)
from agcore_sync.llm.openai import OpenAIProvider
from agcore_sync.llm.types import Message, MessageRequest, ToolUseBlock
from agcore_sync.loop.cycle import CycleConfig, LlmCycle
from agcore_sync.tools.function import tool
from agcore_sync.tools.registry import ToolRegistry

OPENAI_URL = "https://api.openai.com/v1/chat/completions"
ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"
OPENAI_ID = re.compile(r"^call_[0-9a-f]{24}$")
ANTHROPIC_ID = re.compile(r"^toolu_[0-9a-f]{24}$")


@pytest.fixture
def api():
    with responses.RequestsMock() as mock:
        yield mock


@pytest.fixture
def openai():
    provider = OpenAIProvider(model="gpt-4o-mini", api_key="sk-test")
    yield provider
    provider.close()


@pytest.fixture
def anthropic():
    provider = AnthropicProvider(model="claude-sonnet-4-5", api_key="sk-ant-test")
    yield provider
    provider.close()


def ask() -> MessageRequest:
    return MessageRequest(model=None, messages=(Message.user("What time is it in Paris and Tokyo?"),))


def ids_everywhere(events: List[Any]) -> List[List[str]]:
    """Per tool call (in block order): the ids its start, deltas, end and block carry."""
    starts = [e for e in events if isinstance(e, ContentBlockStart) and e.block_type == "tool_use"]
    ends = [e for e in events if isinstance(e, ToolCallEnd)]
    blocks = events[-1].full_response.message.tool_uses
    assert len(starts) == len(ends) == len(blocks)
    out = []
    for start, end, block in zip(starts, ends, blocks):
        deltas = {e.tool_call_id for e in events if isinstance(e, ToolCallArgumentsDelta) and e.index == start.index}
        out.append([start.tool_call_id, *sorted(deltas), end.tool_call_id, block.id])
    return out


# -- OpenAI --------------------------------------------------------------------


def _openai_chunk(delta: Dict[str, Any], finish_reason: Any = None) -> Dict[str, Any]:
    return {"id": "chatcmpl-123", "object": "chat.completion.chunk", "created": 1694268190,
            "model": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_44709d6fcb",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
            "usage": None}


def _openai_sse(*deltas: Dict[str, Any]) -> bytes:
    chunks = [_openai_chunk(d) for d in deltas] + [_openai_chunk({}, "tool_calls")]
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def _openai_start(index: int, name: str, **id_field: Any) -> Dict[str, Any]:
    call = {"index": index, **id_field, "type": "function", "function": {"name": name, "arguments": ""}}
    return {"tool_calls": [call]}


def _openai_args(index: int, arguments: str) -> Dict[str, Any]:
    return {"tool_calls": [{"index": index, "function": {"arguments": arguments}}]}


def test_openai_streamed_calls_without_ids_get_distinct_ids_used_by_every_event_and_block(api, openai):
    api.post(OPENAI_URL, body=_openai_sse(
        {"role": "assistant", "content": None, **_openai_start(0, "get_time")},  # no "id" key at all
        _openai_args(0, '{"city": "Paris"}'),
        _openai_start(1, "get_time", id=""),  # an empty id
        _openai_args(1, '{"city": "Tokyo"}'),
    ), content_type="text/event-stream")
    events = list(openai.chat_stream(ask()))

    first, second = ids_everywhere(events)
    assert len(set(first)) == 1 and len(set(second)) == 1  # one id per call, in every place
    assert OPENAI_ID.match(first[0]) and OPENAI_ID.match(second[0])
    assert first[0] != second[0]
    assert events[-1].full_response.message.tool_uses == (
        ToolUseBlock(first[0], "get_time", {"city": "Paris"}),
        ToolUseBlock(second[0], "get_time", {"city": "Tokyo"}),
    )


def test_openai_streamed_ids_the_server_gave_are_kept_and_a_repeated_one_is_replaced(api, openai):
    api.post(OPENAI_URL, body=_openai_sse(
        {"role": "assistant", "content": None, **_openai_start(0, "get_time", id="call_abc")},
        _openai_start(1, "get_time", id="call_abc"),
    ), content_type="text/event-stream")
    events = list(openai.chat_stream(ask()))
    first, second = ids_everywhere(events)
    assert set(first) == {"call_abc"}
    assert len(set(second)) == 1 and OPENAI_ID.match(second[0])


def _openai_completion(tool_calls: List[Dict[str, Any]]) -> Dict[str, Any]:
    return {"id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT", "object": "chat.completion", "created": 1741569952,
            "model": "gpt-4o-mini-2024-07-18",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": None, "refusal": None,
                                                 "annotations": [], "tool_calls": tool_calls},
                         "logprobs": None, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 19, "completion_tokens": 10, "total_tokens": 29}}


def _openai_call(city: str, **id_field: Any) -> Dict[str, Any]:
    return {**id_field, "type": "function", "function": {"name": "get_time", "arguments": json.dumps({"city": city})}}


def test_openai_plain_calls_without_ids_get_distinct_ids(api, openai):
    api.post(OPENAI_URL, json=_openai_completion([
        _openai_call("Paris"), _openai_call("Tokyo", id=""), _openai_call("Lima", id="call_kept"),
        _openai_call("Oslo", id="call_kept")]))
    calls = openai.chat(ask()).message.tool_uses
    assert [c.input["city"] for c in calls] == ["Paris", "Tokyo", "Lima", "Oslo"]
    assert calls[2].id == "call_kept"
    assert all(OPENAI_ID.match(c.id) for c in (calls[0], calls[1], calls[3]))
    assert len({c.id for c in calls}) == 4


def test_generated_ids_differ_from_one_response_to_the_next(api, openai):
    for _ in range(2):
        api.post(OPENAI_URL, json=_openai_completion([_openai_call("Paris")]))
    assert openai.chat(ask()).message.tool_uses[0].id != openai.chat(ask()).message.tool_uses[0].id


@tool
def get_time(city: str) -> str:
    """Tell the time in a city.

    Args:
        city: the city.
    """
    return f"12:00 in {city}"


def test_a_tool_loop_sends_each_result_back_under_its_calls_generated_id(api, openai):
    api.post(OPENAI_URL, json=_openai_completion([_openai_call("Paris"), _openai_call("Tokyo", id="")]))
    final = {"id": "chatcmpl-2", "object": "chat.completion", "created": 1741569953, "model": "gpt-4o-mini",
             "choices": [{"index": 0, "message": {"role": "assistant", "content": "Noon in both.", "refusal": None},
                          "logprobs": None, "finish_reason": "stop"}],
             "usage": {"prompt_tokens": 40, "completion_tokens": 5, "total_tokens": 45}}
    api.post(OPENAI_URL, json=final)
    with ToolRegistry() as registry:
        registry.register(get_time)
        response = LlmCycle(openai, CycleConfig(model="gpt-4o-mini", retry=None)).submit_with_tools(
            "What time is it in Paris and Tokyo?", registry)
    assert response.message.text == "Noon in both."

    sent = json.loads(api.calls[1].request.body)["messages"]
    assistant = next(m for m in sent if m["role"] == "assistant")
    call_ids = [c["id"] for c in assistant["tool_calls"]]
    results = [m for m in sent if m["role"] == "tool"]
    assert [r["tool_call_id"] for r in results] == call_ids
    assert len(set(call_ids)) == 2 and all(OPENAI_ID.match(i) for i in call_ids)
    assert [r["content"] for r in results] == ["12:00 in Paris", "12:00 in Tokyo"]


# -- Anthropic -----------------------------------------------------------------


def _anthropic(name: str, data: Dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def _anthropic_stream(*blocks: Dict[str, Any]) -> bytes:
    parts = [_anthropic("message_start", {"type": "message_start", "message": {
        "id": "msg_014p7gG3wDgGV9EUtLvnow3U", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "stop_sequence": None, "usage": {"input_tokens": 472, "output_tokens": 2}, "content": [],
        "stop_reason": None}})]
    for index, block in enumerate(blocks):
        arguments = json.dumps(block.pop("arguments"))
        parts.append(_anthropic("content_block_start", {"type": "content_block_start", "index": index,
                                                        "content_block": {**block, "input": {}}}))
        parts.append(_anthropic("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {
            "type": "input_json_delta", "partial_json": arguments}}))
        parts.append(_anthropic("content_block_stop", {"type": "content_block_stop", "index": index}))
    parts.append(_anthropic("message_delta", {"type": "message_delta", "delta": {
        "stop_reason": "tool_use", "stop_sequence": None}, "usage": {"output_tokens": 89}}))
    parts.append(_anthropic("message_stop", {"type": "message_stop"}))
    return b"".join(parts)


def test_anthropic_streamed_tool_use_blocks_without_ids_get_distinct_ids(api, anthropic):
    api.post(ANTHROPIC_URL, body=_anthropic_stream(
        {"type": "tool_use", "name": "get_time", "arguments": {"city": "Paris"}},
        {"type": "tool_use", "id": "", "name": "get_time", "arguments": {"city": "Tokyo"}},
        {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_time",
         "arguments": {"city": "Lima"}},
    ), content_type="text/event-stream")
    events = list(anthropic.chat_stream(ask()))
    first, second, third = ids_everywhere(events)
    assert len(set(first)) == 1 and len(set(second)) == 1
    assert ANTHROPIC_ID.match(first[0]) and ANTHROPIC_ID.match(second[0]) and first[0] != second[0]
    assert set(third) == {"toolu_01A09q90qw90lq917835lq9"}
    assert isinstance(events[-1], MessageComplete)


def test_anthropic_plain_tool_use_blocks_without_ids_get_distinct_ids(api, anthropic):
    api.post(ANTHROPIC_URL, json={
        "id": "msg_01Aq9w938a90dw8q", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "tool_use", "name": "get_time", "input": {"city": "Paris"}},
                    {"type": "tool_use", "id": "", "name": "get_time", "input": {"city": "Tokyo"}}],
        "stop_reason": "tool_use", "stop_sequence": None, "usage": {"input_tokens": 472, "output_tokens": 89}})
    first, second = anthropic.chat(ask()).message.tool_uses
    assert ANTHROPIC_ID.match(first.id) and ANTHROPIC_ID.match(second.id) and first.id != second.id
