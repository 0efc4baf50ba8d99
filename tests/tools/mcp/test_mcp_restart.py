"""Restarting a crashed server: RestartPolicy, McpClient(restart=...), idempotent retries.

Every server here is ``tests/mcp_servers/chaos_server.py --calm`` (its
``echo`` always behaves), whose ``--notify`` socket tells the test which
process started and which call reached it, so no test has to guess or poll.
"""

from __future__ import annotations

import logging
import math
import os
import select
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from agcore_sync.mcp import HttpTransport, McpClient, RestartPolicy, StdioTransport
from agcore_sync.tools.error import McpConnectionError, McpError, McpTimeoutError

CHAOS_SERVER = str(Path(__file__).resolve().parents[2] / "mcp_servers" / "chaos_server.py")
#: Bound on waiting for a server event; far above what a healthy run needs.
EVENT_TIMEOUT = 20.0
#: "At once" / "promptly": generous for a loaded 2-core machine, far below the timeouts used.
PROMPT = 3.0
#: A client timeout no test should reach.
LONG = 30.0
FAST = RestartPolicy(max_restarts=3, initial_backoff=0.01, max_backoff=0.05)


class ServerEvents:
    """Lines the chaos servers write to a socket of ours (``--notify``), read without threads."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self._conns: List[socket.socket] = []
        self._buffers: Dict[socket.socket, bytes] = {}
        self._lines: List[str] = []
        #: Events passed over by :meth:`expect`, in order.
        self.skipped: List[str] = []

    def next(self, timeout: float = EVENT_TIMEOUT) -> str:
        """Return the next event line from any server (fails the test after ``timeout``)."""
        deadline = time.monotonic() + timeout
        while not self._lines:
            remaining = deadline - time.monotonic()
            assert remaining > 0, "no event from the server in time"
            readable, _, _ = select.select([self.listener, *self._conns], [], [], remaining)
            for sock in readable:
                if sock is self.listener:
                    conn, _ = self.listener.accept()
                    self._conns.append(conn)
                    self._buffers[conn] = b""
                    continue
                data = sock.recv(65536)
                if not data:
                    self._conns.remove(sock)
                    sock.close()
                    continue
                buffer = self._buffers[sock] + data
                *lines, self._buffers[sock] = buffer.split(b"\n")
                self._lines.extend(line.decode() for line in lines)
        return self._lines.pop(0)

    def expect(self, prefix: str) -> str:
        """Return the next event that starts with ``prefix``; the events before it go to ``skipped``."""
        while True:
            event = self.next()
            if event.startswith(prefix):
                return event
            self.skipped.append(event)

    def close(self) -> None:
        for conn in self._conns:
            conn.close()
        self.listener.close()


class RestartSignal(logging.Handler):
    """Sets ``waiting`` when the client logs that it will restart the server (the backoff began)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.waiting = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("restarting MCP server"):
            self.waiting.set()


@pytest.fixture
def events():
    log = ServerEvents()
    yield log
    log.close()


@pytest.fixture
def restart_signal():
    handler = RestartSignal()
    logger = logging.getLogger("agcore_sync.mcp")
    logger.addHandler(handler)
    yield handler
    logger.removeHandler(handler)


@pytest.fixture
def make_client(events):
    """Return ``make(*server_args, restart=..., timeout=...) -> McpClient`` (connected); all closed at teardown."""
    made: List[McpClient] = []

    def make(*server_args: str, restart: Optional[RestartPolicy] = FAST, timeout: float = LONG) -> McpClient:
        argv = [CHAOS_SERVER, "--calm", "--notify", str(events.port), *server_args]
        client = McpClient("chaos", StdioTransport(sys.executable, argv), timeout=timeout, restart=restart)
        made.append(client)
        client.connect()
        events.expect("started")
        events.expect("initialize")
        return client

    yield make
    for client in made:
        client.close()


def pid_of(client: McpClient, events: ServerEvents) -> int:
    """Ask the server its pid (consuming the call's event)."""
    pid = int(client.call_tool("pid").text)
    assert events.expect("call pid").split()[-1] == str(pid)
    return pid


