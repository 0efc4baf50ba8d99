"""A tool call with no arguments ends with ``"{}"``, so ``json.loads`` works on every ToolCallEnd.

Anthropic streams such a call as ``input: {}`` in ``content_block_start``
followed by no ``input_json_delta`` or by one with ``""``; OpenAI sends
``"arguments": ""``. Either way ``ToolCallEnd.arguments == "{}"`` and
``ToolUseBlock.input == {}``.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List

import pytest
import responses

from agcore_sync.llm.anthropic import AnthropicProvider
from agcore_sync.llm.events import ToolCallArgumentsDelta, ToolCallEnd
from agcore_sync.llm.openai import OpenAIProvider
from agcore_sync.llm.types import Message, MessageRequest, ToolUseBlock

OPENAI_URL = "https://api.openai.com/v1/chat/completions"
ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"


@pytest.fixture
def api():
    with responses.RequestsMock() as mock:
        yield mock


def ask() -> MessageRequest:
    return MessageRequest(model=None, messages=(Message.user("List the files."),))


def _anthropic(name: str, data: Dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def _anthropic_tool_stream(start_input: Dict[str, Any], partials: List[str]) -> bytes:
    parts = [
        _anthropic("message_start", {"type": "message_start", "message": {
            "id": "msg_014p7gG3wDgGV9EUtLvnow3U", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "stop_sequence": None, "usage": {"input_tokens": 50, "output_tokens": 1},
            "content": [], "stop_reason": None}}),
        _anthropic("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
            "type": "tool_use", "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "name": "list_files",
            "input": start_input}}),
        *(_anthropic("content_block_delta", {"type": "content_block_delta", "index": 0,
                                             "delta": {"type": "input_json_delta", "partial_json": p}})
          for p in partials),
        _anthropic("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _anthropic("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use",
                                                                         "stop_sequence": None},
                                     "usage": {"output_tokens": 20}}),
        _anthropic("message_stop", {"type": "message_stop"}),
    ]
    return b"".join(parts)


@pytest.mark.parametrize("partials", [[], [""], ["", ""]], ids=["no-delta", "one-empty-delta", "two-empty-deltas"])
def test_an_anthropic_call_with_no_arguments_ends_with_an_empty_json_object(api, partials):
    api.post(ANTHROPIC_URL, body=_anthropic_tool_stream({}, partials), content_type="text/event-stream")
    provider = AnthropicProvider(model="claude-sonnet-4-5", api_key="sk-ant-test")
    try:
        events = list(provider.chat_stream(ask()))
    finally:
        provider.close()
    [end] = [e for e in events if isinstance(e, ToolCallEnd)]
    assert end.arguments == "{}"
    assert json.loads(end.arguments) == {}
    assert not [e for e in events if isinstance(e, ToolCallArgumentsDelta)]
    assert events[-1].full_response.message.tool_uses == (
        ToolUseBlock("toolu_01T1x1fJ34qAmk2tNTrN7Up6", "list_files", {}),)


def test_an_anthropic_call_whose_input_came_whole_in_its_start_keeps_that_input(api):
    api.post(ANTHROPIC_URL, body=_anthropic_tool_stream({"path": "/tmp"}, []), content_type="text/event-stream")
    provider = AnthropicProvider(model="claude-sonnet-4-5", api_key="sk-ant-test")
    try:
        events = list(provider.chat_stream(ask()))
    finally:
        provider.close()
    [end] = [e for e in events if isinstance(e, ToolCallEnd)]
    assert json.loads(end.arguments) == {"path": "/tmp"}
    assert events[-1].full_response.message.tool_uses[0].input == {"path": "/tmp"}


def _openai_chunk(delta: Dict[str, Any], finish_reason: Any = None) -> Dict[str, Any]:
    return {"id": "chatcmpl-123", "object": "chat.completion.chunk", "created": 1694268190,
            "model": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_44709d6fcb",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
            "usage": None}


@pytest.mark.parametrize("function", [{"name": "list_files", "arguments": ""}, {"name": "list_files"}],
                         ids=["empty-string", "absent"])
def test_an_openai_call_with_empty_arguments_ends_with_an_empty_json_object(api, function):
    call = {"index": 0, "id": "call_x", "type": "function", "function": function}
    chunks = [_openai_chunk({"role": "assistant", "content": None, "tool_calls": [call]}),
              _openai_chunk({}, "tool_calls")]
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
    api.post(OPENAI_URL, body=body, content_type="text/event-stream")
    provider = OpenAIProvider(model="gpt-4o-mini", api_key="sk-test")
    try:
        events = list(provider.chat_stream(ask()))
    finally:
        provider.close()
    [end] = [e for e in events if isinstance(e, ToolCallEnd)]
    assert end == ToolCallEnd("call_x", "list_files", "{}")
    assert events[-1].full_response.message.tool_uses == (ToolUseBlock("call_x", "list_files", {}),)


def test_plain_responses_with_empty_arguments_give_an_empty_input(api):
    api.post(OPENAI_URL, json={
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1741569952, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": None, "refusal": None, "tool_calls": [
            {"id": "call_x", "type": "function", "function": {"name": "list_files", "arguments": ""}}]},
            "logprobs": None, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10}})
    api.post(ANTHROPIC_URL, json={
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "list_files", "input": {}}],
        "stop_reason": "tool_use", "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 5}})
    openai = OpenAIProvider(model="gpt-4o-mini", api_key="sk-test")
    anthropic = AnthropicProvider(model="claude-sonnet-4-5", api_key="sk-ant-test")
    try:
        assert openai.chat(ask()).message.tool_uses == (ToolUseBlock("call_x", "list_files", {}),)
        assert anthropic.chat(ask()).message.tool_uses == (ToolUseBlock("toolu_1", "list_files", {}),)
    finally:
        openai.close()
        anthropic.close()
