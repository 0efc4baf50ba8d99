"""Events reach the caller as soon as their bytes arrive, proven over a real socket.

Each server script sends some bytes, then blocks on a ``threading.Event`` that
the test sets only after it has *received* the first parsed event. If any
layer buffered (``iter_lines``, a fixed-size ``read``, a provider collecting
events before yielding), the first event would never arrive while the
server waits; the server gives up after its bounded wait
(``STEP_WAIT_TIMEOUT``, 5 s) and resets the connection, the client's read
timeout is 5 s too, and the test fails with an error within seconds. No
timing is measured and nothing sleeps.
"""

from __future__ import annotations

import threading
from typing import Iterator, List

import pytest

from agcore_sync._http.body import BodyReader
from agcore_sync._http.sse import SseEvent
from agcore_sync.llm._http_provider import HttpProvider
from agcore_sync.llm.anthropic import AnthropicProvider
from agcore_sync.llm.errors import LlmConnectionError, LlmTimeoutError
from agcore_sync.llm.events import (
    ContentBlockEnd,
    ContentBlockStart,
    CostUpdate,
    MessageComplete,
    MessageStart,
    TextDelta,
)
from agcore_sync.llm.openai import OpenAIProvider
from agcore_sync.llm.types import Message, MessageRequest, StopReason, Usage
from tests.support.stream_server import ABORT
from tests.support.wire import (
    MESSAGE_STOP,
    PING,
    anthropic_sse,
    block_delta,
    block_start,
    block_stop,
    message_delta,
    message_start,
    openai_text_stream,
)

#: The client's read timeout: short, so a buffered read fails fast too.
CLIENT_TIMEOUT = 5.0

FRAMINGS = ["chunked", "close"]


class _RawSseProvider(HttpProvider):
    """The smallest HttpProvider: POST, then the SSE events as they come."""

    provider_name = "test"

    def __init__(self, base_url: str) -> None:
        super().__init__(None, None, base_url, CLIENT_TIMEOUT, None, None, None)

    def chat(self, request):
        raise NotImplementedError

    def chat_stream(self, request):
        raise NotImplementedError

    def events(self, path: str) -> Iterator[SseEvent]:
        response = self._post(self.base_url + path, {}, stream=True)
        try:
            yield from self._read_events(BodyReader(response))
        finally:
            response.close()


def _first_then_rest(stream, released: threading.Event, is_first):
    """Read until ``is_first(event)``, release the server, then read the rest."""
    before: List = []
    for event in stream:
        before.append(event)
        if is_first(event):
            break
    else:
        pytest.fail(f"the stream ended before the awaited event; got {before}")
    # The server is still blocked on `released` here: every event so far came
    # from the bytes it sent before blocking.
    released.set()
    return before, list(stream)


@pytest.mark.parametrize("framing", FRAMINGS)
def test_http_provider_yields_each_sse_event_before_the_server_sends_more(stream_server, framing):
    released = threading.Event()
    stream_server.add_response(
        [b"event: first\ndata: one\n\n", released, b"data: two\n\n", b"data: three\n\n"],
        framing=framing,
    )
    provider = _RawSseProvider(stream_server.url)
    try:
        stream = provider.events("/stream")
        before, after = _first_then_rest(stream, released, lambda e: True)
    finally:
        provider.close()

    assert [(e.event, e.data) for e in before] == [("first", "one")]
    assert [e.data for e in after] == ["two", "three"]
    assert stream_server.errors == []
    [request] = stream_server.requests
    assert request.method == "POST"
    assert request.path == "/stream"
    assert request.json == {}
    assert request.headers["accept"] == "text/event-stream"
    assert request.headers["content-type"] == "application/json"
    assert request.completed


@pytest.mark.parametrize("framing", FRAMINGS)
def test_an_event_whose_bytes_come_in_pieces_is_yielded_once_its_last_piece_arrives(stream_server, framing):
    # The first event's bytes are cut mid-line and mid-character ("é" is C3 A9);
    # it must come out only when complete, and then at once.
    body = "data: caf\u00e9\n\n".encode()
    cut = body.index(b"\xa9")
    released = threading.Event()
    stream_server.add_response([body[:cut], body[cut:], released, b"data: next\n\n"], framing=framing)
    provider = _RawSseProvider(stream_server.url)
    try:
        before, after = _first_then_rest(provider.events("/s"), released, lambda e: True)
    finally:
        provider.close()

    assert [e.data for e in before] == ["caf\u00e9"]
    assert [e.data for e in after] == ["next"]
    assert stream_server.errors == []


def test_the_server_reports_an_event_the_test_never_set_instead_of_hanging(stream_server):
    # The guard the other tests rely on: if the client never released the
    # server, the server gives up and resets; the client sees an error.
    got_one = threading.Event()
    never = threading.Event()
    stream_server.add_response([b"data: one\n\n", got_one, never, b"data: two\n\n"])
    provider = _RawSseProvider(stream_server.url)
    try:
        stream = provider.events("/s")
        assert next(stream).data == "one"  # read before any reset, which could discard unread bytes
        stream_server.step_wait_timeout = 0.2  # for the wait on `never` only, to keep this test short
        got_one.set()
        with pytest.raises(LlmConnectionError):
            list(stream)
    finally:
        provider.close()
    assert len(stream_server.errors) == 1
    assert "not set within" in stream_server.errors[0]
    assert not stream_server.requests[0].completed


