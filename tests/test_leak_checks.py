"""The leak checks the suite's autouse fixture relies on do see leaks."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support import leaks

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs Linux /proc")


def test_an_open_file_counts_as_a_new_descriptor_until_it_is_closed(tmp_path):
    before = leaks.open_fds()
    handle = open(tmp_path / "x", "w")
    try:
        assert handle.fileno() in leaks.new_fds(before)
    finally:
        handle.close()
    assert leaks.new_fds(before) == {}


def test_a_child_process_counts_until_it_is_reaped():
    before = leaks.children()
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        assert child.pid in leaks.children() - before
        child.stdin.close()
        assert child.wait(timeout=30) == 0
    finally:
        child.stdin.close()
        child.wait(timeout=30)
    assert child.pid not in leaks.children()
