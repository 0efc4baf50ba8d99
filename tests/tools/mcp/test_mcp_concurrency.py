"""Many threads, one client: every caller gets its own answer."""

from __future__ import annotations

import queue
import threading

THREADS = 32
CALLS = 1000
JOIN_TIMEOUT = 120.0


def test_a_thousand_calls_from_32_threads_each_get_their_own_answer(open_client, sdk_server):
    failures: queue.Queue[str] = queue.Queue()
    done = []
    done_lock = threading.Lock()
    with open_client(sdk_server, timeout=60.0) as client:
        barrier = threading.Barrier(THREADS)

        def caller(worker: int) -> None:
            barrier.wait()
            for n in range(worker, CALLS, THREADS):
                try:
                    if n % 2:
                        result = client.call_tool("echo", {"text": f"call-{n}"})
                        expected = f"call-{n}"
                    else:
                        result = client.call_tool("add", {"a": n, "b": 1000})
                        expected = str(n + 1000)
                    if result.text != expected:
                        failures.put(f"call {n} got {result.text!r}, expected {expected!r}")
                except Exception as exc:  # noqa: BLE001 - reported below
                    failures.put(f"call {n} raised {exc!r}")
                with done_lock:
                    done.append(n)

        threads = [threading.Thread(target=caller, args=(i,)) for i in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(JOIN_TIMEOUT)
        assert not any(thread.is_alive() for thread in threads)
        ids = [m["id"] for m in client.transport.requests("tools/call")]
    assert list(failures.queue) == []
    assert sorted(done) == list(range(CALLS))
    assert len(ids) == len(set(ids)) == CALLS, "every request had its own id"
