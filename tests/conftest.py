"""Suite-wide fixtures: a clean environment and a leak check (threads, processes, descriptors).

The terminal summary also warns about modules of the package over the module-size hint.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from tests.support import leaks, module_size

#: Fixtures every test may use, registered here instead of imported per module.
pytest_plugins = ["tests.support.stream_server", "tests.support.tools", "pytester"]

#: How long a test's leftover threads get to finish before the test fails.
THREAD_EXIT_TIMEOUT = 10.0


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch):
    """Remove provider keys and URLs so no test reaches a real API by accident."""
    for name in list(os.environ):
        if name.endswith("_API_KEY") or name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL") or name.startswith("AWS_"):
            monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def no_leaks():
    """Fail a test that leaves a thread, a child process or a file descriptor behind."""
    threads_before = set(threading.enumerate())
    children_before = leaks.children()
    fds_before = leaks.open_fds()
    yield
    leaked = []
    for thread in threading.enumerate():
        if thread in threads_before or thread is threading.current_thread():
            continue
        thread.join(THREAD_EXIT_TIMEOUT)
        if thread.is_alive():
            leaked.append(thread.name)
    assert not leaked, f"threads left running: {leaked}"
    children = leaks.children() - children_before
    assert not children, f"child processes left behind (not reaped): {sorted(children)}"
    fds = leaks.new_fds(fds_before)
    assert not fds, f"file descriptors left open: {fds}"


def pytest_terminal_summary(terminalreporter):
    """Print a warning line for each module of the package over the ~500-line hint (never a failure)."""
    module_size.warn_long_modules(terminalreporter, Path(__file__).resolve().parents[1] / "agcore_sync")