def group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def crash(client: McpClient, events: ServerEvents) -> float:
    """Make the server die mid-call; return when its call failed (perf_counter)."""
    with pytest.raises(McpConnectionError):
        client.call_tool("crash", {"code": 3})
    events.expect("call crash")
    return time.perf_counter()


# -- RestartPolicy --------------------------------------------------------


def test_the_backoff_doubles_from_initial_backoff_up_to_max_backoff():
    policy = RestartPolicy()
    assert (policy.max_restarts, policy.initial_backoff, policy.max_backoff) == (3, 0.5, 10.0)
    assert [policy.backoff(k) for k in range(7)] == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    assert RestartPolicy(5, 0.1, 0.3).backoff(1) == pytest.approx(0.2)
    assert RestartPolicy(initial_backoff=0.0).backoff(50) == 0.0
    assert policy.backoff(10**6) == 10.0, "no OverflowError for a huge attempt number"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_restarts": -1},
        {"max_restarts": 1.5},
        {"max_restarts": True},
        {"initial_backoff": -0.1},
        {"initial_backoff": math.nan},
        {"max_backoff": math.inf},
        {"max_backoff": "1"},
    ],
)
def test_a_policy_refuses_negative_or_non_finite_values(kwargs):
    with pytest.raises(ValueError):
        RestartPolicy(**kwargs)


def test_restart_needs_a_transport_that_can_start_again():
    class OneShot(StdioTransport):
        restartable = False

    with pytest.raises(ValueError, match="StdioTransport, HttpTransport"):
        McpClient("remote", OneShot(sys.executable), restart=RestartPolicy())
    with pytest.raises(TypeError):
        McpClient("local", StdioTransport(sys.executable), restart={"max_restarts": 3})
    transport = HttpTransport("http://127.0.0.1:9/mcp")
    try:
        McpClient("remote", transport, restart=RestartPolicy())  # HTTP restarts: a new session
    finally:
        transport.close()


def test_a_second_start_of_a_stdio_transport_stops_the_old_process_and_starts_a_fresh_one(events):
    losses: List[McpConnectionError] = []
    transport = StdioTransport(sys.executable, [CHAOS_SERVER, "--calm", "--notify", str(events.port)])
    try:
        transport.start(lambda message: None, losses.append)
        first = int(events.expect("started").split()[1])
        transport.start(lambda message: None, losses.append)
        second = int(events.expect("started").split()[1])
        assert first != second and transport.pid == second
        assert group_gone(first), "the first process was stopped and reaped by the second start()"
        assert losses == [], "stopping the old process is not reported as a loss"
    finally:
        transport.close()
    assert group_gone(second)
    with pytest.raises(McpConnectionError, match="closed"):
        transport.start(lambda message: None, losses.append)


# -- restarting -------------------------------------------------------------


def test_after_a_crash_pending_calls_fail_at_once_and_later_calls_reach_a_new_process(make_client, events):
    policy = RestartPolicy(max_restarts=3, initial_backoff=0.3, max_backoff=1.0)
    client = make_client(restart=policy)
    first = pid_of(client, events)
    described = client.list_tools()[0].description
    assert f"pid {first}" in described
    outcome: Dict[str, Any] = {}

    def hang() -> None:
        try:
            client.call_tool("hang", {"text": "pending"})
        except McpError as exc:
            outcome["error"], outcome["at"] = exc, time.perf_counter()

    waiter = threading.Thread(target=hang)
    waiter.start()
    events.expect("call hang pending")
    crashed_at = crash(client, events)
    waiter.join(PROMPT)
    assert not waiter.is_alive(), "the pending call failed at once, not after its 30 s timeout"
    assert isinstance(outcome["error"], McpConnectionError)
    assert outcome["at"] - crashed_at < PROMPT

    second = int(events.expect("started").split()[1])
    started_at = time.perf_counter()
    events.expect("initialize")
    assert started_at - crashed_at >= 0.25, "the restart waited its backoff (0.3 s) first"
    assert pid_of(client, events) == second != first
    assert client.restart_count == 1
    assert f"pid {second}" in client.list_tools()[0].description, "the tools cache was dropped"
    assert group_gone(first), "the crashed process was reaped by the restart"


