"""MCP 2026-07-28 over Streamable HTTP: the discover probe and the routing headers (issue 21, item 14).

The real peer is the official SDK's server (tests/mcp_servers/sdk_server.py
over HTTP, stateful and stateless): it routes a POST by its
``MCP-Protocol-Version`` header and checks ``Mcp-Method`` and ``Mcp-Name``
against the body, so a client that leaves them out falls back to
2025-11-25 (``protocol="auto"``) or fails at connect (``"2026-07-28"``).
A scripted stdlib server shows the exact headers of a fallback.
"""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Iterator, List

import pytest

from agcore_sync.mcp import McpClient
from agcore_sync.mcp.transports._http_routing import header_value, routing_headers
from agcore_sync.mcp.transports.http import HttpTransport
from tests.mcp_servers.scripted_http import ScriptedServer

SDK_SERVER = Path(__file__).resolve().parents[2] / "mcp_servers" / "sdk_server.py"
#: Seconds the SDK server gets to print its LISTENING line.
SERVER_START_TIMEOUT = 30.0
#: Seconds the SDK server gets to exit after SIGTERM, then SIGKILL.
SERVER_STOP_TIMEOUT = 5.0
TIMEOUT = 10.0
MODERN = "2026-07-28"


def _start(flags: List[str], procs: List[subprocess.Popen]) -> str:
    proc = subprocess.Popen([sys.executable, str(SDK_SERVER), "http", "0", "--named", *flags],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    procs.append(proc)
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: lines.put(proc.stdout.readline()), name="test-sdk-listening",
                              daemon=True)
    reader.start()
    line = lines.get(timeout=SERVER_START_TIMEOUT)
    reader.join(TIMEOUT)
    assert line.startswith("LISTENING "), f"the SDK server did not start: {line!r}"
    return line.split()[1]


@pytest.fixture
def sdk_http() -> Iterator[Any]:
    """``sdk_http(*flags) -> url`` of the SDK test server over HTTP; stopped at teardown."""
    pytest.importorskip("mcp", reason="the SDK test server needs the `mcp` package (Python >= 3.10)")
    procs: List[subprocess.Popen] = []
    yield lambda *flags: _start(list(flags), procs)
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(SERVER_STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(SERVER_STOP_TIMEOUT)
        proc.stdout.close()


@pytest.mark.parametrize("flags", [(), ("--json-response",), ("--stateless", "--json-response")],
                         ids=["sse", "json", "stateless"])
@pytest.mark.parametrize("protocol", ["auto", MODERN])
def test_the_sdk_server_over_http_speaks_2026_07_28_with_auto_and_with_the_explicit_version(sdk_http, flags,
                                                                                              protocol):
    url = sdk_http(*flags)
    with McpClient("sdk-modern", HttpTransport(url), timeout=TIMEOUT, protocol=protocol) as client:
        assert client.negotiated_version == MODERN
        assert client.transport.session_id is None
        assert {"echo", "add"} <= {tool.name for tool in client.list_tools()}
        assert client.call_tool("add", {"a": 20, "b": 22}).text == "42"
        # Mcp-Name carries a name that is not ASCII base64-wrapped; the server checks it.
        [prompt] = [p for p in client.list_prompts() if p.name == "r\u00e9sum\u00e9"]
        result = client.get_prompt(prompt.name, {"topic": "tea"})
        assert "Summarise tea." in str(result.messages[0].content)
        [resource] = client.list_resources()
        assert [c.text for c in client.read_resource(resource.uri)] == ["espresso"]


@pytest.mark.parametrize("flags", [(), ("--stateless", "--json-response")], ids=["sse", "stateless"])
def test_input_required_results_are_answered_and_retried_over_http(sdk_http, flags):
    url = sdk_http(*flags)
    asked: List[Any] = []

    def elicit(params: Any) -> Any:
        asked.append(params)
        return {"action": "accept", "content": {"name": "Bo"}}

    def sample(params: Any) -> Any:
        return {"role": "assistant", "content": {"type": "text", "text": "modern answer"}, "model": "test-model"}

    with McpClient("sdk-modern", HttpTransport(url), timeout=TIMEOUT, protocol=MODERN,
                   elicitation_handler=elicit, sampling_handler=sample) as client:
        assert client.call_tool("elicit").text == "action=accept name=Bo color=blue count=3"
        assert client.call_tool("sample", {"prompt": "hey"}).text == "test-model: modern answer"
    assert len(asked) == 1


def _modern_or_handshake(ex: Any) -> None:
    """A server of the handshake era only: a version header it does not know is a 400."""
    version = ex.headers.get("mcp-protocol-version")
    if ex.method != "POST":
        ex.send_empty(405)
    elif version is not None and version != "2025-11-25":
        ex.send_json({"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": "bad version"}},
                     status=400)
    elif ex.rpc_method == "initialize":
        ex.send_json({"jsonrpc": "2.0", "id": ex.body["id"], "result": {
            "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
            "serverInfo": {"name": "old", "version": "1"}}})
    elif "id" not in ex.body:
        ex.send_empty(202)
    else:
        ex.send_json({"jsonrpc": "2.0", "id": ex.body["id"], "result": {"tools": []}})


def test_auto_probes_with_the_2026_headers_then_falls_back_to_an_initialize_without_them():
    with ScriptedServer(_modern_or_handshake) as server:
        with McpClient("old", HttpTransport(server.url, listen=False), timeout=TIMEOUT, protocol="auto") as client:
            assert client.negotiated_version == "2025-11-25"
            assert client.list_tools() == []
        posts = [r for r in server.requests if r.method == "POST"]
        assert [r.rpc_method for r in posts] == ["server/discover", "initialize", "notifications/initialized",
                                                 "tools/list"]
        discover, initialize, initialized, listed = posts
        assert discover.headers["mcp-protocol-version"] == MODERN
        assert discover.headers["mcp-method"] == "server/discover"
        assert "mcp-protocol-version" not in initialize.headers and "mcp-method" not in initialize.headers
        for later in (initialized, listed):
            assert later.headers["mcp-protocol-version"] == "2025-11-25" and "mcp-method" not in later.headers


def test_routing_headers_name_the_method_and_the_named_parameter_only_on_2026_07_28():
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "add", "arguments": {}}}
    assert routing_headers(call, MODERN) == {"Mcp-Method": "tools/call", "Mcp-Name": "add"}
    assert routing_headers(call, "2025-11-25") == {} and routing_headers(call, None) == {}
    read = {"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": "file:///a b"}}
    assert routing_headers(read, MODERN)["Mcp-Name"] == "file:///a b"
    assert routing_headers({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, MODERN) == {"Mcp-Method": "tools/list"}
    assert header_value("caf\u00e9") == "=?base64?Y2Fmw6k=?="
    assert header_value(" padded") == "=?base64?IHBhZGRlZA==?="
    assert header_value("=?base64?eA==?=").startswith("=?base64?PT9")
