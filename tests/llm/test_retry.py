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


def test_a_retry_after_longer_than_max_retry_after_is_raised_at_once_with_its_value():
    waits = Waits()
    provider = MockProvider([RateLimitError("slow", status_code=429, retry_after=3600.0), MockProvider.text("ok")])
    with pytest.raises(RateLimitError) as caught:
        RetryProvider(provider, RetryConfig(), sleep=waits).chat(REQUEST)
    assert caught.value.retry_after == 3600.0
    assert waits == []
    assert provider.remaining == 1


def test_a_retry_after_up_to_max_retry_after_is_still_honoured():
    waits = Waits()
    provider = MockProvider([RateLimitError("slow", status_code=429, retry_after=60.0), MockProvider.text("ok")])
    assert RetryProvider(provider, RetryConfig(), sleep=waits).chat(REQUEST).message.text == "ok"
    assert waits == [60.0]


def test_max_retry_after_is_configurable_and_applies_to_streams():
    waits = Waits()
    config = RetryConfig(max_retry_after=5.0, jitter=False)
    provider = MockProvider([ServerError("busy", status_code=503, retry_after=6.0), MockProvider.text("ok")])
    with pytest.raises(ServerError):
        list(RetryProvider(provider, config, sleep=waits).chat_stream(REQUEST))
    assert waits == []


def test_the_cycle_does_not_hold_a_request_for_a_long_retry_after():
    from agcore_sync.loop.cycle import CycleConfig, LlmCycle

    provider = MockProvider([RateLimitError("slow", status_code=429, retry_after=3600.0), MockProvider.text("ok")])
    cycle = LlmCycle(provider, CycleConfig("mock-model"))
    with pytest.raises(RateLimitError) as caught:
        cycle.submit("hi")
    assert caught.value.retry_after == 3600.0


def test_an_old_config_dict_without_max_retry_after_still_loads():
    data = RetryConfig().to_dict()
    del data["max_retry_after"]
    assert RetryConfig.from_dict(data).max_retry_after == 60.0


def test_retry_warnings_go_to_logging_only_and_print_nothing_when_logging_is_not_configured():
    import subprocess
    import sys

    code = (
        "from agcore_sync import MockProvider, RetryProvider, RetryConfig, ServerError, MessageRequest, Message\n"
        "p = MockProvider([ServerError('down', status_code=503), MockProvider.text('ok')])\n"
        "r = RetryProvider(p, RetryConfig(jitter=False), sleep=lambda d: None)\n"
        "print(r.chat(MessageRequest(None, [Message.user('hi')])).message.text)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "ok"
    assert done.stderr == ""


def test_retry_warnings_reach_a_configured_logger(caplog):
    provider = MockProvider([ServerError("down", status_code=503), MockProvider.text("ok")])
    with caplog.at_level("WARNING", logger="agcore_sync"):
        RetryProvider(provider, NO_JITTER, sleep=Waits()).chat(REQUEST)
    assert any("retry 1/3" in record.getMessage() for record in caplog.records)
