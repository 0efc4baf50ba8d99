"""AnthropicProvider against a mocked Messages API.

Payloads and SSE bytes follow the shapes in Anthropic's public docs
(Messages API reference, "Streaming messages", "Errors", extended thinking).
"""

from __future__ import annotations

import email.utils
import json
import logging
import time
from typing import Any, Dict

import pytest
import requests
import responses

from agcore_sync.llm.anthropic import AnthropicProvider
from agcore_sync.llm.cost import Pricing, cost_usd
from agcore_sync.llm.errors import (
    AuthenticationError,
    LlmConnectionError,
    LlmError,
    ProviderError,
    RateLimitError,
    ResponseParseError,
    ServerError,
)
from agcore_sync.llm.events import (
    ContentBlockEnd,
    ContentBlockStart,
    CostUpdate,
    MessageComplete,
    MessageStart,
    TextDelta,
    ThinkingDelta,
    ToolCallArgumentsDelta,
    ToolCallEnd,
)
from agcore_sync.llm.partial import PartialMessageResponse
from agcore_sync.llm.types import (
    Message,
    MessageRequest,
    MessageResponse,
    Role,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolChoice,
    ToolDef,
    ToolUseBlock,
    Usage,
)
from tests.support.wire import (
    MESSAGE_STOP,
    PING,
    SIGNATURE,
    block_delta,
    block_start,
    block_stop,
    message_delta,
    message_start,
)
from tests.support.wire import anthropic_error_body as error_body
from tests.support.wire import anthropic_error_event as error_event
from tests.support.wire import anthropic_message as message_body
from tests.support.wire import anthropic_sse as sse

KEY = "sk-ant-api03-test-secret-key-0123456789"
MODEL = "claude-sonnet-4-5"
URL = "https://api.anthropic.com/v1/messages"

WEATHER = ToolDef(
    "get_weather",
    "Get the current weather in a given location",
    {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]},
)


# -- helpers -------------------------------------------------------------------


def request(*messages: Message, **kwargs: Any) -> MessageRequest:
    return MessageRequest(kwargs.pop("model", None), messages or (Message.user("Hello"),), **kwargs)


def sent_body(mock: responses.RequestsMock, i: int = 0) -> Dict[str, Any]:
    return json.loads(mock.calls[i].request.body)


def replay(events) -> MessageResponse:
    partial = PartialMessageResponse()
    for event in events:
        if isinstance(event, MessageComplete):
            continue  # rebuild from the other events only
        assert partial.apply(event)
    stop = next(e for e in events if isinstance(e, MessageComplete)).full_response.stop_reason
    partial.stop_reason = stop
    return partial.finalize()


# -- fixtures ------------------------------------------------------------------


@pytest.fixture
def mock():
    with responses.RequestsMock() as rsps:
        yield rsps


@pytest.fixture
def provider():
    p = AnthropicProvider(MODEL, api_key=KEY)
    yield p
    p.close()


def add_json(mock, body, status=200, headers=None):
    mock.add(responses.POST, URL, json=body, status=status, headers=headers)


def add_stream(mock, *events, raw: bytes = None):
    mock.add(responses.POST, URL, body=raw if raw is not None else sse(*events), status=200,
             content_type="text/event-stream")


# -- construction and headers ----------------------------------------------------


def test_key_and_base_url_come_from_the_environment_and_requests_go_to_v1_messages(monkeypatch, mock):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://proxy.example.test/anthropic/")
    mock.add(responses.POST, "https://proxy.example.test/anthropic/v1/messages",
             json=message_body([{"type": "text", "text": "Hi"}]))
    p = AnthropicProvider(MODEL)
    monkeypatch.delenv("ANTHROPIC_API_KEY")  # read once, in the constructor
    assert p.chat(request()).message.text == "Hi"
    headers = mock.calls[0].request.headers
    assert headers["x-api-key"] == KEY
    assert headers["anthropic-version"] == "2023-06-01"
    assert headers["content-type"] == "application/json"
    assert "authorization" not in {k.lower() for k in headers}
    assert p.provider_name == "Anthropic"


