"""A server that dies mid-call: every pending call fails at once, with the exit code and stderr."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from agcore_sync.tools.error import McpConnectionError

CALL_TIMEOUT = 30.0
#: "Well under the timeout": generous for a loaded machine, far below 30 s.
PROMPT = 5.0
PENDING = 6
WAIT = 20.0


def test_killing_the_server_fails_every_pending_call_at_once(open_client, raw_server):
    arrived = threading.Semaphore(0)
    outcomes = {}
    lock = threading.Lock()

    with open_client(raw_server, timeout=CALL_TIMEOUT, on_progress=lambda params: arrived.release()) as client:

        def call(label: int) -> None:
            try:
                client.call_tool("hang", {"label": str(label)})
                outcome = None
            except Exception as exc:  # noqa: BLE001 - inspected below
                outcome = exc
            with lock:
                outcomes[label] = (outcome, time.monotonic())

        threads = [threading.Thread(target=call, args=(i,)) for i in range(PENDING)]
        for thread in threads:
            thread.start()
        for _ in range(PENDING):  # each hang call reports its arrival with a progress notification
            assert arrived.acquire(timeout=WAIT)
        killed_at = time.monotonic()
        os.kill(client.transport.pid, signal.SIGKILL)
        for thread in threads:
            thread.join(WAIT)
        assert not any(thread.is_alive() for thread in threads)

        started = time.monotonic()
        with pytest.raises(McpConnectionError) as later:
            client.call_tool("echo", {"text": "too late"})
        assert time.monotonic() - started < 1.0, "later calls fail immediately"

    assert sorted(outcomes) == list(range(PENDING))
    for label, (error, failed_at) in outcomes.items():
        assert isinstance(error, McpConnectionError), (label, error)
        assert error.exit_code == -signal.SIGKILL
        assert error.recoverable is False
        assert failed_at - killed_at < PROMPT, "failed at once, not after the 30 s timeout"
        assert "hang received" in error.stderr_tail
    assert later.value.exit_code == -signal.SIGKILL
    assert "hang received" in later.value.stderr_tail


def test_a_server_exiting_mid_call_reports_its_exit_code_and_last_stderr_lines(open_client, raw_server):
    with open_client(raw_server, timeout=CALL_TIMEOUT) as client:
        started = time.monotonic()
        with pytest.raises(McpConnectionError) as caught:
            client.call_tool("crash", {"code": 3, "lines": ["fatal: out of cheese", "giving up"]})
        assert time.monotonic() - started < PROMPT
        with pytest.raises(McpConnectionError) as again:
            client.list_tools()
    error = caught.value
    assert error.exit_code == 3
    assert error.stderr_tail.splitlines()[-2:] == ["fatal: out of cheese", "giving up"]
    assert "'test'" in str(error) and "code 3" in str(error)
    assert (again.value.exit_code, again.value.stderr_tail) == (3, error.stderr_tail)


def test_stderr_tail_keeps_only_the_last_twenty_lines(open_client, raw_server):
    with open_client(raw_server + ["--stderr-lines", "30"]) as client:
        with pytest.raises(McpConnectionError) as caught:
            client.call_tool("crash", {"code": 1, "lines": ["last words"]})
    lines = caught.value.stderr_tail.splitlines()
    assert len(lines) == 20
    assert lines[-1] == "last words"
    assert lines[0] == "raw_server start-up line 11"


def test_the_connection_error_pickles_with_its_facts(open_client, raw_server):
    import pickle

    with open_client(raw_server) as client:
        with pytest.raises(McpConnectionError) as caught:
            client.call_tool("crash", {"code": 7, "lines": ["x"]})
    copy = pickle.loads(pickle.dumps(caught.value))
    assert (copy.exit_code, copy.stderr_tail, str(copy)) == (7, caught.value.stderr_tail, str(caught.value))