def test_a_call_made_during_the_backoff_waits_for_the_new_process(make_client, events):
    client = make_client(restart=RestartPolicy(max_restarts=3, initial_backoff=0.3, max_backoff=1.0))
    first = pid_of(client, events)
    crash(client, events)
    began = time.perf_counter()
    second = pid_of(client, events)
    assert second != first
    assert time.perf_counter() - began >= 0.2, "it waited for the restart instead of failing"


def test_a_call_waiting_for_a_restart_fails_within_its_own_timeout(make_client, events, restart_signal):
    client = make_client(restart=RestartPolicy(max_restarts=3, initial_backoff=LONG, max_backoff=LONG))
    crash(client, events)
    assert restart_signal.waiting.wait(EVENT_TIMEOUT)
    began = time.perf_counter()
    with pytest.raises(McpConnectionError, match="being restarted") as caught:
        client.call_tool("pid", timeout=0.3)
    assert 0.25 <= time.perf_counter() - began < 0.3 + PROMPT
    assert caught.value.exit_code == 3, "the error says why the server went away"


def test_after_max_restarts_without_a_successful_call_the_client_gives_up(make_client, events):
    client = make_client(restart=RestartPolicy(max_restarts=2, initial_backoff=0.01, max_backoff=0.02))
    crash(client, events)
    for _ in range(2):  # each call waits for the next restart, then crashes the new process
        crash(client, events)
    with pytest.raises(McpConnectionError, match="not restarted again") as caught:
        client.call_tool("pid")
    began = time.perf_counter()
    with pytest.raises(McpConnectionError, match="not restarted again"):
        client.call_tool("pid")
    assert time.perf_counter() - began < 1.0, "once given up, calls fail at once"
    assert client.restart_count == 2
    assert caught.value.exit_code == 3 and "max_restarts=2" in str(caught.value)


def test_a_successful_call_resets_the_restart_count(make_client, events):
    client = make_client(restart=RestartPolicy(max_restarts=1, initial_backoff=0.01, max_backoff=0.02))
    pids = {pid_of(client, events)}
    for _ in range(3):
        crash(client, events)
        pids.add(pid_of(client, events))  # answered: the next crash may restart again
    assert len(pids) == 4
    assert client.restart_count == 3


def test_a_call_that_could_not_be_written_waits_for_the_restart_and_goes_to_the_new_process(make_client, events):
    # Regression (found by the chaos run): a write that fails before the loss
    # is reported (the transport first reaps the exit code) raised at once,
    # so with restart on, calls right after a crash failed although a new
    # process was on its way. A request that was never written is resent.
    client = make_client()
    first = pid_of(client, events)
    assert client.call_tool("close_stdin", {"linger": 0.5}).text == "stdin closed"
    events.expect("call close_stdin")
    second = pid_of(client, events)  # its write fails with EPIPE: the server no longer reads
    assert second != first
    assert client.restart_count == 1


def test_without_restart_calls_after_a_loss_fail_at_once_and_name_their_tool(make_client, events):
    # Regression (found by the chaos run): the error raised before sending,
    # once the server was known lost, had tool_name None.
    client = make_client(restart=None)
    crash(client, events)
    began = time.perf_counter()
    with pytest.raises(McpConnectionError) as caught:
        client.call_tool("echo", {"text": "late"})
    assert time.perf_counter() - began < 1.0
    assert caught.value.tool_name == "echo"
    assert "create a new McpClient" in str(caught.value)
    assert client.restart_count == 0


def test_failed_restarts_count_too_and_the_last_failure_is_reported(make_client, events, tmp_path):
    refuse = tmp_path / "refuse"
    client = make_client("--fail-start-if", str(refuse),
                         restart=RestartPolicy(max_restarts=2, initial_backoff=0.01, max_backoff=0.02))
    refuse.touch()
    crash(client, events)
    with pytest.raises(McpConnectionError, match="not restarted again") as caught:
        client.call_tool("pid")
    assert client.restart_count == 0
    assert caught.value.exit_code == 5
    assert "chaos: refusing to start" in caught.value.stderr_tail


