"""The registry's deadline thread: callbacks at deadlines, disarming without a wake-up, a bounded heap."""

from __future__ import annotations

import threading
from time import perf_counter

import pytest

from agcore_sync.loop._deadlines import Deadlines

WAIT = 5.0
FAR = 3600.0


def test_a_passed_deadline_calls_back_on_the_deadline_thread_and_cannot_be_disarmed():
    deadlines = Deadlines()
    fired = threading.Event()
    where = []
    entry = deadlines.arm(perf_counter(), lambda: (where.append(threading.current_thread().name), fired.set()))
    assert fired.wait(WAIT)
    assert where[0].startswith("agcore-deadlines-")
    assert deadlines.disarm(entry) is False  # it came first
    deadlines.stop(WAIT)
    assert not deadlines._thread.is_alive()


def test_a_disarmed_deadline_never_calls_back():
    deadlines = Deadlines()
    calls = []
    entry = deadlines.arm(perf_counter() + 0.05, lambda: calls.append("late"))
    assert deadlines.disarm(entry) is True
    # A later deadline that does fire proves the thread went past the disarmed one.
    fired = threading.Event()
    deadlines.arm(perf_counter() + 0.1, fired.set)
    assert fired.wait(WAIT)
    assert calls == []
    deadlines.stop(WAIT)
    assert not deadlines._thread.is_alive()


def test_deadlines_fire_in_deadline_order_whatever_the_arming_order():
    deadlines = Deadlines()
    order = []
    done = threading.Event()
    now = perf_counter()
    deadlines.arm(now + 0.06, lambda: (order.append(3), done.set()))
    deadlines.arm(now + 0.02, lambda: order.append(1))
    deadlines.arm(now + 0.04, lambda: order.append(2))
    assert done.wait(WAIT)
    assert order == [1, 2, 3]
    deadlines.stop(WAIT)


def test_an_earlier_deadline_wakes_a_thread_that_sleeps_until_a_later_one():
    deadlines = Deadlines()
    far = deadlines.arm(perf_counter() + FAR, lambda: None)
    fired = threading.Event()
    deadlines.arm(perf_counter(), fired.set)
    assert fired.wait(WAIT)  # not an hour
    deadlines.disarm(far)
    deadlines.stop(WAIT)
    assert not deadlines._thread.is_alive()


def test_rounds_of_arm_and_disarm_keep_the_heap_small():
    deadlines = Deadlines()
    for _ in range(10_000):
        deadlines.disarm(deadlines.arm(perf_counter() + FAR, lambda: None))
    assert len(deadlines._heap) <= 128
    deadlines.stop(WAIT)
    assert not deadlines._thread.is_alive()


def test_stop_waits_for_an_armed_deadline_and_a_disarm_lets_the_thread_go():
    deadlines = Deadlines()
    entry = deadlines.arm(perf_counter() + FAR, lambda: None)
    deadlines.stop(0.05)  # a watched tool still runs: its deadline must still fire
    assert deadlines._thread.is_alive()
    assert deadlines.disarm(entry) is True  # the tool returned
    deadlines._thread.join(WAIT)
    assert not deadlines._thread.is_alive()


def test_a_callback_that_raises_is_logged_and_the_thread_goes_on(caplog):
    deadlines = Deadlines()
    fired = threading.Event()
    now = perf_counter()
    deadlines.arm(now, lambda: 1 / 0)
    deadlines.arm(now + 0.01, fired.set)
    assert fired.wait(WAIT)
    deadlines.stop(WAIT)
    assert "callback raised" in caplog.text and "ZeroDivisionError" in caplog.text


def test_arming_after_stop_is_refused():
    deadlines = Deadlines()
    deadlines.stop(WAIT)
    with pytest.raises(RuntimeError, match=r"after stop\(\)"):
        deadlines.arm(perf_counter(), lambda: None)
