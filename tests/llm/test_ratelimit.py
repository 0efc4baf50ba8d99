"""RateLimitedProvider in one process: buckets, estimates and corrections, waits, slots, cancels (fake clock)."""

from __future__ import annotations

import queue
import threading

import pytest

from agcore_sync import (
    AgentSession,
    FallbackProvider,
    LlmError,
    Message,
    MessageRequest,
    MockProvider,
    RateLimit,
    RateLimitedProvider,
    RateLimitWaitExceeded,
    RetryConfig,
    RetryProvider,
    ServerError,
    TextDelta,
    Usage,
)
from agcore_sync.llm.ratelimit_store import InMemoryRateLimitStore
from agcore_sync.llm.tokens import estimate_tokens

REQUEST = MessageRequest(None, [Message.user("hi")])

#: Bound on every wait of a test thread.
JOIN = 10.0


class FakeTime:
    """A clock and a sleep that moves it: a wait of s seconds takes no real time."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> bool:
        self.slept.append(seconds)
        self.now += seconds
        return False


def limited(limit: RateLimit, responses=(), time: FakeTime = None, **kwargs) -> RateLimitedProvider:
    time = time or FakeTime()
    inner = MockProvider(list(responses), model="m")
    return RateLimitedProvider(inner, limit, clock=time.clock, sleep=time.sleep, **kwargs)


def texts(n: int, usage: Usage = Usage(10, 5)):
    return [MockProvider.text(f"answer {i}", usage=usage, model="m") for i in range(n)]


# -- requests per minute ----------------------------------------------------------


def test_a_full_minute_of_requests_may_be_spent_at_once_and_the_next_waits_for_the_refill():
    time = FakeTime()
    provider = limited(RateLimit(requests_per_minute=60), texts(61), time)
    for _ in range(60):
        provider.chat(REQUEST)
    assert time.slept == []
    provider.chat(REQUEST)
    assert time.slept == [pytest.approx(1.0)]


def test_the_bucket_refills_continuously():
    time = FakeTime()
    provider = limited(RateLimit(requests_per_minute=120), texts(180), time)
    for _ in range(120):
        provider.chat(REQUEST)
    time.now += 15.0  # a quarter minute: 30 requests
    for _ in range(30):
        provider.chat(REQUEST)
    assert time.slept == []
    provider.chat(REQUEST)
    assert time.slept == [pytest.approx(0.5)]


def test_a_wait_longer_than_max_wait_raises_at_once_without_sleeping_or_sending():
    time = FakeTime()
    provider = limited(RateLimit(requests_per_minute=1, max_wait=10.0), texts(1), time)
    provider.chat(REQUEST)
    with pytest.raises(RateLimitWaitExceeded) as caught:
        provider.chat(REQUEST)
    error = caught.value
    assert isinstance(error, LlmError) and error.retryable and error.wait == pytest.approx(60.0)
    assert error.retry_after == pytest.approx(60.0) and "max_wait=10s" in str(error)
    assert time.slept == [] and len(provider.inner.requests) == 1


def test_max_wait_zero_never_waits():
    provider = limited(RateLimit(requests_per_minute=1, max_wait=0), texts(1))
    provider.chat(REQUEST)
    with pytest.raises(RateLimitWaitExceeded):
        provider.chat(REQUEST)


# -- tokens per minute -------------------------------------------------------------


def test_a_request_is_charged_its_json_length_over_four_plus_max_tokens_then_corrected_to_its_usage():
    request = MessageRequest(None, [Message.user("a question " * 20)], max_tokens=300)
    estimate = estimate_tokens(request) + 300
    time = FakeTime()
    store = InMemoryRateLimitStore(time.clock)
    provider = limited(RateLimit(tokens_per_minute=10_000), texts(1, Usage(120, 30)), time, store=store, key="k")
    assert provider.estimate(request) == estimate
    provider.chat(request)
    assert store.levels("k")[1] == pytest.approx(10_000 - 150)


def test_a_streams_charge_is_corrected_to_the_usage_it_reports():
    time = FakeTime()
    store = InMemoryRateLimitStore(time.clock)
    provider = limited(RateLimit(tokens_per_minute=10_000), texts(1, Usage(400, 100)), time, store=store, key="k")
    assert "".join(e.text for e in provider.chat_stream(REQUEST) if isinstance(e, TextDelta)) == "answer 0"
    assert store.levels("k")[1] == pytest.approx(10_000 - 500)


def test_the_token_budget_waits_until_the_estimate_fits():
    time = FakeTime()
    request = MessageRequest(None, [Message.user("x")], max_tokens=500)
    provider = limited(RateLimit(tokens_per_minute=1200), texts(3, Usage(0, 0)), time)
    estimate = provider.estimate(request)
    provider.chat(request)  # usage 0: the estimate stays charged
    provider.chat(request)
    assert time.slept == []
    provider.chat(request)
    assert time.slept == [pytest.approx((3 * estimate - 1200) * 60 / 1200)]


def test_a_request_larger_than_a_minutes_tokens_fails_at_once_and_says_why():
    provider = limited(RateLimit(tokens_per_minute=100), texts(1))
    with pytest.raises(RateLimitWaitExceeded, match="larger than tokens_per_minute=100") as caught:
        provider.chat(MessageRequest(None, [Message.user("hi")], max_tokens=4096))
    assert caught.value.wait is None and not caught.value.retryable and provider.inner.requests == []


def test_a_failed_request_keeps_its_charge():
    time = FakeTime()
    store = InMemoryRateLimitStore(time.clock)
    provider = limited(RateLimit(requests_per_minute=10, tokens_per_minute=1000),
                       [ServerError("down", status_code=503)], time, store=store, key="k")
    with pytest.raises(ServerError):
        provider.chat(REQUEST)
    requests, tokens, _ = store.levels("k")
    assert requests == 9 and tokens == 1000 - provider.estimate(REQUEST)


# -- concurrency -------------------------------------------------------------------


def held_stream(release: threading.Event, started: threading.Event):
    def events(request):
        yield from MockProvider([MockProvider.text("first stream", model="m")]).chat_stream(request)
        started.set()
        release.wait(JOIN)

    return MockProvider.stream(events)


def test_a_stream_holds_its_slot_until_it_is_closed_and_a_waiting_call_then_goes():
    release, started = threading.Event(), threading.Event()
    inner = MockProvider([held_stream(release, started), MockProvider.text("second", model="m")], model="m")
    provider = RateLimitedProvider(inner, RateLimit(max_concurrent=1))
    first = provider.chat_stream(REQUEST)
    next(first)
    results: queue.Queue[object] = queue.Queue()
    second = threading.Thread(target=lambda: results.put(provider.chat(REQUEST)), name="agcore-test-second")
    second.start()
    assert results.empty() and len(inner.requests) == 1  # the second waits for the slot
    first.close()
    second.join(JOIN)
    assert not second.is_alive()
    assert results.get_nowait().message.text == "second"
    release.set()


def test_a_stream_run_to_its_end_gives_its_slot_back():
    store = InMemoryRateLimitStore()
    provider = RateLimitedProvider(MockProvider(texts(2), model="m"), RateLimit(max_concurrent=1), store=store,
                                   key="k")
    list(provider.chat_stream(REQUEST))
    assert store.levels("k")[2] == 0
    list(provider.chat_stream(REQUEST))


def test_closing_a_waiting_stream_from_another_thread_ends_it_with_nothing_sent():
    inner = MockProvider(texts(1), model="m")
    provider = RateLimitedProvider(inner, RateLimit(max_concurrent=1, max_wait=JOIN * 3))
    holder = provider.chat_stream(REQUEST)
    next(holder)
    waiting = provider.chat_stream(REQUEST)
    outcome: queue.Queue[object] = queue.Queue()

    def consume():
        try:
            outcome.put(list(waiting))
        except BaseException as exc:  # noqa: BLE001 - delivered to the test
            outcome.put(exc)

    thread = threading.Thread(target=consume, name="agcore-test-waiter")
    thread.start()
    # The waiter is blocked in the store until close() wakes it; a close before it waits works the same.
    waiting.close()
    thread.join(JOIN)
    assert not thread.is_alive()
    assert outcome.get_nowait() == [] and len(inner.requests) == 1
    holder.close()


def test_a_slot_wait_past_max_wait_raises():
    time = FakeTime()
    provider = limited(RateLimit(max_concurrent=1, max_wait=2.0), texts(1), time)
    holder = provider.chat_stream(REQUEST)
    next(holder)
    with pytest.raises(RateLimitWaitExceeded, match="concurrency slot"):
        provider.chat(REQUEST)
    assert sum(time.slept) == pytest.approx(2.0)
    holder.close()


# -- composition and validation ----------------------------------------------------


def test_retry_around_a_rate_limit_around_a_fallback_list_waits_fails_over_and_answers():
    time = FakeTime()
    first = MockProvider([ServerError("down", status_code=503)] * 3, model="a")
    second = MockProvider([MockProvider.text(str(i), model="b") for i in range(3)], model="b")
    limit = RateLimitedProvider(FallbackProvider([first, second]), RateLimit(requests_per_minute=2, max_wait=0.0),
                                clock=time.clock, sleep=time.sleep)
    provider = RetryProvider(limit, RetryConfig(max_retries=2, jitter=False), sleep=time.sleep)
    assert [provider.chat(REQUEST).model for _ in range(3)] == ["b", "b", "b"]
    # The third call found the budget empty: RateLimitWaitExceeded (retryable, retry_after=30 s), retried once.
    assert time.slept == [pytest.approx(30.0)]


def test_a_session_uses_a_rate_limited_provider_like_any_other():
    provider = limited(RateLimit(requests_per_minute=10, tokens_per_minute=10_000, max_concurrent=2), texts(2))
    session = AgentSession(provider)
    assert session.submit_turn("hi").message.text == "answer 0"
    with session.submit_turn_stream("again") as stream:
        assert "".join(e.text for e in stream if isinstance(e, TextDelta)) == "answer 1"


@pytest.mark.parametrize("kwargs", [
    {"requests_per_minute": 0}, {"requests_per_minute": -5}, {"requests_per_minute": "60"},
    {"tokens_per_minute": 0}, {"tokens_per_minute": "100000"}, {"tokens_per_minute": float("nan")},
    {"max_concurrent": 0}, {"max_concurrent": 1.5}, {"max_concurrent": "2"}, {"max_wait": -1.0},
    {"max_wait": "60"}, {"requests_per_minute": True},
])
def test_a_limit_that_is_not_a_positive_number_is_a_value_error(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        RateLimit(**kwargs)


@pytest.mark.parametrize("args", [("not a provider", RateLimit()), (MockProvider(), {"requests_per_minute": 5}),
                                  (None, RateLimit())])
def test_a_non_provider_or_a_non_limit_is_a_type_error(args):
    with pytest.raises(TypeError, match="RateLimitedProvider"):
        RateLimitedProvider(*args)


def test_a_fallback_list_of_rate_limited_providers_moves_on_when_one_budget_is_spent():
    from agcore_sync.llm.fallback import DEFAULT_FALL_BACK_ON

    time = FakeTime()
    first = limited(RateLimit(requests_per_minute=1, max_wait=0.0), texts(2), time)
    second = MockProvider([MockProvider.text("from b", model="b")], model="b")
    provider = FallbackProvider([first, second], fall_back_on=(*DEFAULT_FALL_BACK_ON, RateLimitWaitExceeded))
    assert provider.chat(REQUEST).model == "m"
    assert provider.chat(REQUEST).model == "b"  # the first's budget is spent: no request, no wait
    assert len(first.inner.requests) == 1 and time.slept == []


def test_a_retry_inside_a_fallback_list_retries_its_provider_before_the_next_one_answers():
    time = FakeTime()
    flaky = MockProvider([ServerError("503", status_code=503)] * 3, model="a")
    backup = MockProvider([MockProvider.text("from b", model="b")], model="b")
    provider = FallbackProvider([RetryProvider(flaky, RetryConfig(max_retries=2, jitter=False), sleep=time.sleep),
                                 backup])
    assert provider.chat(REQUEST).model == "b"
    assert len(flaky.requests) == 3 and time.slept == [0.5, 1.0]


def test_the_composed_stack_streams_one_answer_and_gives_its_slot_back():
    time = FakeTime()
    store = InMemoryRateLimitStore(time.clock)
    first = MockProvider([MockProvider.failing_stream(MockProvider.text("lost", model="a"), after_events=0,
                                                      error=ServerError("503", status_code=503))], model="a")
    second = MockProvider([MockProvider.text("streamed from b", model="b", usage=Usage(40, 10))], model="b")
    limit = RateLimit(requests_per_minute=10, tokens_per_minute=10_000, max_concurrent=1)
    provider = RetryProvider(RateLimitedProvider(FallbackProvider([first, second]), limit, store=store, key="k",
                                                 clock=time.clock, sleep=time.sleep), sleep=time.sleep)
    events = list(provider.chat_stream(REQUEST))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "streamed from b"
    requests, tokens, active = store.levels("k")
    assert requests == 9 and tokens == pytest.approx(10_000 - 50) and active == 0
