"""Suite-wide fixtures: a clean environment and a thread-leak check."""

from __future__ import annotations

import os
import threading

import pytest

#: How long a test's leftover threads get to finish before the test fails.
THREAD_EXIT_TIMEOUT = 10.0


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch):
    """Remove provider keys and URLs so no test reaches a real API by accident."""
    for name in list(os.environ):
        if name.endswith("_API_KEY") or name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
            monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def no_leaked_threads():
    """Fail a test that leaves a thread running after it ends."""
    before = set(threading.enumerate())
    yield
    leaked = []
    for thread in threading.enumerate():
        if thread in before or thread is threading.current_thread():
            continue
        thread.join(THREAD_EXIT_TIMEOUT)
        if thread.is_alive():
            leaked.append(thread.name)
    assert not leaked, f"threads left running: {leaked}"