def test_explicit_arguments_win_over_the_environment_and_headers_are_configurable(monkeypatch, mock):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://env.example.test")
    mock.add(responses.POST, "http://127.0.0.1:9/v1/messages", json=message_body([{"type": "text", "text": "ok"}]))
    p = AnthropicProvider(MODEL, api_key=KEY, base_url="http://127.0.0.1:9",
                          extra_headers={"anthropic-beta": "interleaved-thinking-2025-05-14"},
                          anthropic_version="2099-01-01")
    p.chat(request())
    headers = mock.calls[0].request.headers
    assert headers["x-api-key"] == KEY
    assert headers["anthropic-version"] == "2099-01-01"
    assert headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"


def test_the_default_base_url_is_the_public_endpoint_without_v1():
    assert AnthropicProvider(MODEL).base_url == "https://api.anthropic.com"


def test_a_provider_without_a_key_sends_no_auth_header_and_a_401_is_an_authentication_error(mock):
    add_json(mock, error_body("authentication_error", "x-api-key header is required"), status=401)
    p = AnthropicProvider(MODEL)
    with pytest.raises(AuthenticationError) as info:
        p.chat(request())
    assert "x-api-key" not in {k.lower() for k in mock.calls[0].request.headers}
    assert info.value.status_code == 401
    assert info.value.retryable is False
    assert "x-api-key header is required" in str(info.value)


def test_a_given_session_is_used_and_not_closed_by_the_provider(mock):
    add_json(mock, message_body([{"type": "text", "text": "ok"}]))
    session = requests.Session()
    closed = []
    session.close = lambda: closed.append(True)
    p = AnthropicProvider(MODEL, api_key=KEY, session=session)
    assert p.session is session
    p.chat(request())
    p.close()
    assert closed == []


def test_repr_shows_model_and_url_but_never_the_key():
    p = AnthropicProvider(MODEL, api_key=KEY)
    assert MODEL in repr(p)
    assert KEY not in repr(p)


# -- request bodies --------------------------------------------------------------


def test_the_request_body_has_a_top_level_system_and_max_tokens_defaults_to_4096(provider, mock):
    add_json(mock, message_body([{"type": "text", "text": "Hi"}]))
    provider.chat(MessageRequest(None, [Message.user("Hello")], system="You are terse."))
    assert sent_body(mock) == {
        "model": MODEL,
        "max_tokens": 4096,
        "system": "You are terse.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hello"}]}],
    }


def test_a_request_without_system_tools_or_sampling_sends_none_of_those_fields(provider, mock):
    add_json(mock, message_body([{"type": "text", "text": "Hi"}]))
    provider.chat(request(model="claude-haiku-4-5", max_tokens=10))
    assert sent_body(mock) == {
        "model": "claude-haiku-4-5",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hello"}]}],
    }


def test_temperature_and_stop_become_temperature_and_stop_sequences(provider, mock):
    add_json(mock, message_body([{"type": "text", "text": "Hi"}], stop_reason="stop_sequence"))
    response = provider.chat(request(temperature=0.2, stop=["\n\nHuman:", "END"]))
    body = sent_body(mock)
    assert body["temperature"] == 0.2
    assert body["stop_sequences"] == ["\n\nHuman:", "END"]
    assert "stop" not in body and "stream" not in body
    assert response.stop_reason is StopReason.STOP


def test_a_tool_round_is_sent_as_tool_use_then_one_user_message_holding_every_result(provider, mock):
    add_json(mock, message_body([{"type": "text", "text": "Sunny in both."}]))
    history = [
        Message.user("Weather in Paris and Rome?"),
        Message(Role.ASSISTANT, [
            TextBlock("Let me check both."),
            ToolUseBlock("toolu_01A09q90qw90lq917835lq9", "get_weather", {"location": "Paris"}),
            ToolUseBlock("toolu_01B19q90qw90lq917835lq8", "get_weather", {"location": "Rome"}),
        ]),
        Message.tool_result("toolu_01A09q90qw90lq917835lq9", "18C, sunny"),
        Message.tool_result("toolu_01B19q90qw90lq917835lq8", "station offline", is_error=True),
        Message.user("Answer in one line."),
    ]
    provider.chat(MessageRequest(None, history, tools=[WEATHER]))
    assert sent_body(mock) == {
        "model": MODEL,
        "max_tokens": 4096,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and Rome?"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Let me check both."},
                {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather",
                 "input": {"location": "Paris"}},
                {"type": "tool_use", "id": "toolu_01B19q90qw90lq917835lq8", "name": "get_weather",
                 "input": {"location": "Rome"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01A09q90qw90lq917835lq9", "content": "18C, sunny",
                 "is_error": False},
                {"type": "tool_result", "tool_use_id": "toolu_01B19q90qw90lq917835lq8",
                 "content": "station offline", "is_error": True},
                {"type": "text", "text": "Answer in one line."},
            ]},
        ],
        "tools": [{"name": "get_weather", "description": "Get the current weather in a given location",
                   "input_schema": WEATHER.parameters}],
        "tool_choice": {"type": "auto"},
    }


