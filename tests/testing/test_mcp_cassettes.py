"""MCP cassettes: a session recorded against a real subprocess server, replayed with no process and no socket."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agcore_sync.mcp import McpClient, StdioTransport
from agcore_sync.testing import CassetteError, CassetteMismatchError, RecordingTransport, ReplayTransport

RAW_SERVER = str(Path(__file__).resolve().parents[1] / "mcp_servers" / "raw_server.py")
ROOTS = [{"uri": "file:///srv/notes", "name": "notes"}]
#: Bound on every MCP answer of these tests.
TIMEOUT = 20.0


def run_session(client: McpClient):
    """Initialize (by the caller), list, call, a notification, a server request, in order."""
    tools = [tool.name for tool in client.list_tools()]
    echoed = client.call_tool("echo", {"text": "hello"}).text
    notified = client.call_tool("notify", {"level": "info"}).text
    asked = json.loads(client.call_tool("ask", {"method": "roots/list", "params": {}}).text)
    return {"tools": tools, "echoed": echoed, "notified": notified, "asked": asked,
            "version": client.negotiated_version, "server": client.server_info}


def record(path: Path):
    transport = RecordingTransport(StdioTransport(sys.executable, [RAW_SERVER]), path)
    with McpClient("raw", transport, timeout=TIMEOUT, roots=ROOTS) as client:
        return run_session(client)


@pytest.fixture
def no_process(monkeypatch):
    """No subprocess may start while the test runs after this fixture."""
    started = []

    def refuse(*args, **kwargs):
        started.append(args)
        raise OSError("the test forbids starting processes")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    return started


def rows(path: Path):
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def test_a_recorded_session_replays_without_the_server_process(tmp_path, request):
    cassette = tmp_path / "raw.jsonl"
    live = record(cassette)
    started = request.getfixturevalue("no_process")
    guard = request.getfixturevalue("no_network")

    with McpClient("raw", ReplayTransport(cassette), timeout=TIMEOUT, roots=ROOTS) as client:
        replayed = run_session(client)

    assert replayed == live and started == [] and guard.attempts == []
    assert live["echoed"] == "hello" and live["asked"]["result"] == {"roots": ROOTS}
    header, *messages = rows(cassette)
    assert header["kind"] == "mcp" and header["transport"] == "StdioTransport"
    assert all(set(row) == {"from", "message"} for row in messages)  # one row per message
    methods = [(row["from"], row["message"].get("method")) for row in messages]
    assert methods[:3] == [("client", "initialize"), ("server", None), ("client", "notifications/initialized")]
    assert ("server", "notifications/message") in methods and ("server", "roots/list") in methods


def test_calls_replayed_in_another_order_get_their_own_answers(tmp_path):
    cassette = tmp_path / "order.jsonl"
    transport = RecordingTransport(StdioTransport(sys.executable, [RAW_SERVER]), cassette)
    with McpClient("raw", transport, timeout=TIMEOUT) as client:
        assert [client.call_tool("echo", {"text": t}).text for t in ("a", "b")] == ["a", "b"]

    with McpClient("raw", ReplayTransport(cassette), timeout=TIMEOUT) as client:
        assert client.call_tool("echo", {"text": "b"}).text == "b"
        assert client.call_tool("echo", {"text": "a"}).text == "a"


def test_calls_from_several_threads_replay_each_to_its_caller(tmp_path):
    cassette = tmp_path / "threads.jsonl"
    texts = [f"t{i}" for i in range(4)]
    transport = RecordingTransport(StdioTransport(sys.executable, [RAW_SERVER]), cassette)
    with McpClient("raw", transport, timeout=TIMEOUT) as client:
        for text in texts:
            client.call_tool("echo", {"text": text})

    results = {}
    with McpClient("raw", ReplayTransport(cassette), timeout=TIMEOUT) as client:
        start = threading.Barrier(len(texts))

        def call(text: str) -> None:
            start.wait(TIMEOUT)
            results[text] = client.call_tool("echo", {"text": text}).text

        threads = [threading.Thread(target=call, args=(t,), name=f"agcore-test-{t}") for t in reversed(texts)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(TIMEOUT)
        assert not any(thread.is_alive() for thread in threads)
    assert results == {text: text for text in texts}


def test_a_drifting_call_names_the_first_differing_path(tmp_path):
    cassette = tmp_path / "drift.jsonl"
    transport = RecordingTransport(StdioTransport(sys.executable, [RAW_SERVER]), cassette)
    with McpClient("raw", transport, timeout=TIMEOUT) as client:
        client.call_tool("echo", {"text": "hello"})

    replay = ReplayTransport(cassette)
    with McpClient("raw", replay, timeout=TIMEOUT) as client:
        with pytest.raises(CassetteMismatchError) as caught:
            client.call_tool("echo", {"text": "goodbye"})
    error = caught.value
    assert error.json_path == "$.params.arguments.text" and (error.recorded, error.sent) == ("hello", "goodbye")
    assert "recorded 'hello', sent 'goodbye'" in str(error) and replay.mismatches == [error]


def test_an_mcp_cassette_and_a_provider_cassette_are_not_interchangeable(tmp_path):
    from agcore_sync.llm.mock import MockProvider
    from agcore_sync.llm.types import Message, MessageRequest
    from agcore_sync.testing import RecordingProvider, ReplayProvider

    RecordingProvider(MockProvider([MockProvider.text("hi")]), tmp_path / "llm.jsonl").chat(
        MessageRequest(None, [Message.user("hi")]))
    with pytest.raises(CassetteError, match="is a 'llm' cassette, not a 'mcp' one"):
        ReplayTransport(tmp_path / "llm.jsonl")
    record(tmp_path / "mcp.jsonl")
    with pytest.raises(CassetteError, match="is a 'mcp' cassette, not a 'llm' one"):
        ReplayProvider(tmp_path / "mcp.jsonl")


def test_a_corrupt_mcp_row_is_refused_naming_the_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"agcore_cassette": 1, "kind": "mcp", "transport": "StdioTransport"}\n'
                    '{"from": "client", "message": {"jsonrpc": "2.0"}}\n{"from": "nobody", "message": {}}\n')
    with pytest.raises(CassetteError, match=r"line 3: not an MCP message row") as caught:
        ReplayTransport(path)
    assert caught.value.line == 3


def test_recording_into_a_path_that_cannot_be_written_fails_before_the_server_starts(tmp_path, no_process):
    (tmp_path / "file").write_text("")
    with pytest.raises(CassetteError, match="cannot write cassette"):
        RecordingTransport(StdioTransport(sys.executable, [RAW_SERVER]), tmp_path / "file" / "c.jsonl")
    with pytest.raises(TypeError, match="MCP Transport"):
        RecordingTransport(object(), tmp_path / "c.jsonl")
    assert no_process == []
