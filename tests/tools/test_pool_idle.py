"""DaemonPool with an idle limit: idle workers exit, work queued after that still runs, shutdown still joins."""

from __future__ import annotations

import threading

from agcore_sync._pool import DaemonPool

WAIT = 5.0


def test_idle_workers_exit_and_later_work_gets_a_new_one():
    pool = DaemonPool(8, name="idle-test", idle_timeout=0.01)
    gate = threading.Barrier(4, timeout=WAIT)

    def meet():
        gate.wait()
        return threading.current_thread()

    workers = {future.result(WAIT) for future in [pool.submit(meet) for _ in range(4)]}
    assert len(workers) == 4  # four at once: the barrier needs them all
    for worker in workers:
        worker.join(WAIT)  # each leaves after 10 ms without work; no shutdown
    assert not any(worker.is_alive() for worker in workers) and pool._threads == []
    later = pool.submit(threading.current_thread).result(WAIT)
    assert later.name.startswith("idle-test-") and later not in workers
    pool.shutdown(wait=True, timeout=WAIT)
    assert not later.is_alive()


def test_without_an_idle_limit_workers_stay_until_shutdown():
    pool = DaemonPool(2, name="kept-test")
    worker = pool.submit(threading.current_thread).result(WAIT)
    assert worker.is_alive() and pool._threads == [worker]
    pool.shutdown(wait=True, timeout=WAIT)
    assert not worker.is_alive()


def test_many_rounds_of_work_with_a_tiny_idle_limit_never_lose_a_piece_of_work():
    pool = DaemonPool(4, name="churn-test", idle_timeout=0.0005)
    try:
        for _ in range(200):
            assert [f.result(WAIT) for f in [pool.submit(lambda n=n: n) for n in range(3)]] == [0, 1, 2]
    finally:
        pool.shutdown(wait=True, timeout=WAIT)