def test_consecutive_messages_of_one_role_are_merged_and_system_messages_join_the_system_field(provider, mock):
    add_json(mock, message_body([{"type": "text", "text": "ok"}]))
    provider.chat(MessageRequest(None, [
        Message(Role.SYSTEM, [TextBlock("Also: be kind.")]),
        Message.user("one"),
        Message.user("two"),
        Message.assistant("three"),
        Message.assistant(""),  # an empty text block is refused by the API, so it is left out
        Message.assistant("four"),
    ], system="Be brief."))
    body = sent_body(mock)
    assert body["system"] == "Be brief.\n\nAlso: be kind."
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "three"}, {"type": "text", "text": "four"}]},
    ]


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", {"type": "auto"}),
        ("required", {"type": "any"}),
        ("none", {"type": "none"}),
        (ToolChoice.tool("get_weather"), {"type": "tool", "name": "get_weather"}),
    ],
)
def test_tool_choice_maps_to_the_documented_objects(provider, mock, choice, wire):
    add_json(mock, message_body([{"type": "text", "text": "ok"}]))
    provider.chat(request(tools=[WEATHER], tool_choice=choice))
    assert sent_body(mock)["tool_choice"] == wire


def test_tool_choice_is_not_sent_without_tools(provider, mock):
    add_json(mock, message_body([{"type": "text", "text": "ok"}]))
    provider.chat(request(tool_choice="required"))
    body = sent_body(mock)
    assert "tools" not in body and "tool_choice" not in body


def test_thinking_and_redacted_thinking_come_back_and_are_sent_back_unchanged(provider, mock):
    thinking = {"type": "thinking", "thinking": "Let me analyze this step by step...",
                "signature": "WaUjzkypQ2mUEVM36O2TxuC06KN8xyfbJwyem2dw3URve/op91XWHOEBLLqIOMfFG/UvLEczmEsUjavL"}
    redacted = {"type": "redacted_thinking",
                "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7"}
    tool_use = {"type": "tool_use", "id": "toolu_01CswdEQBMshySk6Y9DFKrfq", "name": "get_weather",
                "input": {"location": "Paris"}}
    add_json(mock, message_body([thinking, redacted, tool_use], stop_reason="tool_use"))
    add_json(mock, message_body([{"type": "text", "text": "18C in Paris."}]))

    first = provider.chat(request(Message.user("Weather in Paris?"), tools=[WEATHER]))
    assert first.message.content == (
        ThinkingBlock(thinking["thinking"], thinking["signature"]),
        ThinkingBlock("", None, redacted["data"]),
        ToolUseBlock("toolu_01CswdEQBMshySk6Y9DFKrfq", "get_weather", {"location": "Paris"}),
    )
    assert first.stop_reason is StopReason.TOOL_USE

    provider.chat(request(Message.user("Weather in Paris?"), first.message,
                          Message.tool_result("toolu_01CswdEQBMshySk6Y9DFKrfq", "18C"), tools=[WEATHER]))
    assert sent_body(mock, 1)["messages"][1] == {"role": "assistant", "content": [thinking, redacted, tool_use]}


def test_unsigned_thinking_from_another_provider_is_not_sent(provider, mock):
    add_json(mock, message_body([{"type": "text", "text": "ok"}]))
    provider.chat(request(Message.user("hi"), Message(Role.ASSISTANT, [ThinkingBlock("hmm"), TextBlock("Hello")]),
                          Message.user("again")))
    assert sent_body(mock)["messages"][1] == {"role": "assistant", "content": [{"type": "text", "text": "Hello"}]}


