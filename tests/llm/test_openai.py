"""OpenAIProvider against mocked Chat Completions payloads shaped like OpenAI's API reference."""

from __future__ import annotations

import email.utils
import json
import logging
import threading
import time

import pytest
import requests
import responses

from agcore_sync.llm.cost import Pricing
from agcore_sync.llm.errors import (
    AuthenticationError,
    LlmConnectionError,
    LlmError,
    LlmTimeoutError,
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
from agcore_sync.llm.openai import OpenAIProvider
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
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from tests.support.leaks import closed_port
from tests.support.wire import OPENAI_CHUNK_ID as CHUNK_ID
from tests.support.wire import OPENAI_WIRE_MODEL as WIRE_MODEL
from tests.support.wire import openai_chunk as chunk
from tests.support.wire import openai_completion as completion
from tests.support.wire import openai_error_body as error_body
from tests.support.wire import openai_sse as sse
from tests.support.wire import openai_tool_piece as tool_piece
from tests.support.wire import openai_usage as wire_usage
from tests.support.wire import openai_usage_chunk as usage_chunk

URL = "https://api.openai.com/v1/chat/completions"
KEY = "sk-proj-test-0123456789abcdef"
MODEL = "gpt-4o-mini"
PRICE = Pricing(input=1.0, output=2.0, cache_read=0.5)


# -- fixtures and helpers --------------------------------------------------------

@pytest.fixture
def api():
    with responses.RequestsMock() as mock:
        yield mock


@pytest.fixture
def provider():
    p = OpenAIProvider(model=MODEL, api_key=KEY, pricing=PRICE)
    yield p
    p.close()


def ask(text="Hi", **kwargs):
    return MessageRequest(None, [Message.user(text)], **kwargs)


def sent_body(api, n=0):
    return json.loads(api.calls[n].request.body)


def replay(events):
    """Rebuild the response the way a consumer of the events would."""
    partial = PartialMessageResponse()
    for event in events[:-1]:
        assert partial.apply(event)
    final = events[-1]
    assert isinstance(final, MessageComplete)
    partial.stop_reason = final.full_response.stop_reason
    return partial.finalize()


def stream_events(provider, api, body, request=None):
    api.add(responses.POST, URL, body=body, status=200, content_type="text/event-stream")
    return list(provider.chat_stream(request or ask()))


@pytest.fixture
def stalling_server(stream_server):
    """A server that accepts, optionally sends a prelude, then says nothing until released."""

    def start(prelude=None):
        release = threading.Event()
        if prelude is None:
            stream_server.add_response([], hold_headers=release, framing="close")
        else:
            stream_server.add_response([prelude, release], framing="close")
        return f"{stream_server.url}/v1", release

    return start


# -- construction ------------------------------------------------------------------

def test_the_key_and_url_come_from_the_environment_when_not_given(api, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:8000/v1/")
    api.add(responses.POST, "http://localhost:8000/v1/chat/completions", json=completion({"content": "ok"}))
    provider = OpenAIProvider(model=MODEL)
    provider.chat(ask())
    assert provider.base_url == "http://localhost:8000/v1"
    assert api.calls[0].request.headers["Authorization"] == "Bearer sk-from-env"


def test_explicit_key_and_url_win_over_the_environment(api, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:8000/v1")
    api.add(responses.POST, "http://127.0.0.1:1234/v1/chat/completions", json=completion({"content": "ok"}))
    OpenAIProvider(model=MODEL, api_key="sk-given", base_url="http://127.0.0.1:1234/v1").chat(ask())
    assert api.calls[0].request.headers["Authorization"] == "Bearer sk-given"


def test_without_a_key_no_authorization_header_is_sent(api):
    api.add(responses.POST, URL, json=completion({"content": "ok"}))
    OpenAIProvider(model=MODEL).chat(ask())
    assert "Authorization" not in api.calls[0].request.headers


def test_an_empty_key_sends_no_authorization_even_if_the_environment_has_one(api, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    api.add(responses.POST, URL, json=completion({"content": "ok"}))
    OpenAIProvider(model=MODEL, api_key="").chat(ask())
    assert "Authorization" not in api.calls[0].request.headers


def test_extra_headers_are_sent_with_every_request(api):
    api.add(responses.POST, URL, json=completion({"content": "ok"}))
    OpenAIProvider(model=MODEL, api_key=KEY, extra_headers={"OpenAI-Organization": "org-1"}).chat(ask())
    headers = api.calls[0].request.headers
    assert headers["OpenAI-Organization"] == "org-1"
    assert headers["Authorization"] == f"Bearer {KEY}"
    assert headers["Content-Type"] == "application/json"


def test_the_provider_is_named_openai_and_its_repr_hides_the_key():
    provider = OpenAIProvider(model=MODEL, api_key=KEY)
    assert provider.provider_name == "OpenAI"
    assert KEY not in repr(provider)
    assert "gpt-4o-mini" in repr(provider)


# -- request body --------------------------------------------------------------

def test_a_full_conversation_is_sent_in_the_chat_completions_format(api, provider):
    api.add(responses.POST, URL, json=completion({"content": "Sunny."}))
    weather = ToolDef("get_weather", "Weather for a city.",
                      {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
    request = MessageRequest(
        "gpt-4.1",
        [
            Message.user("Weather in Paris and Rome?"),
            Message(Role.ASSISTANT, [
                ThinkingBlock("Two cities, two calls."),
                TextBlock("Checking."),
                ToolUseBlock("call_1", "get_weather", {"city": "Paris"}),
                ToolUseBlock("call_2", "get_weather", "{not json"),
            ]),
            Message(Role.TOOL, [
                ToolResultBlock("call_1", "18C, sunny"),
                ToolResultBlock("call_2", "tool 'get_weather' failed: bad arguments", is_error=True),
            ]),
            Message(Role.ASSISTANT, [ToolUseBlock("call_3", "get_weather", {})]),
            Message.tool_result("call_3", "no city"),
        ],
        system="You are terse.",
        tools=[weather],
        tool_choice=ToolChoice.tool("get_weather"),
        max_tokens=256,
        temperature=0.2,
        stop=["END", "STOP"],
    )
    provider.chat(request)
    assert api.calls[0].request.url == URL
    assert sent_body(api) == {
        "model": "gpt-4.1",
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Weather in Paris and Rome?"},
            {
                "role": "assistant",
                "content": "Checking.",
                "tool_calls": [
                    {"id": "call_1", "type": "function",
                     "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
                    {"id": "call_2", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{not json"}},
                ],
                "reasoning_content": "Two cities, two calls.",
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "18C, sunny"},
            {"role": "tool", "tool_call_id": "call_2", "content": "tool 'get_weather' failed: bad arguments"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "call_3", "type": "function",
                                "function": {"name": "get_weather", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "call_3", "content": "no city"},
        ],
        "tools": [{"type": "function", "function": {
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        }}],
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
        "max_tokens": 256,
        "temperature": 0.2,
        "stop": ["END", "STOP"],
    }


def test_unset_options_and_an_empty_tool_list_are_left_out_of_the_body(api, provider):
    api.add(responses.POST, URL, json=completion({"content": "ok"}))
    provider.chat(ask("Hello", tool_choice="required"))
    assert sent_body(api) == {"model": MODEL, "messages": [{"role": "user", "content": "Hello"}]}


def test_tool_results_inside_a_user_message_go_first_as_tool_messages(api, provider):
    api.add(responses.POST, URL, json=completion({"content": "ok"}))
    provider.chat(MessageRequest(None, [Message(Role.USER, [
        ToolResultBlock("call_1", "42"), TextBlock("Now explain it."),
    ])]))
    assert sent_body(api)["messages"] == [
        {"role": "tool", "tool_call_id": "call_1", "content": "42"},
        {"role": "user", "content": "Now explain it."},
    ]


@pytest.mark.parametrize("choice", ["auto", "none", "required"])
def test_a_tool_choice_mode_is_sent_as_its_string(api, provider, choice):
    api.add(responses.POST, URL, json=completion({"content": "ok"}))
    provider.chat(ask(tools=[ToolDef("noop", "Does nothing.")], tool_choice=choice))
    body = sent_body(api)
    assert body["tool_choice"] == choice
    assert body["tools"] == [{"type": "function", "function": {
        "name": "noop", "description": "Does nothing.", "parameters": {"type": "object", "properties": {}}}}]


def test_max_tokens_goes_under_the_configured_key(api):
    api.add(responses.POST, URL, json=completion({"content": "ok"}))
    OpenAIProvider(model="o3", max_tokens_param="max_completion_tokens").chat(ask(max_tokens=100))
    body = sent_body(api)
    assert body["max_completion_tokens"] == 100
    assert "max_tokens" not in body


def test_the_request_model_wins_over_the_provider_model(api, provider):
    api.add(responses.POST, URL, json=completion({"content": "ok"}))
    provider.chat(MessageRequest("gpt-5", [Message.user("Hi")]))
    assert sent_body(api)["model"] == "gpt-5"


def test_no_model_anywhere_raises_before_anything_is_sent(api):
    provider = OpenAIProvider(api_key=KEY)
    with pytest.raises(LlmError, match="no model"):
        provider.chat(ask())
    stream = provider.chat_stream(ask())
    with pytest.raises(LlmError, match="no model"):
        next(stream)
    assert len(api.calls) == 0


# -- non-streaming responses ------------------------------------------------------

def test_a_text_completion_becomes_a_message_response(api, provider):
    api.add(responses.POST, URL, json=completion({"content": "Hello there, how may I assist you today?"},
                                                 usage=wire_usage(19, 10, cached=4)))
    response = provider.chat(ask())
    assert response == MessageResponse(
        "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
        WIRE_MODEL,
        Message.assistant("Hello there, how may I assist you today?"),
        StopReason.STOP,
        Usage(prompt_tokens=19, completion_tokens=10, cache_read_tokens=4),
    )


def test_tool_calls_are_parsed_with_empty_arguments_as_an_empty_dict_and_bad_json_kept_raw(api, provider):
    api.add(responses.POST, URL, json=completion({"tool_calls": [
        {"id": "call_abc123", "type": "function",
         "function": {"name": "get_current_weather", "arguments": "{\n\"location\": \"Boston, MA\"\n}"}},
        {"id": "call_def456", "type": "function", "function": {"name": "get_time", "arguments": ""}},
        {"id": "call_ghi789", "type": "function", "function": {"name": "get_time", "arguments": "{\"tz\": "}},
    ]}, finish_reason="tool_calls"))
    response = provider.chat(ask())
    assert response.stop_reason is StopReason.TOOL_USE
    assert response.message.content == (
        ToolUseBlock("call_abc123", "get_current_weather", {"location": "Boston, MA"}),
        ToolUseBlock("call_def456", "get_time", {}),
        ToolUseBlock("call_ghi789", "get_time", "{\"tz\": "),
    )


def test_a_refusal_arrives_as_text_with_the_content_filter_stop_reason(api, provider):
    api.add(responses.POST, URL, json=completion({"refusal": "I'm sorry, I cannot assist with that request."}))
    response = provider.chat(ask())
    assert response.message == Message.assistant("I'm sorry, I cannot assist with that request.")
    assert response.stop_reason is StopReason.CONTENT_FILTER


def test_reasoning_content_becomes_a_thinking_block_before_the_text(api, provider):
    api.add(responses.POST, URL, json=completion({"content": "9.11 is smaller.",
                                                  "reasoning_content": "Compare 9.11 and 9.8 digit by digit."}))
    response = provider.chat(ask())
    assert response.message.content == (ThinkingBlock("Compare 9.11 and 9.8 digit by digit."),
                                         TextBlock("9.11 is smaller."))


@pytest.mark.parametrize(("finish_reason", "expected"), [
    ("stop", StopReason.STOP),
    ("tool_calls", StopReason.TOOL_USE),
    ("function_call", StopReason.TOOL_USE),
    ("length", StopReason.LENGTH),
    ("content_filter", StopReason.CONTENT_FILTER),
    ("something_new", StopReason.ERROR),
])
def test_finish_reasons_map_to_stop_reasons(api, provider, finish_reason, expected):
    api.add(responses.POST, URL, json=completion({"content": "x"}, finish_reason=finish_reason))
    assert provider.chat(ask()).stop_reason is expected


def test_cache_write_tokens_are_read_where_a_compatible_server_sends_them(api, provider):
    api.add(responses.POST, URL, json=completion({"content": "x"},
                                                 usage=wire_usage(100, 5, cached=60, cache_write_tokens=30)))
    assert provider.chat(ask()).usage == Usage(100, 5, cache_read_tokens=60, cache_write_tokens=30)


def test_a_body_that_is_not_json_raises_response_parse_error(api, provider):
    api.add(responses.POST, URL, body="<html>gateway</html>", status=200)
    with pytest.raises(ResponseParseError):
        provider.chat(ask())


def test_a_body_without_choices_raises_response_parse_error(api, provider):
    api.add(responses.POST, URL, json={"id": "chatcmpl-1", "object": "chat.completion", "choices": []})
    with pytest.raises(ResponseParseError, match="without choices"):
        provider.chat(ask())


# -- streaming ---------------------------------------------------------------------

def test_a_text_stream_yields_events_in_the_pinned_order(api, provider):
    events = stream_events(provider, api, sse(
        chunk({"role": "assistant", "content": "", "refusal": None}),
        chunk({"content": "Hello"}),
        chunk({"content": " world"}),
        chunk({}, "stop"),
        usage_chunk(12, 2, cached=4),
    ))
    usage = Usage(12, 2, cache_read_tokens=4)
    full = MessageResponse(CHUNK_ID, WIRE_MODEL, Message.assistant("Hello world"), StopReason.STOP, usage)
    assert events == [
        MessageStart(CHUNK_ID, WIRE_MODEL),
        ContentBlockStart(0, "text"),
        TextDelta("Hello"),
        TextDelta(" world"),
        ContentBlockEnd(0),
        CostUpdate(usage, PRICE.cost(usage)),
        MessageComplete(full),
    ]
    assert events[-2].cost_usd == pytest.approx((8 * 1.0 + 4 * 0.5 + 2 * 2.0) / 1e6)
    assert replay(events) == full


def test_a_stream_request_asks_for_usage_and_an_event_stream(api, provider):
    stream_events(provider, api, sse(chunk({"content": "x"}, "stop")), ask("Hi", temperature=0.0))
    assert sent_body(api) == {
        "model": MODEL,
        "messages": [{"role": "user", "content": "Hi"}],
        "temperature": 0.0,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    assert api.calls[0].request.headers["Accept"] == "text/event-stream"


def test_two_interleaved_tool_calls_get_block_indexes_in_order_of_appearance(api, provider):
    events = stream_events(provider, api, sse(
        chunk({"role": "assistant", "content": "Let me check.", "refusal": None}),
        chunk(tool_piece(0, "", "call_a", "get_weather")),
        chunk(tool_piece(0, '{"ci')),
        chunk(tool_piece(1, "", "call_b", "get_time")),
        chunk(tool_piece(1, '{"tz":')),
        chunk(tool_piece(0, 'ty": "Par')),
        chunk(tool_piece(1, ' "UTC"}')),
        chunk(tool_piece(0, 'is"}')),
        chunk({}, "tool_calls"),
        usage_chunk(50, 30),
    ))
    usage = Usage(50, 30)
    full = MessageResponse(CHUNK_ID, WIRE_MODEL, Message(Role.ASSISTANT, [
        TextBlock("Let me check."),
        ToolUseBlock("call_a", "get_weather", {"city": "Paris"}),
        ToolUseBlock("call_b", "get_time", {"tz": "UTC"}),
    ]), StopReason.TOOL_USE, usage)
    assert events == [
        MessageStart(CHUNK_ID, WIRE_MODEL),
        ContentBlockStart(0, "text"),
        TextDelta("Let me check."),
        ContentBlockEnd(0),
        ContentBlockStart(1, "tool_use", tool_call_id="call_a", tool_name="get_weather"),
        ToolCallArgumentsDelta(1, "call_a", '{"ci'),
        ContentBlockStart(2, "tool_use", tool_call_id="call_b", tool_name="get_time"),
        ToolCallArgumentsDelta(2, "call_b", '{"tz":'),
        ToolCallArgumentsDelta(1, "call_a", 'ty": "Par'),
        ToolCallArgumentsDelta(2, "call_b", ' "UTC"}'),
        ToolCallArgumentsDelta(1, "call_a", 'is"}'),
        ToolCallEnd("call_a", "get_weather", '{"city": "Paris"}'),
        ContentBlockEnd(1),
        ToolCallEnd("call_b", "get_time", '{"tz": "UTC"}'),
        ContentBlockEnd(2),
        CostUpdate(usage, PRICE.cost(usage)),
        MessageComplete(full),
    ]
    assert replay(events) == full


def test_a_tool_call_with_no_argument_pieces_ends_with_empty_object_arguments_and_an_empty_input(api, provider):
    events = stream_events(provider, api, sse(
        chunk({"role": "assistant", "content": None, **tool_piece(0, "", "call_x", "list_files")}),
        chunk({}, "tool_calls"),
    ))
    assert events[1:4] == [
        ContentBlockStart(0, "tool_use", tool_call_id="call_x", tool_name="list_files"),
        ToolCallEnd("call_x", "list_files", "{}"),
        ContentBlockEnd(0),
    ]
    assert events[-1].full_response.message.content == (ToolUseBlock("call_x", "list_files", {}),)


def test_tool_blocks_still_open_at_done_are_closed_there(api, provider):
    events = stream_events(provider, api, sse(
        chunk(tool_piece(0, '{"q": 1}', "call_q", "search")),
        usage_chunk(5, 5),
    ))
    assert [type(e) for e in events] == [MessageStart, ContentBlockStart, ToolCallArgumentsDelta,
                                         ToolCallEnd, ContentBlockEnd, CostUpdate, MessageComplete]
    assert events[-1].full_response.stop_reason is StopReason.TOOL_USE
    assert replay(events) == events[-1].full_response


def test_reasoning_content_streams_as_a_thinking_block_before_the_text_block(api, provider):
    events = stream_events(provider, api, sse(
        chunk({"role": "assistant", "content": None, "reasoning_content": ""}),
        chunk({"content": None, "reasoning_content": "Compare"}),
        chunk({"content": None, "reasoning_content": " digits."}),
        chunk({"content": "9.11", "reasoning_content": None}),
        chunk({"content": " is smaller."}),
        chunk({}, "stop"),
    ))
    full = MessageResponse(CHUNK_ID, WIRE_MODEL, Message(Role.ASSISTANT, [
        ThinkingBlock("Compare digits."), TextBlock("9.11 is smaller.")]), StopReason.STOP, Usage())
    assert events == [
        MessageStart(CHUNK_ID, WIRE_MODEL),
        ContentBlockStart(0, "thinking"),
        ThinkingDelta("Compare"),
        ThinkingDelta(" digits."),
        ContentBlockEnd(0),
        ContentBlockStart(1, "text"),
        TextDelta("9.11"),
        TextDelta(" is smaller."),
        ContentBlockEnd(1),
        MessageComplete(full),
    ]
    assert replay(events) == full


def test_a_streamed_refusal_is_text_with_the_content_filter_stop_reason(api, provider):
    events = stream_events(provider, api, sse(
        chunk({"role": "assistant", "content": None, "refusal": ""}),
        chunk({"refusal": "I'm sorry, "}),
        chunk({"refusal": "I can't help with that."}),
        chunk({}, "stop"),
        usage_chunk(9, 8),
    ))
    assert events[1:5] == [ContentBlockStart(0, "text"), TextDelta("I'm sorry, "),
                           TextDelta("I can't help with that."), ContentBlockEnd(0)]
    full = events[-1].full_response
    assert full.message == Message.assistant("I'm sorry, I can't help with that.")
    assert full.stop_reason is StopReason.CONTENT_FILTER
    assert replay(events) == full


def test_a_stream_without_a_usage_chunk_has_no_cost_update(api, provider):
    events = stream_events(provider, api, sse(chunk({"content": "x"}), chunk({}, "length")))
    assert not any(isinstance(e, CostUpdate) for e in events)
    assert events[-1].full_response.usage == Usage()
    assert events[-1].full_response.stop_reason is StopReason.LENGTH


def test_a_model_without_a_price_gets_a_cost_update_with_no_cost(api):
    provider = OpenAIProvider(model="my-local-llama")
    api.add(responses.POST, URL, status=200, content_type="text/event-stream", body=sse(
        {**chunk({"content": "x"}, "stop"), "model": "my-local-llama"},
        {**usage_chunk(3, 1), "model": "my-local-llama"},
    ))
    events = list(provider.chat_stream(ask()))
    assert events[-2] == CostUpdate(Usage(3, 1), None)


def test_closing_the_generator_closes_the_http_response(api):
    opened = []

    class RecordingSession(requests.Session):
        def post(self, *args, **kwargs):
            response = super().post(*args, **kwargs)
            opened.append(response)
            return response

    # Far more than one network read, so the body is not at its end after the first event.
    many = [chunk({"content": "a"}) for _ in range(2000)]
    api.add(responses.POST, URL, status=200, content_type="text/event-stream",
            body=sse(*many, chunk({}, "stop")))
    with RecordingSession() as session:
        stream = OpenAIProvider(model=MODEL, session=session).chat_stream(ask())
        assert next(stream) == MessageStart(CHUNK_ID, WIRE_MODEL)
        assert not opened[0].raw.closed
        stream.close()
        assert opened[0].raw.closed


# -- stream failures ----------------------------------------------------------------

def test_a_chunk_that_is_not_json_raises_response_parse_error_after_the_events_before_it(api, provider):
    api.add(responses.POST, URL, status=200, content_type="text/event-stream",
            body=sse(chunk({"content": "Hel"})).replace(b"data: [DONE]", b"data: {\"choices\": [oops\n\n"
                                                        b"data: [DONE]"))
    stream = provider.chat_stream(ask())
    seen = [next(stream), next(stream), next(stream)]
    assert seen == [MessageStart(CHUNK_ID, WIRE_MODEL), ContentBlockStart(0, "text"), TextDelta("Hel")]
    with pytest.raises(ResponseParseError) as info:
        next(stream)
    assert info.value.retryable is False


def test_a_stream_that_ends_without_done_raises_a_retryable_connection_error(api, provider):
    api.add(responses.POST, URL, status=200, content_type="text/event-stream",
            body=sse(chunk({"content": "Hel"}), done=False))
    with pytest.raises(LlmConnectionError) as info:
        list(provider.chat_stream(ask()))
    assert info.value.retryable is True


def test_a_stream_cut_between_a_data_line_and_its_blank_line_raises_a_connection_error(api, provider):
    body = sse(chunk({"content": "Hel"}), done=False) + b"data: " + json.dumps(chunk({"content": "lo"})).encode()
    api.add(responses.POST, URL, status=200, content_type="text/event-stream", body=body + b"\n")
    events = []
    with pytest.raises(LlmConnectionError):
        for event in provider.chat_stream(ask()):
            events.append(event)
    assert events[-2:] == [TextDelta("Hel"), TextDelta("lo")]


def test_a_stream_cut_in_the_middle_of_a_json_chunk_raises_a_connection_error_not_a_parse_error(api, provider):
    body = sse(chunk({"content": "Hel"}), done=False) + b'data: {"id": "chatcmpl-123", "obj'
    api.add(responses.POST, URL, status=200, content_type="text/event-stream", body=body)
    with pytest.raises(LlmConnectionError) as info:
        list(provider.chat_stream(ask()))
    assert info.value.retryable


def test_an_error_object_in_the_stream_raises_the_typed_error(api, provider):
    api.add(responses.POST, URL, status=200, content_type="text/event-stream", body=sse(
        chunk({"content": "Hel"}),
        error_body("The server had an error while processing your request.", "server_error"),
    ))
    with pytest.raises(ServerError, match="server had an error") as info:
        list(provider.chat_stream(ask()))
    assert info.value.retryable is True


# -- HTTP errors ---------------------------------------------------------------------

HTTP_DATE_IN_120_S = "__http_date__"


@pytest.mark.parametrize(("status", "body", "headers", "cls", "retryable", "retry_after"), [
    (400, error_body("Invalid value for 'temperature'.", "invalid_request_error"), {}, ProviderError, False, None),
    (401, error_body("Incorrect API key provided.", "invalid_request_error", "invalid_api_key"), {},
     AuthenticationError, False, None),
    (403, error_body("Country, region, or territory not supported", "request_forbidden",
                     "unsupported_country_region_territory"), {}, AuthenticationError, False, None),
    (404, error_body("The model `gpt-9` does not exist or you do not have access to it.",
                     "invalid_request_error", "model_not_found"), {}, ProviderError, False, None),
    (429, error_body("Rate limit reached for gpt-4o-mini on requests per min (RPM).", "requests",
                     "rate_limit_exceeded"), {"Retry-After": "20"}, RateLimitError, True, 20.0),
    (429, error_body("You exceeded your current quota.", "insufficient_quota", "insufficient_quota"),
     {"Retry-After": HTTP_DATE_IN_120_S}, RateLimitError, True, 120.0),
    (500, error_body("The server had an error while processing your request. Sorry about that!",
                     "server_error"), {}, ServerError, True, None),
    (503, error_body("The engine is currently overloaded, please try again later.", "server_error"),
     {"Retry-After": "7"}, ServerError, True, 7.0),
])
@pytest.mark.parametrize("streaming", [False, True], ids=["chat", "chat_stream"])
def test_http_error_statuses_become_typed_errors(api, provider, streaming, status, body, headers, cls, retryable,
                                                 retry_after):
    if headers.get("Retry-After") == HTTP_DATE_IN_120_S:
        headers = {"Retry-After": email.utils.formatdate(time.time() + 120, usegmt=True)}
    api.add(responses.POST, URL, json=body, status=status, headers=headers)
    with pytest.raises(LlmError) as info:
        if streaming:
            next(provider.chat_stream(ask()))
        else:
            provider.chat(ask())
    err = info.value
    assert type(err) is cls
    assert err.status_code == status
    assert err.retryable is retryable
    assert err.body == body
    assert body["error"]["message"] in str(err)
    if retry_after is None:
        assert err.retry_after is None
    else:
        # An HTTP-date has one-second resolution and the clock moves on.
        assert retry_after - 2 <= err.retry_after <= retry_after


def test_an_api_key_echoed_by_the_server_is_masked_everywhere(api, caplog):
    caplog.set_level(logging.DEBUG)
    provider = OpenAIProvider(model=MODEL, api_key=KEY)
    api.add(responses.POST, URL, status=401, json=error_body(
        f"Incorrect API key provided: {KEY}. You can find your API key at https://platform.openai.com/account/api-keys.",
        "invalid_request_error", "invalid_api_key"))
    with pytest.raises(AuthenticationError) as info:
        provider.chat(ask())
    err = info.value
    assert KEY not in str(err)
    assert KEY not in repr(err)
    assert KEY not in json.dumps(err.body)
    assert "Incorrect API key provided: ***." in str(err)
    assert KEY not in repr(provider)
    assert caplog.records, "the provider logs its requests at DEBUG"
    for record in caplog.records:
        assert KEY not in record.getMessage()


def test_an_api_key_echoed_in_a_bad_stream_chunk_is_masked(api, provider):
    api.add(responses.POST, URL, status=200, content_type="text/event-stream",
            body=f"data: not json {KEY}\n\ndata: [DONE]\n\n".encode())
    with pytest.raises(ResponseParseError) as info:
        list(provider.chat_stream(ask()))
    assert KEY not in str(info.value.body)
    assert KEY not in str(info.value)


@pytest.mark.parametrize("streaming", [False, True], ids=["chat", "chat_stream"])
def test_a_refused_connection_raises_a_retryable_connection_error(streaming):
    provider = OpenAIProvider(model=MODEL, api_key=KEY, base_url=f"http://127.0.0.1:{closed_port()}/v1",
                              timeout=5.0)
    with pytest.raises(LlmConnectionError) as info:
        if streaming:
            next(provider.chat_stream(ask()))
        else:
            provider.chat(ask())
    assert info.value.retryable is True
    assert isinstance(info.value.__cause__, requests.ConnectionError)


def test_a_server_that_never_answers_raises_a_retryable_timeout(stalling_server):
    base_url, release = stalling_server()
    provider = OpenAIProvider(model=MODEL, base_url=base_url, timeout=0.2)
    try:
        with pytest.raises(LlmTimeoutError) as info:
            provider.chat(ask())
    finally:
        release.set()
        provider.close()
    assert info.value.retryable is True


def test_a_stream_that_stalls_after_its_first_chunk_raises_a_timeout_from_the_iterator(stalling_server):
    base_url, release = stalling_server(prelude=sse(chunk({"content": "Hel"}), done=False))
    provider = OpenAIProvider(model=MODEL, base_url=base_url, timeout=0.2)
    events = []
    try:
        with pytest.raises(LlmTimeoutError):
            for event in provider.chat_stream(ask()):
                events.append(event)
    finally:
        release.set()
        provider.close()
    assert events == [MessageStart(CHUNK_ID, WIRE_MODEL), ContentBlockStart(0, "text"), TextDelta("Hel")]
