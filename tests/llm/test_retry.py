"""RetryProvider: which errors are retried, how long it waits, streams only before the first event."""

from __future__ import annotations

import pytest

from agcore_sync.llm.errors import (
    AuthenticationError,
    LlmConnectionError,
    LlmTimeoutError,
    ProviderError,
    RateLimitError,
    ServerError,
)
from agcore_sync.llm.events import MessageStart
from agcore_sync.llm.mock import MockProvider
from agcore_sync.llm.retry import RetryConfig, RetryProvider, backoff_delay
from agcore_sync.llm.types import Message, MessageRequest

REQUEST = MessageRequest(None, [Message.user("hi")])
NO_JITTER = RetryConfig(max_retries=3, initial_backoff=0.5, max_backoff=30.0, multiplier=2.0, jitter=False)


class Waits(list):
    """A ``sleep`` that records its delays instead of sleeping."""

    def __call__(self, delay):
        self.append(delay)


def test_retryable_errors_are_retried_with_exponential_backoff_until_success():
    waits = Waits()
    provider = MockProvider([ServerError("down", status_code=500), LlmConnectionError("reset"),
                             LlmTimeoutError("slow"), MockProvider.text("ok")])
    assert RetryProvider(provider, NO_JITTER, sleep=waits).chat(REQUEST).message.text == "ok"
    assert waits == [0.5, 1.0, 2.0]


def test_at_most_max_retries_plus_one_attempts_then_the_last_error():
    waits = Waits()
    errors = [ServerError(f"down {i}", status_code=503) for i in range(5)]
    provider = MockProvider(errors)
    with pytest.raises(ServerError, match="down 3"):
        RetryProvider(provider, NO_JITTER, sleep=waits).chat(REQUEST)
    assert len(provider.requests) == 4
    assert len(waits) == 3


@pytest.mark.parametrize("error", [
    AuthenticationError("bad key", status_code=401),
    AuthenticationError("forbidden", status_code=403),
    ProviderError("bad request", status_code=400),
    ProviderError("not found", status_code=404),
])
def test_auth_and_validation_errors_are_never_retried(error):
    waits = Waits()
    provider = MockProvider([error, MockProvider.text("never")])
    with pytest.raises(type(error)):
        RetryProvider(provider, NO_JITTER, sleep=waits).chat(REQUEST)
    assert waits == [] and provider.remaining == 1


@pytest.mark.parametrize("status, retryable", [(408, True), (409, True), (429, True), (500, True), (502, True),
                                               (400, False), (404, False), (422, False)])
def test_provider_error_retryable_follows_the_status(status, retryable):
    assert ProviderError("x", status_code=status).retryable is retryable


def test_retry_after_is_honoured_even_beyond_max_backoff():
    waits = Waits()
    config = RetryConfig(max_retries=2, initial_backoff=0.5, max_backoff=1.0, jitter=False)
    provider = MockProvider([RateLimitError("slow", status_code=429, retry_after=42.0), MockProvider.text("ok")])
    RetryProvider(provider, config, sleep=waits).chat(REQUEST)
    assert waits == [42.0]


def test_backoff_is_capped_and_jitter_stays_within_half_to_full():
    config = RetryConfig(initial_backoff=1.0, max_backoff=5.0, multiplier=10.0, jitter=True)
    assert backoff_delay(config, 1, rng=lambda: 0.0) == 0.5
    assert backoff_delay(config, 1, rng=lambda: 1.0) == 1.0
    assert backoff_delay(config, 3, rng=lambda: 1.0) == 5.0
    assert backoff_delay(config, 3, retry_after=7.0, rng=lambda: 0.0) == 7.0


def test_a_stream_is_retried_when_it_fails_before_its_first_event():
    waits = Waits()
    provider = MockProvider([ServerError("down", status_code=502), MockProvider.text("hello")])
    events = list(RetryProvider(provider, NO_JITTER, sleep=waits).chat_stream(REQUEST))
    assert isinstance(events[0], MessageStart)
    assert waits == [0.5]


def test_a_stream_that_already_yielded_is_not_retried():
    # A retry here would duplicate output.
    inner = MockProvider([MockProvider.failing_stream(MockProvider.text("partial"), after_events=1,
                                                      error=LlmConnectionError("cut")),
                          MockProvider.text("never")])
    stream = RetryProvider(inner, NO_JITTER, sleep=Waits()).chat_stream(REQUEST)
    assert isinstance(next(stream), MessageStart)
    with pytest.raises(LlmConnectionError):
        next(stream)
    assert len(inner.requests) == 1


def test_a_sleep_that_reports_cancellation_stops_retrying_at_once():
    provider = MockProvider([ServerError("down", status_code=500), MockProvider.text("never")])
    with pytest.raises(ServerError):
        RetryProvider(provider, NO_JITTER, sleep=lambda delay: True).chat(REQUEST)
    assert provider.remaining == 1