def test_a_request_model_of_none_uses_the_provider_model(provider, mock):
    add_json(mock, message_body([{"type": "text", "text": "ok"}]))
    provider.chat(request())
    assert sent_body(mock)["model"] == MODEL


def test_no_model_anywhere_raises_before_anything_is_sent(mock):
    p = AnthropicProvider(api_key=KEY)
    with pytest.raises(LlmError, match="no model"):
        p.chat(request())
    stream = p.chat_stream(request())
    with pytest.raises(LlmError, match="no model"):
        next(stream)
    assert len(mock.calls) == 0


# -- non-streamed responses --------------------------------------------------------


def test_a_response_with_text_tool_use_and_cache_usage_becomes_a_message_response(provider, mock):
    add_json(mock, message_body(
        [
            {"type": "text", "text": "I'll check the weather."},
            {"type": "tool_use", "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "name": "get_weather",
             "input": {"location": "San Francisco, CA"}},
        ],
        stop_reason="tool_use",
        usage={"input_tokens": 50, "cache_creation_input_tokens": 1000, "cache_read_input_tokens": 2000,
               "output_tokens": 30, "service_tier": "standard"},
    ))
    response = provider.chat(request(tools=[WEATHER]))
    assert response == MessageResponse(
        "msg_013Zva2CMHLNnXjNJJKqJ2EF",
        "claude-sonnet-4-5-20250929",
        Message(Role.ASSISTANT, [
            TextBlock("I'll check the weather."),
            ToolUseBlock("toolu_01T1x1fJ34qAmk2tNTrN7Up6", "get_weather", {"location": "San Francisco, CA"}),
        ]),
        StopReason.TOOL_USE,
        Usage(prompt_tokens=3050, completion_tokens=30, cache_read_tokens=2000, cache_write_tokens=1000),
    )
    assert response.usage.total_tokens == 3080


@pytest.mark.parametrize(
    ("wire", "ours"),
    [
        ("end_turn", StopReason.STOP),
        ("stop_sequence", StopReason.STOP),
        ("pause_turn", StopReason.STOP),
        ("tool_use", StopReason.TOOL_USE),
        ("max_tokens", StopReason.LENGTH),
        ("model_context_window_exceeded", StopReason.LENGTH),
        ("refusal", StopReason.CONTENT_FILTER),
        ("a_reason_from_the_future", StopReason.ERROR),
    ],
)
def test_stop_reasons_map_as_pinned(provider, mock, wire, ours):
    add_json(mock, message_body([{"type": "text", "text": "x"}], stop_reason=wire))
    assert provider.chat(request()).stop_reason is ours


def test_a_200_body_that_is_not_json_is_a_response_parse_error(provider, mock):
    mock.add(responses.POST, URL, body="<html>gateway</html>", status=200)
    with pytest.raises(ResponseParseError):
        provider.chat(request())


def test_a_200_body_without_content_is_a_response_parse_error(provider, mock):
    add_json(mock, {"id": "msg_1", "type": "message"})
    with pytest.raises(ResponseParseError):
        provider.chat(request())


# -- streams -------------------------------------------------------------------------


def test_a_text_stream_yields_events_in_order_and_replays_to_the_full_response(provider, mock):
    add_stream(
        mock,
        message_start({"input_tokens": 25, "cache_read_input_tokens": 5, "cache_creation_input_tokens": 0,
                       "output_tokens": 1}),
        block_start(0, {"type": "text", "text": ""}),
        PING,
        block_delta(0, {"type": "text_delta", "text": "Hello"}),
        block_delta(0, {"type": "text_delta", "text": "!"}),
        block_stop(0),
        message_delta("end_turn", 15),
        MESSAGE_STOP,
    )
    events = list(provider.chat_stream(request()))
    usage = Usage(prompt_tokens=30, completion_tokens=15, cache_read_tokens=5, cache_write_tokens=0)
    full = MessageResponse("msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY", "claude-sonnet-4-5-20250929",
                           Message.assistant("Hello!"), StopReason.STOP, usage)
    assert events == [
        MessageStart("msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY", "claude-sonnet-4-5-20250929"),
        ContentBlockStart(0, "text"),
        TextDelta("Hello"),
        TextDelta("!"),
        ContentBlockEnd(0),
        CostUpdate(usage, cost_usd(usage, "claude-sonnet-4-5-20250929")),
        MessageComplete(full),
    ]
    assert replay(events) == full
    body = sent_body(mock)
    assert body["stream"] is True
    assert mock.calls[0].request.headers["Accept"] == "text/event-stream"


