"""Shutdown: no zombie, no orphaned grandchild, idempotent and bounded close()."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from agcore_sync.mcp.transports.stdio import FORCE_KILL_TIMEOUT, PROCESS_TERMINATION_TIMEOUT
from agcore_sync.tools.error import McpConnectionError

NODE_DIR = Path(__file__).resolve().parents[2] / "node"
#: Slack on top of the transport's own bounds, for a loaded machine.
SLACK = 3.0


def group_is_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def assert_reaped(pid: int) -> None:
    """The server is no zombie: it was already reaped, so waitpid finds no such child."""
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def test_close_reaps_the_server_and_its_process_group_is_gone(open_client, sdk_server):
    client = open_client(sdk_server)
    client.connect()
    pid = client.transport.pid
    client.close()
    assert client.transport.returncode == 0, "the SDK server exits by itself when its stdin closes"
    assert_reaped(pid)
    assert group_is_gone(pid)
    assert not [t.name for t in threading.enumerate() if t.name.startswith("agcore-mcp-")]


def test_leaving_the_with_block_stops_the_server(open_client, raw_server):
    with open_client(raw_server) as client:
        pid = client.transport.pid
        assert not group_is_gone(pid)
    assert_reaped(pid)
    assert group_is_gone(pid)


def test_close_is_idempotent_and_safe_from_several_threads(open_client, raw_server):
    client = open_client(raw_server)
    client.connect()
    pid = client.transport.pid
    threads = [threading.Thread(target=client.close) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(PROCESS_TERMINATION_TIMEOUT + FORCE_KILL_TIMEOUT + SLACK)
    assert not any(thread.is_alive() for thread in threads)
    client.close()
    assert_reaped(pid)


def test_a_server_ignoring_stdin_eof_and_sigterm_is_killed_within_the_bound(open_client, raw_server):
    client = open_client(raw_server + ["--ignore-eof", "--ignore-term"])
    client.connect()
    pid = client.transport.pid
    started = time.monotonic()
    client.close()
    elapsed = time.monotonic() - started
    assert elapsed < PROCESS_TERMINATION_TIMEOUT + FORCE_KILL_TIMEOUT + SLACK
    assert elapsed >= PROCESS_TERMINATION_TIMEOUT, "stdin EOF got its grace period first"
    assert client.transport.returncode == -signal.SIGKILL
    assert_reaped(pid)
    assert group_is_gone(pid)


def test_a_server_ignoring_stdin_eof_gets_sigterm(open_client, raw_server):
    client = open_client(raw_server + ["--ignore-eof"])
    client.connect()
    client.close()
    assert client.transport.returncode == -signal.SIGTERM


def test_a_lingering_grandchild_behind_a_shell_wrapper_is_stopped_too(open_client, raw_server, subreaper):
    # sh stays the leader (the command after ";" keeps it from exec'ing);
    # the server under it starts a grandchild that never exits by itself.
    script = f"{shlex.join(raw_server)} --grandchild; echo wrapper done >&2"
    client = open_client(["/bin/sh", "-c", script])
    client.connect()
    leader = client.transport.pid
    grandchild = int(client.call_tool("grandchild_pid").text)
    assert os.getpgid(grandchild) == leader
    client.close()
    assert_reaped(leader)
    assert group_is_gone(leader), "no process of the server's group survives close()"
    with pytest.raises(ProcessLookupError):
        os.kill(grandchild, 0)


@pytest.mark.skipif(shutil.which("npx") is None, reason="node/npx is not installed")
def test_a_server_behind_npx_leaves_no_process_behind(open_client, subreaper):
    if not (NODE_DIR / "node_modules" / ".bin" / "mcp-server-everything").exists():
        pytest.skip("the npm reference servers are not installed (.ci/run installs them into tests/node)")
    client = open_client(["npx", "--no-install", "mcp-server-everything"], timeout=60.0)
    client.transport.cwd = str(NODE_DIR)
    with client:
        leader = client.transport.pid
        assert client.call_tool("echo", {"message": "hi"}).text == "Echo: hi"
    assert_reaped(leader)
    assert group_is_gone(leader)


def test_closing_fails_calls_still_waiting_at_once(open_client, raw_server):
    errors = []
    with open_client(raw_server, timeout=30.0, on_progress=lambda params: arrived.set()) as client:
        arrived = threading.Event()

        def call() -> None:
            try:
                client.call_tool("hang", {"label": "pending"})
            except Exception as exc:  # noqa: BLE001 - inspected below
                errors.append(exc)

        thread = threading.Thread(target=call)
        thread.start()
        assert arrived.wait(10.0)
        started = time.monotonic()
        client.close()
        thread.join(10.0)
    assert not thread.is_alive()
    assert time.monotonic() - started < PROCESS_TERMINATION_TIMEOUT + FORCE_KILL_TIMEOUT + SLACK
    assert len(errors) == 1 and isinstance(errors[0], McpConnectionError)
    assert "closed" in str(errors[0])


def test_close_without_connect_does_nothing(open_client):
    client = open_client([sys.executable, "-c", "pass"])
    client.close()
    client.close()
    assert client.transport.pid is None
