"""CircuitBreaker: closed -> open after N failures -> half-open trial -> closed or open again (fake clock)."""

from __future__ import annotations

import logging

import pytest

from agcore_sync import CircuitBreaker, CircuitOpenError, LlmError


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def failing(breaker: CircuitBreaker, times: int) -> None:
    for _ in range(times):
        breaker.before_call()
        breaker.record_failure()


def test_the_circuit_opens_after_the_threshold_of_failures_in_a_row_and_refuses_without_a_call():
    clock = FakeClock()
    breaker = CircuitBreaker(failure_threshold=3, reset_after=10.0, clock=clock)
    failing(breaker, 2)
    assert breaker.state == "closed"
    failing(breaker, 1)
    assert breaker.state == "open"
    with pytest.raises(CircuitOpenError) as caught:
        breaker.before_call()
    assert isinstance(caught.value, LlmError) and caught.value.retry_after == pytest.approx(10.0)
    assert caught.value.retryable


def test_a_success_resets_the_count_of_failures():
    breaker = CircuitBreaker(failure_threshold=2, reset_after=1.0, clock=FakeClock())
    failing(breaker, 1)
    breaker.before_call()
    breaker.record_success()
    failing(breaker, 1)
    assert breaker.state == "closed"


def test_after_reset_after_one_trial_goes_through_and_its_success_closes_the_circuit():
    clock = FakeClock()
    breaker = CircuitBreaker(failure_threshold=1, reset_after=5.0, clock=clock)
    failing(breaker, 1)
    clock.now += 4.9
    with pytest.raises(CircuitOpenError):
        breaker.before_call()
    clock.now += 0.1
    assert breaker.state == "half-open"
    breaker.before_call()  # the trial
    with pytest.raises(CircuitOpenError):
        breaker.before_call()  # a second caller waits for the trial's verdict
    breaker.record_success()
    assert breaker.state == "closed"
    breaker.before_call()


def test_a_failed_trial_opens_the_circuit_for_another_reset_after():
    clock = FakeClock()
    breaker = CircuitBreaker(failure_threshold=2, reset_after=5.0, clock=clock)
    failing(breaker, 2)
    clock.now += 5.0
    breaker.before_call()
    breaker.record_failure()
    assert breaker.state == "open"
    assert breaker.retry_after() == pytest.approx(5.0)


def test_an_abandoned_trial_frees_the_trial_slot():
    clock = FakeClock()
    breaker = CircuitBreaker(failure_threshold=1, reset_after=1.0, clock=clock)
    failing(breaker, 1)
    clock.now += 1.0
    breaker.before_call()
    breaker.record_abandoned()
    breaker.before_call()


def test_every_state_change_is_logged(caplog):
    clock = FakeClock()
    breaker = CircuitBreaker(failure_threshold=1, reset_after=1.0, clock=clock, name="primary")
    with caplog.at_level(logging.WARNING, logger="agcore_sync.llm.circuit"):
        failing(breaker, 1)
        clock.now += 1.0
        breaker.before_call()
        breaker.record_success()
    assert [r.getMessage().split(": ")[1] for r in caplog.records] == [
        "closed -> open for 1.0s after 1 failure(s)", "open -> half-open", "half-open -> closed"]
    assert all("primary" in r.getMessage() for r in caplog.records)


def test_copy_makes_a_closed_breaker_with_the_same_settings():
    clock = FakeClock()
    template = CircuitBreaker(failure_threshold=1, reset_after=2.0, clock=clock)
    failing(template, 1)
    copy = template.copy(name="other")
    assert copy.state == "closed" and copy.failure_threshold == 1 and copy.reset_after == 2.0
    assert copy.clock is clock and copy.name == "other"


@pytest.mark.parametrize("kwargs", [
    {"failure_threshold": 0}, {"failure_threshold": -1}, {"failure_threshold": "5"}, {"failure_threshold": 2.5},
    {"failure_threshold": True}, {"reset_after": 0}, {"reset_after": -1.0}, {"reset_after": "60"},
    {"reset_after": float("nan")}, {"reset_after": float("inf")},
])
def test_a_limit_that_is_not_a_positive_number_is_a_value_error(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        CircuitBreaker(**kwargs)