def test_a_tool_use_stream_assembles_input_json_delta_pieces(provider, mock):
    tool_id = "toolu_01T1x1fJ34qAmk2tNTrN7Up6"
    add_stream(
        mock,
        message_start(),
        block_start(0, {"type": "text", "text": ""}),
        block_delta(0, {"type": "text_delta", "text": "Okay, let's check the weather."}),
        block_stop(0),
        block_start(1, {"type": "tool_use", "id": tool_id, "name": "get_weather", "input": {}}),
        block_delta(1, {"type": "input_json_delta", "partial_json": ""}),
        block_delta(1, {"type": "input_json_delta", "partial_json": "{\"location\":"}),
        PING,
        block_delta(1, {"type": "input_json_delta", "partial_json": " \"San Fra"}),
        block_delta(1, {"type": "input_json_delta", "partial_json": "ncisco, CA\"}"}),
        block_stop(1),
        block_start(2, {"type": "tool_use", "id": "toolu_02", "name": "get_time", "input": {}}),
        block_stop(2),
        message_delta("tool_use", 89),
        MESSAGE_STOP,
    )
    events = list(provider.chat_stream(request(tools=[WEATHER])))
    assert events[1:13] == [
        ContentBlockStart(0, "text"),
        TextDelta("Okay, let's check the weather."),
        ContentBlockEnd(0),
        ContentBlockStart(1, "tool_use", tool_call_id=tool_id, tool_name="get_weather"),
        ToolCallArgumentsDelta(1, tool_id, "{\"location\":"),
        ToolCallArgumentsDelta(1, tool_id, " \"San Fra"),
        ToolCallArgumentsDelta(1, tool_id, "ncisco, CA\"}"),
        ToolCallEnd(tool_id, "get_weather", "{\"location\": \"San Francisco, CA\"}"),
        ContentBlockEnd(1),
        ContentBlockStart(2, "tool_use", tool_call_id="toolu_02", tool_name="get_time"),
        ToolCallEnd("toolu_02", "get_time", "{}"),  # no arguments: "{}", so json.loads works
        ContentBlockEnd(2),
    ]
    full = events[-1].full_response
    assert full.stop_reason is StopReason.TOOL_USE
    assert full.message.tool_uses == (
        ToolUseBlock(tool_id, "get_weather", {"location": "San Francisco, CA"}),
        ToolUseBlock("toolu_02", "get_time", {}),
    )
    assert full.usage == Usage(prompt_tokens=25, completion_tokens=89)
    assert replay(events) == full


