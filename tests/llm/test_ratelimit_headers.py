"""Rate-limit response headers (OpenAI and Anthropic names) tighten the local budget, over real HTTP."""

from __future__ import annotations

import datetime
import json

import pytest

from agcore_sync import AnthropicProvider, Message, MessageRequest, OpenAIProvider, RateLimit, RateLimitedProvider
from agcore_sync.llm._ratelimit_headers import parse_duration, read_headers
from agcore_sync.llm.ratelimit_store import InMemoryRateLimitStore
from tests.support.wire import anthropic_message, openai_completion

REQUEST = MessageRequest(None, [Message.user("hi")])


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> bool:
        self.slept.append(seconds)
        self.now += seconds
        return False


@pytest.mark.parametrize("text, seconds", [("1s", 1.0), ("6m0s", 360.0), ("20ms", 0.02), ("1h2m3.5s", 3723.5),
                                           ("0.5", 0.5), ("soon", None), ("5x", None), ("", None)])
def test_openai_reset_durations_parse(text, seconds):
    assert parse_duration(text) == (None if seconds is None else pytest.approx(seconds))


def test_anthropic_headers_are_read_with_their_rfc_3339_resets():
    wall = 1_700_000_000.0
    reset = datetime.datetime.fromtimestamp(wall + 12, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    headers = {"anthropic-ratelimit-requests-remaining": "3", "anthropic-ratelimit-requests-reset": reset,
               "anthropic-ratelimit-input-tokens-remaining": "900", "anthropic-ratelimit-input-tokens-reset": reset}
    requests, tokens = read_headers(headers, wall=lambda: wall)
    assert requests == (3.0, pytest.approx(12.0)) and tokens == (900.0, pytest.approx(12.0))


def serve_json(stream_server, body, headers):
    stream_server.add_response([json.dumps(body).encode()], headers={"Content-Type": "application/json", **headers})


def test_openai_headers_saying_no_requests_are_left_make_the_next_call_wait_for_their_reset(stream_server):
    completion = openai_completion({"role": "assistant", "content": "hi"})
    serve_json(stream_server, completion, {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "20s",
                                           "x-ratelimit-remaining-tokens": "149000",
                                           "x-ratelimit-reset-tokens": "6m0s"})
    serve_json(stream_server, completion, {})
    time = FakeTime()
    store = InMemoryRateLimitStore(time.clock)
    inner = OpenAIProvider(model="gpt-4o-mini", api_key="sk-test", base_url=stream_server.url)
    provider = RateLimitedProvider(inner, RateLimit(requests_per_minute=60, tokens_per_minute=150_000),
                                   store=store, key="k", clock=time.clock, sleep=time.sleep)
    try:
        provider.chat(REQUEST)
        assert store.levels("k")[1] < 149_100  # lowered to 149,000, then corrected to the usage
        provider.chat(REQUEST)
    finally:
        provider.close()
    # Locally 59 requests were left; the server said none until its reset in 20 s.
    assert time.slept == [pytest.approx(20.0)]


def test_anthropic_headers_lower_the_token_bucket_to_what_the_server_has_left(stream_server):
    serve_json(stream_server, anthropic_message([{"type": "text", "text": "hi"}], usage={"input_tokens": 10,
                                                                                          "output_tokens": 5}),
               {"anthropic-ratelimit-tokens-remaining": "2500",
                "anthropic-ratelimit-tokens-reset": "2030-01-01T00:00:00Z"})
    store = InMemoryRateLimitStore()
    inner = AnthropicProvider(model="claude-haiku-4-5", api_key="sk-ant-test", base_url=stream_server.url)
    provider = RateLimitedProvider(inner, RateLimit(tokens_per_minute=80_000), store=store, key="k")
    request = MessageRequest(None, [Message.user("hi")], max_tokens=100)
    try:
        provider.chat(request)
    finally:
        provider.close()
    # Lowered to 2,500, then the estimate corrected to the 15 tokens used.
    assert store.levels("k")[1] == pytest.approx(2500 + provider.estimate(request) - 15, abs=50)  # + refill


def test_headers_of_a_server_with_more_left_than_a_local_minute_change_nothing(stream_server):
    serve_json(stream_server, openai_completion({"role": "assistant", "content": "hi"}, usage=None),
               {"x-ratelimit-remaining-requests": "9999", "x-ratelimit-reset-requests": "1s"})
    store = InMemoryRateLimitStore()
    inner = OpenAIProvider(model="gpt-4o-mini", api_key="sk-test", base_url=stream_server.url)
    provider = RateLimitedProvider(inner, RateLimit(requests_per_minute=100), store=store, key="k")
    try:
        provider.chat(REQUEST)
    finally:
        provider.close()
    assert store.levels("k")[0] == pytest.approx(99, abs=0.01)