# -- through the providers -----------------------------------------------------


@pytest.mark.parametrize("framing", FRAMINGS)
def test_openai_chat_stream_yields_the_first_text_delta_before_the_server_sends_more(stream_server, framing):
    released = threading.Event()
    completion_id = "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT"
    role, *pieces = openai_text_stream(completion_id, ["Hel", "lo"], usage=(9, 2))
    first, rest = role + pieces[0], pieces[1:]
    stream_server.add_response([first, released, *rest], framing=framing)
    provider = OpenAIProvider(model="gpt-4o-mini", api_key="sk-test", base_url=f"{stream_server.url}/v1",
                              timeout=CLIENT_TIMEOUT)
    request = MessageRequest(model=None, messages=(Message.user("Say hello"),))
    try:
        stream = provider.chat_stream(request)
        try:
            before, after = _first_then_rest(stream, released, lambda e: isinstance(e, TextDelta))
        finally:
            stream.close()
    finally:
        provider.close()

    assert before == [
        MessageStart("chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT", "gpt-4o-mini-2024-07-18"),
        ContentBlockStart(0, "text"),
        TextDelta("Hel"),
    ]
    assert after[0] == TextDelta("lo")
    assert ContentBlockEnd(0) in after
    [cost] = [e for e in after if isinstance(e, CostUpdate)]
    assert cost.usage == Usage(prompt_tokens=9, completion_tokens=2)
    assert isinstance(after[-1], MessageComplete)
    assert after[-1].full_response.message.text == "Hello"
    assert after[-1].full_response.stop_reason == StopReason.STOP
    assert stream_server.errors == []
    [recorded] = stream_server.requests
    assert recorded.path == "/v1/chat/completions"
    assert recorded.json["stream"] is True
    assert recorded.json["model"] == "gpt-4o-mini"


@pytest.mark.parametrize("framing", FRAMINGS)
def test_anthropic_chat_stream_yields_the_first_text_delta_before_the_server_sends_more(stream_server, framing):
    released = threading.Event()
    message_id = "msg_01XFDUDYJgAACzvnptvVoYEL"
    first = anthropic_sse(
        message_start({"input_tokens": 12, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                       "output_tokens": 1}, msg_id=message_id),
        block_start(0, {"type": "text", "text": ""}),
        PING,
        block_delta(0, {"type": "text_delta", "text": "Hel"}),
    )
    rest = [anthropic_sse(event) for event in (
        block_delta(0, {"type": "text_delta", "text": "lo"}),
        block_stop(0),
        message_delta("end_turn", 3),
        MESSAGE_STOP,
    )]
    stream_server.add_response([first, released, *rest], framing=framing)
    provider = AnthropicProvider(model="claude-sonnet-4-5", api_key="sk-ant-test", base_url=stream_server.url,
                                 timeout=CLIENT_TIMEOUT)
    request = MessageRequest(model=None, messages=(Message.user("Say hello"),), max_tokens=64)
    try:
        stream = provider.chat_stream(request)
        try:
            before, after = _first_then_rest(stream, released, lambda e: isinstance(e, TextDelta))
        finally:
            stream.close()
    finally:
        provider.close()

    assert before[0] == MessageStart(message_id, "claude-sonnet-4-5-20250929")
    assert before[-2:] == [ContentBlockStart(0, "text"), TextDelta("Hel")]
    assert after[0] == TextDelta("lo")
    assert isinstance(after[-1], MessageComplete)
    assert after[-1].full_response.message.text == "Hello"
    assert after[-1].full_response.stop_reason == StopReason.STOP
    assert stream_server.errors == []
    [recorded] = stream_server.requests
    assert recorded.path == "/v1/messages"
    assert recorded.json["stream"] is True


@pytest.mark.parametrize("framing", FRAMINGS)
def test_a_connection_reset_mid_event_raises_llm_connection_error_after_the_events_before_it(
        stream_server, framing):
    released = threading.Event()
    stream_server.add_response([b"data: one\n\n", released, b"data: tw", ABORT], framing=framing)
    provider = _RawSseProvider(stream_server.url)
    try:
        stream = provider.events("/s")
        assert next(stream).data == "one"
        released.set()
        with pytest.raises(LlmConnectionError):
            next(stream)
    finally:
        provider.close()
    assert stream_server.errors == ["POST /s: aborted by the script"]


@pytest.mark.parametrize("framing", FRAMINGS)
def test_a_stream_that_stalls_longer_than_the_read_timeout_raises_llm_timeout_error(stream_server, framing):
    never = threading.Event()
    stream_server.add_response([b"data: one\n\n", never, b"data: two\n\n"], framing=framing)
    provider = _RawSseProvider(stream_server.url)
    provider.timeout = 0.3  # the stall is the server waiting on `never`; this bounds the client's read
    try:
        stream = provider.events("/s")
        assert next(stream).data == "one"
        with pytest.raises(LlmTimeoutError):
            next(stream)
    finally:
        provider.close()