def test_a_thinking_stream_keeps_the_signature_and_redacted_data(provider, mock):
    add_stream(
        mock,
        message_start(),
        block_start(0, {"type": "thinking", "thinking": ""}),
        block_delta(0, {"type": "thinking_delta", "thinking": "I need to find the GCD of 1071 and 462"}),
        block_delta(0, {"type": "thinking_delta", "thinking": " using the Euclidean algorithm."}),
        block_delta(0, {"type": "signature_delta", "signature": SIGNATURE}),
        block_stop(0),
        block_start(1, {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVy"}),
        block_stop(1),
        block_start(2, {"type": "text", "text": ""}),
        block_delta(2, {"type": "text_delta", "text": "The GCD is 21."}),
        block_stop(2),
        message_delta("end_turn", 120),
        MESSAGE_STOP,
    )
    events = list(provider.chat_stream(request()))
    assert events[1:10] == [
        ContentBlockStart(0, "thinking"),
        ThinkingDelta("I need to find the GCD of 1071 and 462"),
        ThinkingDelta(" using the Euclidean algorithm."),
        ThinkingDelta("", signature=SIGNATURE),
        ContentBlockEnd(0),
        ContentBlockStart(1, "thinking", redacted_data="EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVy"),
        ContentBlockEnd(1),
        ContentBlockStart(2, "text"),
        TextDelta("The GCD is 21."),
    ]
    full = events[-1].full_response
    assert full.message.content == (
        ThinkingBlock("I need to find the GCD of 1071 and 462 using the Euclidean algorithm.",
                      SIGNATURE),
        ThinkingBlock("", None, "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVy"),
        TextBlock("The GCD is 21."),
    )
    assert replay(events) == full


def test_message_delta_usage_is_cumulative_and_replaces_the_start_counts(provider, mock):
    add_stream(
        mock,
        message_start({"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                       "output_tokens": 1}),
        block_start(0, {"type": "text", "text": ""}),
        block_delta(0, {"type": "text_delta", "text": "x"}),
        block_stop(0),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "max_tokens", "stop_sequence": None},
                           "usage": {"input_tokens": 10, "cache_creation_input_tokens": 4,
                                     "cache_read_input_tokens": 6, "output_tokens": 7}}),
        MESSAGE_STOP,
    )
    events = list(provider.chat_stream(request()))
    cost = [e for e in events if isinstance(e, CostUpdate)]
    assert [e.usage for e in cost] == [Usage(prompt_tokens=20, completion_tokens=7, cache_read_tokens=6,
                                             cache_write_tokens=4)]
    assert events[-1].full_response.stop_reason is StopReason.LENGTH


def test_cost_update_uses_the_given_pricing_and_is_none_for_an_unknown_model(mock):
    for model in ("claude-sonnet-4-5-20250929", "some-local-model"):
        add_stream(mock, message_start({"input_tokens": 1_000_000, "output_tokens": 1}, model=model),
                   message_delta("end_turn", 1_000_000), MESSAGE_STOP)
    p = AnthropicProvider(MODEL, api_key=KEY, pricing={"claude-sonnet-4": Pricing(2.0, 10.0)})
    costs = [e.cost_usd for _ in range(2) for e in p.chat_stream(request()) if isinstance(e, CostUpdate)]
    assert costs == [pytest.approx(12.0), None]


def test_a_server_tool_block_is_skipped_and_block_indexes_stay_dense(provider, mock):
    add_stream(
        mock,
        message_start(),
        block_start(0, {"type": "server_tool_use", "id": "srvtoolu_014hJH82Qum7Td6UV8gDXThB", "name": "web_search",
                        "input": {}}),
        block_delta(0, {"type": "input_json_delta", "partial_json": "{\"query\": \"weather NYC today\"}"}),
        block_stop(0),
        block_start(1, {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_014hJH82Qum7Td6UV8gDXThB",
                        "content": [{"type": "web_search_result", "title": "Weather", "url": "https://example.com",
                                     "encrypted_content": "Ev0DCioIAxgCIiQ3NmU4ZmI4OC", "page_age": None}]}),
        block_stop(1),
        block_start(2, {"type": "text", "text": ""}),
        block_delta(2, {"type": "text_delta", "text": "Sunny."}),
        block_stop(2),
        message_delta("end_turn", 9),
        MESSAGE_STOP,
    )
    events = list(provider.chat_stream(request()))
    assert events[1:4] == [ContentBlockStart(0, "text"), TextDelta("Sunny."), ContentBlockEnd(0)]
    assert events[-1].full_response.message == Message.assistant("Sunny.")


@pytest.mark.parametrize(
    ("error_type", "cls", "status", "retryable"),
    [
        ("overloaded_error", ServerError, 529, True),
        ("api_error", ServerError, 500, True),
        ("rate_limit_error", RateLimitError, 429, True),
        ("authentication_error", AuthenticationError, 401, False),
        ("permission_error", AuthenticationError, 403, False),
        ("invalid_request_error", ProviderError, 400, False),
        ("a_new_error_type", ProviderError, None, False),
    ],
)
def test_an_error_event_mid_stream_raises_its_typed_error_from_the_iterator(provider, mock, error_type, cls,
                                                                             status, retryable):
    add_stream(
        mock,
        message_start(),
        block_start(0, {"type": "text", "text": ""}),
        block_delta(0, {"type": "text_delta", "text": "Hel"}),
        error_event(error_type, "Something went wrong"),
    )
    stream = provider.chat_stream(request())
    seen = []
    with pytest.raises(LlmError) as info:
        for event in stream:
            seen.append(event)
    assert type(info.value) is cls
    assert info.value.status_code == status
    assert info.value.retryable is retryable
    assert error_type in str(info.value) and "Something went wrong" in str(info.value)
    assert info.value.body == {"type": "error", "error": {"type": error_type, "message": "Something went wrong"}}
    # The input tokens message_start reported are billed: they are reported before the error.
    assert seen[-2:] == [TextDelta("Hel"), CostUpdate(Usage(25, 1), seen[-1].cost_usd)]


def test_a_stream_cut_before_message_stop_is_a_retryable_connection_error(provider, mock):
    add_stream(mock, message_start(), block_start(0, {"type": "text", "text": ""}),
               block_delta(0, {"type": "text_delta", "text": "Hello"}))
    seen = []
    with pytest.raises(LlmConnectionError) as info:
        for event in provider.chat_stream(request()):
            seen.append(event)
    assert info.value.retryable is True
    assert seen[:3] == [MessageStart("msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY", "claude-sonnet-4-5-20250929"),
                        ContentBlockStart(0, "text"), TextDelta("Hello")]
    assert seen[3:] == [CostUpdate(Usage(25, 1), seen[3].cost_usd)]


def test_a_chunk_that_is_not_json_is_a_response_parse_error(provider, mock):
    raw = sse(message_start()) + b"event: content_block_start\ndata: {\"type\": \"content_bl\n\n"
    add_stream(mock, raw=raw)
    stream = provider.chat_stream(request())
    assert isinstance(next(stream), MessageStart)
    assert next(stream).usage == Usage(25, 1)  # the billed input, reported before the error
    with pytest.raises(ResponseParseError):
        next(stream)


def test_a_failure_before_message_start_reports_no_usage(provider, mock):
    add_stream(mock, raw=b"event: message_start\ndata: {\"type\": \"mess\n\n")
    with pytest.raises(ResponseParseError):
        list(provider.chat_stream(request()))


def test_an_event_of_an_unknown_shape_is_a_response_parse_error(provider, mock):
    add_stream(mock, message_start(), ("content_block_start", {"type": "content_block_start", "index": 0}))
    with pytest.raises(ResponseParseError):
        list(provider.chat_stream(request()))


def test_closing_the_stream_early_closes_the_http_response(mock):
    # A long SSE comment keeps most of the body unread when the stream is closed.
    padding = b": " + b"keep-alive " * 20_000 + b"\n\n"
    add_stream(mock, raw=sse(message_start(), block_start(0, {"type": "text", "text": ""})) + padding
               + sse(block_delta(0, {"type": "text_delta", "text": "Hi"}), block_stop(0),
                     message_delta("end_turn", 2), MESSAGE_STOP))
    opened = []

    class RecordingSession(requests.Session):
        def post(self, *args, **kwargs):
            response = super().post(*args, **kwargs)
            opened.append(response)
            return response

    p = AnthropicProvider(MODEL, api_key=KEY, session=RecordingSession())
    stream = p.chat_stream(request())
    assert isinstance(next(stream), MessageStart)
    assert not opened[0].raw.closed
    stream.close()
    assert opened[0].raw.closed


def test_nothing_is_sent_until_the_stream_is_iterated(provider, mock):
    add_stream(mock, message_start(), message_delta("end_turn", 1), MESSAGE_STOP)
    stream = provider.chat_stream(request())
    assert len(mock.calls) == 0
    events = list(stream)
    assert len(mock.calls) == 1
    assert [type(e) for e in events] == [MessageStart, CostUpdate, MessageComplete]


# -- HTTP error statuses -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error_type", "headers", "cls", "retryable", "retry_after"),
    [
        (401, "authentication_error", None, AuthenticationError, False, None),
        (403, "permission_error", None, AuthenticationError, False, None),
        (429, "rate_limit_error", {"Retry-After": "17"}, RateLimitError, True, 17.0),
        (400, "invalid_request_error", None, ProviderError, False, None),
        (500, "api_error", None, ServerError, True, None),
        (529, "overloaded_error", None, ServerError, True, None),
    ],
)
@pytest.mark.parametrize("streaming", [False, True])
def test_http_error_statuses_map_to_typed_errors(provider, mock, status, error_type, headers, cls, retryable,
                                                 retry_after, streaming):
    add_json(mock, error_body(error_type, "Details here"), status=status, headers=headers)
    with pytest.raises(LlmError) as info:
        if streaming:
            next(provider.chat_stream(request()))
        else:
            provider.chat(request())
    err = info.value
    assert type(err) is cls
    assert err.status_code == status
    assert err.retryable is retryable
    assert err.retry_after == retry_after
    assert "Details here" in str(err)
    assert err.body == error_body(error_type, "Details here")