def test_closing_during_the_backoff_returns_promptly_and_fails_waiting_calls(make_client, events, restart_signal):
    client = make_client(restart=RestartPolicy(max_restarts=3, initial_backoff=LONG, max_backoff=LONG))
    pgid = client.transport.pid
    crash(client, events)
    assert restart_signal.waiting.wait(EVENT_TIMEOUT)
    outcome: Dict[str, Any] = {}

    def wait_for_restart() -> None:
        try:
            client.call_tool("pid")
        except McpError as exc:
            outcome["error"] = exc

    waiter = threading.Thread(target=wait_for_restart)
    waiter.start()
    began = time.perf_counter()
    client.close()
    assert time.perf_counter() - began < PROMPT
    waiter.join(PROMPT)
    assert not waiter.is_alive()
    assert isinstance(outcome["error"], McpConnectionError) and "closed" in str(outcome["error"])
    assert not [t.name for t in threading.enumerate() if t.name.startswith("agcore-mcp-")]
    assert group_gone(pgid)


def test_closing_during_the_restart_handshake_returns_promptly(make_client, events, tmp_path):
    stall = tmp_path / "stall"
    client = make_client("--stall-init-if", str(stall))
    stall.touch()
    crash(client, events)
    second = int(events.expect("started").split()[1])
    events.expect("initialize")  # the restart is now waiting for the answer to initialize
    began = time.perf_counter()
    client.close()
    assert time.perf_counter() - began < PROMPT
    assert client.restart_count == 0
    assert not [t.name for t in threading.enumerate() if t.name.startswith("agcore-mcp-")]
    assert group_gone(second)


# -- idempotent tools ---------------------------------------------------------


def executions(calls_file: Path, tool: str) -> int:
    return sum(1 for line in calls_file.read_text().splitlines() if line.split(" ", 1)[0] == tool)


def test_an_idempotent_tool_is_retried_once_after_the_server_went_away(make_client, tmp_path):
    calls = tmp_path / "calls"
    client = make_client("--calls", str(calls))
    tools = {tool.name: tool for tool in client.into_tools(idempotent=("crash_once",))}
    assert tools["crash_once"].idempotent and not tools["echo"].idempotent
    answer = tools["crash_once"].execute({"text": "twice", "marker": str(tmp_path / "crashed")})
    assert answer == "echo twice"
    assert executions(calls, "crash_once") == 2
    assert client.restart_count == 1


def test_a_tool_not_listed_as_idempotent_is_not_retried(make_client, tmp_path):
    calls = tmp_path / "calls"
    client = make_client("--calls", str(calls))
    tools = {tool.name: tool for tool in client.into_tools(prefix="srv_", idempotent=("echo",))}
    with pytest.raises(McpConnectionError):
        tools["srv_crash_once"].execute({"text": "once", "marker": str(tmp_path / "crashed")})
    assert executions(calls, "crash_once") == 1


def test_errors_other_than_a_lost_server_are_never_retried(make_client, tmp_path):
    calls = tmp_path / "calls"
    client = make_client("--calls", str(calls), timeout=0.5)
    tools = {tool.name: tool for tool in client.into_tools(idempotent=("fail", "hang"))}
    with pytest.raises(McpError) as refused:
        tools["fail"].execute({"text": "no"})
    assert refused.value.code == -32000 and not isinstance(refused.value, McpConnectionError)
    with pytest.raises(McpTimeoutError):
        tools["hang"].execute({"text": "slow"})
    assert tools["echo"].execute({"text": "still here"}) == "echo still here"
    assert (executions(calls, "fail"), executions(calls, "hang")) == (1, 1)
    assert client.restart_count == 0


def test_idempotent_names_must_be_tools_of_the_server(make_client):
    client = make_client()
    with pytest.raises(ValueError, match="does_not_exist"):
        client.into_tools(idempotent=("echo", "does_not_exist"))
    with pytest.raises(TypeError):
        client.into_tools(idempotent="echo")