def test_a_retry_after_http_date_becomes_seconds(provider, mock):
    later = email.utils.formatdate(time.time() + 120, usegmt=True)
    add_json(mock, error_body("rate_limit_error", "Number of request tokens has exceeded your rate limit"),
             status=429, headers={"Retry-After": later})
    with pytest.raises(RateLimitError) as info:
        provider.chat(request())
    assert 100 <= info.value.retry_after <= 121


# -- the key never leaks ------------------------------------------------------------------


def _assert_no_key(err: BaseException, provider: AnthropicProvider, caplog) -> None:
    assert KEY not in str(err)
    assert KEY not in repr(err)
    assert KEY not in json.dumps(err.body)
    assert KEY not in repr(provider)
    for record in caplog.records:
        assert KEY not in record.getMessage()


def test_an_http_error_body_echoing_the_key_is_masked_everywhere(provider, mock, caplog):
    caplog.set_level(logging.DEBUG)
    add_json(mock, error_body("authentication_error", f"invalid x-api-key: {KEY}"), status=401)
    with pytest.raises(AuthenticationError) as info:
        provider.chat(request())
    _assert_no_key(info.value, provider, caplog)
    assert "***" in str(info.value)


def test_an_error_event_echoing_the_key_is_masked_everywhere(provider, mock, caplog):
    caplog.set_level(logging.DEBUG)
    add_stream(mock, message_start(), error_event("permission_error", f"key {KEY} may not use this model"))
    with pytest.raises(AuthenticationError) as info:
        list(provider.chat_stream(request()))
    _assert_no_key(info.value, provider, caplog)
    assert info.value.body["error"]["message"] == "key *** may not use this model"


def test_a_malformed_chunk_echoing_the_key_is_masked(provider, mock, caplog):
    caplog.set_level(logging.DEBUG)
    add_stream(mock, raw=sse(message_start()) + f"event: message_delta\ndata: oops {KEY}\n\n".encode())
    with pytest.raises(ResponseParseError) as info:
        list(provider.chat_stream(request()))
    _assert_no_key(info.value, provider, caplog)


def test_a_stream_cut_in_the_middle_of_a_json_event_is_a_retryable_connection_error():
    import responses as responses_lib

    from agcore_sync.llm.anthropic import AnthropicProvider
    from agcore_sync.llm.errors import LlmConnectionError
    from agcore_sync.llm.types import Message, MessageRequest

    body = (b'event: message_start\ndata: {"type": "message_start", "message": {"id": "msg_1", "type": "message", '
            b'"role": "assistant", "content": [], "model": "claude-sonnet-4-5", "stop_reason": null, '
            b'"stop_sequence": null, "usage": {"input_tokens": 5, "output_tokens": 1}}}\n\n'
            b'event: content_block_start\ndata: {"type": "content_bl')
    with responses_lib.RequestsMock() as api:
        api.add(responses_lib.POST, "https://api.anthropic.com/v1/messages", status=200,
                content_type="text/event-stream", body=body)
        provider = AnthropicProvider(model="claude-sonnet-4-5", api_key="k")
        with pytest.raises(LlmConnectionError) as info:
            list(provider.chat_stream(MessageRequest(None, [Message.user("hi")])))
    assert info.value.retryable
