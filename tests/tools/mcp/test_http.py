"""HttpTransport (MCP Streamable HTTP) against the SDK test server and a scripted stdlib server.

The SDK server (tests/mcp_servers/sdk_server.py, official ``mcp`` package) is
the real peer: JSON and SSE answers, sessions, the version header check,
resumption of a stream it drops, a server request on a POST stream. The
scripted server (tests/mcp_servers/scripted_http.py) shows what a real
server does not let a test see or force: the exact headers sent, the wait
between a cut and the reconnection, a 404 for a lost session, 405s.
"""

from __future__ import annotations

import importlib.util
import json
import queue
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest
import requests

from agcore_sync.mcp import McpClient
from agcore_sync.mcp.transports.http import CONNECTION_CLOSED, HttpTransport
from agcore_sync.tools.error import McpConnectionError, McpError, McpTimeoutError

SERVERS = Path(__file__).resolve().parents[2] / "mcp_servers"
SDK_SERVER = SERVERS / "sdk_server.py"


def _load_scripted_http() -> Any:
    """Import tests/mcp_servers/scripted_http.py by path (tests/ is not a package)."""
    spec = importlib.util.spec_from_file_location("scripted_http", SERVERS / "scripted_http.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("scripted_http", module)
    spec.loader.exec_module(module)
    return module


_scripted = _load_scripted_http()
Exchange = _scripted.Exchange
ScriptedServer = _scripted.ScriptedServer
#: Seconds a server subprocess gets to start accepting connections.
SERVER_START_TIMEOUT = 30.0
#: Seconds a server subprocess gets to exit after SIGTERM, then SIGKILL.
SERVER_STOP_TIMEOUT = 5.0
#: Seconds any single expected message may take to arrive.
MESSAGE_TIMEOUT = 10.0

VERSION = "2025-11-25"


# -- the SDK server ------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_until_listening(proc: subprocess.Popen, port: int) -> None:
    """Connect until the port accepts, bounded by a deadline; fail fast if the server died."""
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1.0).close()
            return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"SDK server did not listen on port {port} within {SERVER_START_TIMEOUT}s")
        try:
            # Paces the loop (no sleep) and notices a server that exited.
            code = proc.wait(0.05)
        except subprocess.TimeoutExpired:
            continue
        raise AssertionError(f"SDK server exited with {code} before listening")


@pytest.fixture
def sdk_http_server(tmp_path):
    """Start the SDK test server over streamable HTTP: ``sdk_http_server(*flags) -> url``."""
    pytest.importorskip("mcp", reason="the SDK test server needs the `mcp` package (Python >= 3.10)")
    procs: List[subprocess.Popen] = []

    def start(*flags: str) -> str:
        port = _free_port()
        stderr = open(tmp_path / f"sdk_server_{port}.log", "wb")  # noqa: SIM115 - closed below
        try:
            proc = subprocess.Popen([sys.executable, str(SDK_SERVER), "http", str(port), *flags],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr)
        finally:
            stderr.close()
        procs.append(proc)
        _wait_until_listening(proc, port)
        return f"http://127.0.0.1:{port}/mcp"

    yield start
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(SERVER_STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(SERVER_STOP_TIMEOUT)


class Inbox:
    """The callbacks a transport delivers to, with blocking reads for the test."""

    def __init__(self) -> None:
        self.messages: queue.Queue[Tuple[str, Dict[str, Any]]] = queue.Queue()
        self.closed: queue.Queue[McpConnectionError] = queue.Queue()

    def on_message(self, message: Dict[str, Any]) -> None:
        self.messages.put((threading.current_thread().name, message))

    def on_closed(self, error: McpConnectionError) -> None:
        self.closed.put(error)

    def next(self, timeout: float = MESSAGE_TIMEOUT) -> Tuple[str, Dict[str, Any]]:
        return self.messages.get(timeout=timeout)

    def until_response(self, request_id: Any) -> Tuple[List[Dict[str, Any]], Dict[str, Any], str]:
        """Return (messages before it, the response to request_id, the delivering thread's name)."""
        before = []
        while True:
            thread, message = self.next()
            if "method" not in message and message.get("id") == request_id:
                return before, message, thread
            before.append(message)


def _request(request_id: int, method: str, params: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    message: Dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def _connect(url: str, capabilities: Optional[Dict[str, Any]] = None, **kwargs: Any) -> Tuple[HttpTransport, Inbox]:
    """Open a transport and run the MCP handshake over it, as the client would."""
    transport = HttpTransport(url, **kwargs)
    inbox = Inbox()
    transport.start(inbox.on_message, inbox.on_closed)
    transport.send(_request(1, "initialize", {
        "protocolVersion": VERSION, "capabilities": capabilities or {},
        "clientInfo": {"name": "agcore-sync-tests", "version": "0"}}), timeout=MESSAGE_TIMEOUT)
    _, response, _ = inbox.until_response(1)
    transport.set_protocol_version(response["result"]["protocolVersion"])
    transport.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return transport, inbox


def _call(name: str, arguments: Dict[str, Any], request_id: int, **meta: Any) -> Dict[str, Any]:
    params: Dict[str, Any] = {"name": name, "arguments": arguments}
    if meta:
        params["_meta"] = meta
    return _request(request_id, "tools/call", params)


def test_a_json_answer_is_delivered_on_the_sending_thread_before_send_returns(sdk_http_server):
    url = sdk_http_server("--json-response")
    transport, inbox = _connect(url)
    try:
        transport.send(_call("add", {"a": 2, "b": 40}, 2), timeout=MESSAGE_TIMEOUT)
        thread, message = inbox.messages.get_nowait()
        assert thread == threading.current_thread().name
        assert message["id"] == 2
        assert message["result"]["structuredContent"] == {"result": 42}
    finally:
        transport.close()


def test_an_sse_answer_is_read_by_a_transport_thread_notifications_first(sdk_http_server):
    url = sdk_http_server()
    transport, inbox = _connect(url)
    try:
        transport.send(_call("progress", {"steps": 3}, 2, progressToken="tok"), timeout=MESSAGE_TIMEOUT)
        before, response, thread = inbox.until_response(2)
        assert thread.startswith("agcore-mcp-sse-")
        progress = [m["params"]["progress"] for m in before if m.get("method") == "notifications/progress"]
        assert progress == [1, 2, 3]
        assert response["result"]["content"][0]["text"] == "3 steps"
    finally:
        transport.close()


def test_the_session_id_from_initialize_names_the_session_until_close_deletes_it(sdk_http_server):
    url = sdk_http_server()
    transport, inbox = _connect(url)
    session_id = transport.session_id
    assert session_id
    transport.send(_call("echo", {"text": "in session"}, 2), timeout=MESSAGE_TIMEOUT)
    assert inbox.until_response(2)[1]["result"]["content"][0]["text"] == "in session"
    transport.close()
    # The DELETE sent by close() ended the session: the server no longer knows it.
    after = requests.post(url, json=_call("echo", {"text": "x"}, 3), timeout=MESSAGE_TIMEOUT, headers={
        "Accept": "application/json, text/event-stream", "Mcp-Session-Id": session_id,
        "MCP-Protocol-Version": VERSION})
    assert after.status_code == 404


def test_the_server_sees_the_negotiated_version_in_the_protocol_version_header(sdk_http_server):
    url = sdk_http_server()
    transport, inbox = _connect(url)
    try:
        # The server refuses a version it does not support with 400, so a
        # wrong header value is visible: this is what proves the header is sent.
        transport.set_protocol_version("1999-01-01")
        transport.send(_request(2, "tools/list"), timeout=MESSAGE_TIMEOUT)
        error = inbox.until_response(2)[1]["error"]
        assert error["data"]["http_status"] == 400
        transport.set_protocol_version(VERSION)
        transport.send(_request(3, "tools/list"), timeout=MESSAGE_TIMEOUT)
        names = {tool["name"] for tool in inbox.until_response(3)[1]["result"]["tools"]}
        assert {"echo", "add"} <= names
    finally:
        transport.close()


def test_a_stateless_server_gives_no_session_id_and_still_answers(sdk_http_server):
    url = sdk_http_server("--stateless", "--json-response")
    transport, inbox = _connect(url)
    try:
        assert transport.session_id is None
        transport.send(_call("add", {"a": 1, "b": 1}, 2), timeout=MESSAGE_TIMEOUT)
        assert inbox.until_response(2)[1]["result"]["structuredContent"] == {"result": 2}
    finally:
        transport.close()


def test_a_stream_the_sdk_server_drops_is_resumed_and_its_answer_arrives(sdk_http_server):
    url = sdk_http_server("--resumable", "--retry-ms", "100")
    transport, inbox = _connect(url)
    try:
        transport.send(_call("drop_stream", {"text": "after the gap"}, 2, progressToken="p"), timeout=MESSAGE_TIMEOUT)
        before, response, _ = inbox.until_response(2)
        assert [m["params"]["message"] for m in before if m.get("method") == "notifications/progress"] == [
            "before the drop", "after the drop"]
        assert response["result"]["content"][0]["text"] == "after the gap"
    finally:
        transport.close()


def test_a_server_request_on_an_open_post_stream_is_answered_with_a_new_post(sdk_http_server):
    url = sdk_http_server()
    transport, inbox = _connect(url, capabilities={"elicitation": {"form": {}}})
    try:
        transport.send(_call("elicit", {}, 2), timeout=MESSAGE_TIMEOUT)
        thread, ask = inbox.next()
        assert ask["method"] == "elicitation/create"
        assert thread.startswith("agcore-mcp-sse-")
        # The tools/call stream is still open while the answer goes out.
        transport.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"name": "Ada"}}})
        response = inbox.until_response(2)[1]
        assert response["result"]["content"][0]["text"] == "action=accept name=Ada color=blue count=3"
    finally:
        transport.close()


def test_the_get_stream_carries_what_the_server_sends_outside_any_request(sdk_http_server):
    url = sdk_http_server()
    transport, inbox = _connect(url)
    try:
        # The GET stream opens on a reader thread after notifications/initialized;
        # the server drops what it sends before the stream is there. So ask
        # again (a bounded number of times) until one notification arrives.
        changed: List[str] = []
        for request_id in range(2, 52):
            transport.send(_call("change_tools", {}, request_id), timeout=MESSAGE_TIMEOUT)
            while not inbox.messages.empty() or not changed:
                thread, message = inbox.next()
                if message.get("method") == "notifications/tools/list_changed":
                    changed.append(thread)
                elif message.get("id") == request_id:
                    break
            if changed:
                break
        assert changed and changed[0].startswith("agcore-mcp-get-")
    finally:
        transport.close()


def test_close_leaves_no_reader_thread_running(sdk_http_server):
    url = sdk_http_server()
    transport, inbox = _connect(url)
    transport.send(_call("slow", {"seconds": 30}, 2), timeout=MESSAGE_TIMEOUT)
    started = time.monotonic()
    transport.close()
    assert time.monotonic() - started < 5.0
    assert not [t.name for t in threading.enumerate() if t.name.startswith("agcore-mcp-")]
    with pytest.raises(McpConnectionError):
        transport.send(_request(3, "tools/list"))


# -- McpClient over HttpTransport, end to end -----------------------------------------


@pytest.mark.parametrize("flags", [(), ("--json-response",)], ids=["sse", "json"])
def test_mcp_client_over_http_lists_tools_and_calls_them(sdk_http_server, flags):
    url = sdk_http_server(*flags)
    with McpClient("sdk-http", HttpTransport(url), timeout=MESSAGE_TIMEOUT) as client:
        assert client.negotiated_version == VERSION
        assert client.server_info["name"] == "agcore-test-server"
        names = {tool.name for tool in client.list_tools()}
        assert {"echo", "add", "slow", "fail", "structured"} <= names
        assert client.call_tool("add", {"a": 20, "b": 22}).text == "42"
        assert client.call_tool("echo", {"text": "h\u00e9llo"}).text == "h\u00e9llo"
        weather = client.call_tool("structured", {"city": "Oslo"})
        assert weather.structured_content == {"city": "Oslo", "temperature": 21.5, "conditions": "sunny"}
        failed = client.call_tool("fail", {"message": "boom"})
        assert failed.is_error and "boom" in failed.text
        big = client.call_tool("nbytes", {"n": 1_000_000})
        assert big.text == "x" * 1_000_000


def test_mcp_client_over_http_answers_elicitation_from_its_handler_off_the_reader(sdk_http_server):
    url = sdk_http_server()
    handled_on: List[str] = []

    def elicit(params: Dict[str, Any]) -> Dict[str, Any]:
        handled_on.append(threading.current_thread().name)
        return {"action": "accept", "content": {"name": "Ada"}}

    with McpClient("sdk-http", HttpTransport(url), timeout=MESSAGE_TIMEOUT, elicitation_handler=elicit) as client:
        result = client.call_tool("elicit", {})
    assert result.text == "action=accept name=Ada color=blue count=3"
    assert len(handled_on) == 1 and not handled_on[0].startswith(("agcore-mcp-sse-", "agcore-mcp-get-"))


def test_mcp_client_over_http_times_out_cancels_the_stream_and_keeps_working(sdk_http_server):
    url = sdk_http_server()
    with McpClient("sdk-http", HttpTransport(url), timeout=MESSAGE_TIMEOUT) as client:
        started = time.monotonic()
        with pytest.raises(McpTimeoutError):
            client.call_tool("slow", {"seconds": 30}, timeout=0.5)
        assert time.monotonic() - started < 5.0
        # notifications/cancelled made the transport stop reading that stream.
        for thread in [t for t in threading.enumerate() if t.name.startswith("agcore-mcp-sse-")]:
            thread.join(MESSAGE_TIMEOUT)
            assert not thread.is_alive()
        assert client.call_tool("echo", {"text": "still here"}).text == "still here"


def test_mcp_client_over_http_gets_the_answer_of_a_stream_the_server_dropped(sdk_http_server):
    url = sdk_http_server("--resumable", "--retry-ms", "100")
    progress: List[str] = []
    with McpClient("sdk-http", HttpTransport(url), timeout=MESSAGE_TIMEOUT,
                   on_progress=lambda params: progress.append(params.get("message"))) as client:
        assert client.call_tool("drop_stream", {"text": "resumed"}).text == "resumed"
    assert "before the drop" in progress


def test_mcp_client_over_http_fails_fast_once_the_server_ended_the_session(sdk_http_server):
    url = sdk_http_server()
    transport = HttpTransport(url)
    with McpClient("sdk-http", transport, timeout=MESSAGE_TIMEOUT) as client:
        ended = requests.delete(url, timeout=MESSAGE_TIMEOUT, headers={
            "Mcp-Session-Id": transport.session_id, "MCP-Protocol-Version": VERSION})
        assert ended.status_code == 200
        with pytest.raises(McpConnectionError, match="ended session"):
            client.call_tool("echo", {"text": "x"})
        started = time.monotonic()
        with pytest.raises(McpConnectionError):
            client.call_tool("echo", {"text": "y"})
        assert time.monotonic() - started < 1.0


def test_with_a_restart_policy_a_stale_session_is_reinitialised_and_the_refused_call_sent_again(sdk_http_server):
    from agcore_sync.mcp import RestartPolicy

    url = sdk_http_server()
    transport = HttpTransport(url)
    policy = RestartPolicy(max_restarts=2, initial_backoff=0.0)
    with McpClient("sdk-http", transport, timeout=MESSAGE_TIMEOUT, restart=policy) as client:
        old = transport.session_id
        ended = requests.delete(url, timeout=MESSAGE_TIMEOUT, headers={
            "Mcp-Session-Id": old, "MCP-Protocol-Version": VERSION})
        assert ended.status_code == 200
        # The 404 means the server never ran it: the call goes to the new session.
        assert client.call_tool("echo", {"text": "again"}).text == "again"
        assert transport.session_id not in (None, old)
        assert client.restart_count == 1
        assert client.call_tool("echo", {"text": "and on"}).text == "and on"


# -- the scripted server: exact headers, cuts, statuses --------------------------------


INIT_RESULT = {"protocolVersion": VERSION, "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}


def _answer_handshake(ex: Any, session_id: Optional[str] = "session-1") -> bool:
    """Answer initialize / initialized / GET 405 / DELETE 405; True if it did."""
    headers = {"Mcp-Session-Id": session_id} if session_id else {}
    if ex.method == "POST" and ex.rpc_method == "initialize":
        ex.send_json({"jsonrpc": "2.0", "id": ex.body["id"], "result": INIT_RESULT}, headers=headers)
    elif ex.method == "POST" and "id" not in ex.body:
        ex.send_empty(202)
    elif ex.method in ("GET", "DELETE"):
        ex.send_empty(405)
    else:
        return False
    return True


def test_initialize_carries_no_session_and_every_later_request_carries_both_headers():
    def handle(ex: Any) -> None:
        if not _answer_handshake(ex):
            ex.send_json({"jsonrpc": "2.0", "id": ex.body["id"], "result": {"tools": []}})

    with ScriptedServer(handle) as server:
        transport, inbox = _connect(server.url, headers={"X-Test": "yes"})
        transport.send(_request(2, "tools/list"), timeout=MESSAGE_TIMEOUT)
        assert inbox.until_response(2)[1]["result"] == {"tools": []}
        transport.close()
        init, initialized, listed = (r for r in server.requests if r.method == "POST")
        assert "mcp-session-id" not in init.headers and "mcp-protocol-version" not in init.headers
        for later in (initialized, listed):
            assert later.headers["mcp-session-id"] == "session-1"
            assert later.headers["mcp-protocol-version"] == VERSION
        for recorded in server.requests:
            assert recorded.headers["x-test"] == "yes"
        posts = [r for r in server.requests if r.method == "POST"]
        assert all(r.headers["accept"] == "application/json, text/event-stream" for r in posts)
        assert all(r.headers["content-type"] == "application/json" for r in posts)
        delete = server.wait_for(lambda r: r.method == "DELETE")
        assert delete.headers["mcp-session-id"] == "session-1"


def test_a_post_stream_cut_before_its_answer_is_resumed_with_last_event_id_after_the_retry():
    cut_at: queue.Queue[float] = queue.Queue()

    def handle(ex: Any) -> None:
        if ex.method == "POST" and ex.rpc_method == "tools/call":
            ex.start_sse()
            ex.sse(id="call-1", retry=300)
            ex.sse({"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": 7, "progress": 1}}, id="call-2")
            cut_at.put(time.monotonic())
            return  # the handler returns: the connection closes with no answer
        if ex.method == "GET" and ex.headers.get("last-event-id"):
            ex.start_sse()
            ex.sse(id="call-3")
            ex.sse({"jsonrpc": "2.0", "id": 2, "result": {"content": [], "isError": False}}, id="call-4")
            return
        _answer_handshake(ex)

    with ScriptedServer(handle) as server:
        transport, inbox = _connect(server.url)
        try:
            transport.send(_call("t", {}, 2), timeout=MESSAGE_TIMEOUT)
            before, response, _ = inbox.until_response(2)
            assert [m["method"] for m in before] == ["notifications/progress"]
            assert response["result"]["isError"] is False
            resume = server.wait_for(lambda r: r.method == "GET" and "last-event-id" in r.headers)
            assert resume.headers["last-event-id"] == "call-2"
            assert resume.headers["mcp-session-id"] == "session-1"
            assert resume.headers["accept"] == "text/event-stream"
            assert resume.at - cut_at.get(timeout=1) >= 0.3 - 0.01  # the announced retry, 300 ms
        finally:
            transport.close()


def test_a_stream_cut_with_no_event_id_fails_its_request_with_a_json_rpc_error():
    def handle(ex: Any) -> None:
        if ex.method == "POST" and ex.rpc_method == "tools/call":
            ex.start_sse()
            ex.sse({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}})
            return
        _answer_handshake(ex)

    with ScriptedServer(handle) as server:
        transport, inbox = _connect(server.url)
        try:
            transport.send(_call("t", {}, 2), timeout=MESSAGE_TIMEOUT)
            before, response, _ = inbox.until_response(2)
            assert response["error"]["code"] == CONNECTION_CLOSED
            assert "no event id" in response["error"]["message"]
            assert not [r for r in server.requests if r.method == "GET" and "last-event-id" in r.headers]
        finally:
            transport.close()


def test_a_404_for_the_session_fails_everything_once_and_every_later_send_raises():
    def handle(ex: Any) -> None:
        if ex.method == "POST" and ex.rpc_method == "tools/list":
            ex.send_json({"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": "Session not found"}},
                         status=404)
            return
        _answer_handshake(ex)

    with ScriptedServer(handle) as server:
        transport, inbox = _connect(server.url)
        try:
            with pytest.raises(McpConnectionError, match="session-1") as raised:
                transport.send(_request(2, "tools/list"), timeout=MESSAGE_TIMEOUT)
            assert raised.value.exit_code is None
            assert inbox.closed.get(timeout=1) is not None
            with pytest.raises(McpConnectionError):
                transport.send(_request(3, "tools/list"))
            assert inbox.closed.empty()  # reported once
            assert inbox.messages.empty()
        finally:
            transport.close()
        # A lost session is not deleted.
        assert not [r for r in server.requests if r.method == "DELETE"]


def test_the_handshake_ends_with_the_get_stream_settled_and_405s_are_fine():
    with ScriptedServer(_answer_handshake) as server:
        transport, _ = _connect(server.url)
        # Sending notifications/initialized waited for the GET to be answered,
        # so a first call cannot race the server's stream.
        assert [r.method for r in server.requests] == ["POST", "POST", "GET"]
        transport.close()
        assert [r.method for r in server.requests] == ["POST", "POST", "GET", "DELETE"]
        assert server.requests[2].headers["accept"] == "text/event-stream"


def test_the_get_stream_is_reopened_after_its_retry_with_last_event_id():
    def handle(ex: Any) -> None:
        if ex.method == "GET" and not ex.headers.get("last-event-id"):
            ex.start_sse()
            ex.sse({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}, id="g-1", retry=50)
            return
        if ex.method == "GET":
            ex.start_sse()
            ex.sse({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"}, id="g-2")
            ex.server.stop.wait(10)  # held open until the server closes
            return
        _answer_handshake(ex)

    with ScriptedServer(handle) as server:
        transport, inbox = _connect(server.url)
        try:
            first_thread, first = inbox.next()
            second_thread, second = inbox.next()
            assert first["method"] == "notifications/tools/list_changed"
            assert second == {"jsonrpc": "2.0", "id": "srv-1", "method": "ping"}
            assert first_thread == second_thread and first_thread.startswith("agcore-mcp-get-")
            again = server.wait_for(lambda r: r.method == "GET" and "last-event-id" in r.headers)
            assert again.headers["last-event-id"] == "g-1"
        finally:
            transport.close()


def test_close_stops_a_stream_the_server_holds_open_and_joins_its_reader():
    holding = threading.Event()

    def handle(ex: Any) -> None:
        if ex.method == "POST" and ex.rpc_method == "tools/call":
            ex.start_sse()
            ex.sse(id="1")
            holding.set()
            ex.server.stop.wait(10)
            return
        _answer_handshake(ex)

    with ScriptedServer(handle) as server:
        transport, _ = _connect(server.url)
        transport.send(_call("t", {}, 2))
        assert holding.wait(MESSAGE_TIMEOUT)
        readers = [t for t in threading.enumerate() if t.name.startswith("agcore-mcp-sse-")]
        assert len(readers) == 1
        started = time.monotonic()
        transport.close()
        assert time.monotonic() - started < 2.0
        assert not readers[0].is_alive()


def test_cancelling_a_request_stops_reading_its_stream():
    holding = threading.Event()

    def handle(ex: Any) -> None:
        if ex.method == "POST" and ex.rpc_method == "tools/call":
            ex.start_sse()
            ex.sse(id="1")
            holding.set()
            ex.server.stop.wait(10)
            return
        _answer_handshake(ex)

    with ScriptedServer(handle) as server:
        transport, inbox = _connect(server.url)
        try:
            transport.send(_call("t", {}, 2))
            assert holding.wait(MESSAGE_TIMEOUT)
            (reader,) = [t for t in threading.enumerate() if t.name.startswith("agcore-mcp-sse-")]
            transport.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                            "params": {"requestId": 2, "reason": "timeout"}})
            reader.join(MESSAGE_TIMEOUT)
            assert not reader.is_alive()
            assert inbox.messages.empty()  # no made-up answer for a cancelled request
        finally:
            transport.close()


def test_an_http_error_with_a_json_rpc_body_becomes_that_requests_error_answer():
    def handle(ex: Any) -> None:
        if ex.method == "POST" and ex.rpc_method == "tools/list":
            ex.send_json({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Bad Request: nope"}},
                         status=400)
            return
        _answer_handshake(ex)

    with ScriptedServer(handle) as server:
        transport, inbox = _connect(server.url)
        try:
            transport.send(_request(2, "tools/list"), timeout=MESSAGE_TIMEOUT)
            error = inbox.until_response(2)[1]["error"]
            assert error["code"] == -32600
            assert "HTTP 400" in error["message"] and "Bad Request: nope" in error["message"]
        finally:
            transport.close()


def test_a_notification_refused_with_an_http_error_raises_mcp_error():
    def handle(ex: Any) -> None:
        if ex.method == "POST" and ex.rpc_method == "notifications/initialized":
            ex.send_json({"jsonrpc": "2.0", "error": {"code": -32600, "message": "not now"}}, status=400)
            return
        _answer_handshake(ex)

    with ScriptedServer(handle) as server:
        transport = HttpTransport(server.url)
        inbox = Inbox()
        transport.start(inbox.on_message, inbox.on_closed)
        try:
            transport.send(_request(1, "initialize", {}), timeout=MESSAGE_TIMEOUT)
            with pytest.raises(McpError, match="not now") as raised:
                transport.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        finally:
            transport.close()
        assert raised.value.code == -32600
        assert not isinstance(raised.value, McpConnectionError)


def test_a_request_whose_answer_does_not_begin_in_time_is_abandoned_without_raising():
    release = threading.Event()

    def handle(ex: Any) -> None:
        if ex.method == "POST" and ex.rpc_method == "tools/call":
            release.wait(10)
            ex._handler.close_connection = True
            return
        if not _answer_handshake(ex):
            ex.send_json({"jsonrpc": "2.0", "id": ex.body["id"], "result": {}})

    with ScriptedServer(handle) as server:
        transport, inbox = _connect(server.url)
        try:
            started = time.monotonic()
            transport.send(_call("t", {}, 2), timeout=0.2)
            assert 0.2 <= time.monotonic() - started < 5.0
            assert inbox.messages.empty()
            release.set()
            # The transport still works after an abandoned request.
            transport.send(_request(3, "ping"), timeout=MESSAGE_TIMEOUT)
            assert inbox.until_response(3)[1]["result"] == {}
        finally:
            release.set()
            transport.close()


def test_an_unreachable_server_raises_mcp_connection_error_from_send():
    url = f"http://127.0.0.1:{_free_port()}/mcp"  # nothing listens there
    transport = HttpTransport(url)
    inbox = Inbox()
    transport.start(inbox.on_message, inbox.on_closed)
    try:
        with pytest.raises(McpConnectionError, match="POST initialize failed") as raised:
            transport.send(_request(1, "initialize", {}), timeout=MESSAGE_TIMEOUT)
        assert isinstance(raised.value.__cause__, requests.ConnectionError)
    finally:
        transport.close()


def test_a_json_answer_that_does_not_parse_becomes_a_parse_error_answer():
    def handle(ex: Any) -> None:
        if ex.method == "POST" and ex.rpc_method == "tools/list":
            data = b"{not json"
            ex._start(200, {"Content-Type": "application/json", "Content-Length": str(len(data))})
            ex._handler.wfile.write(data)
            return
        _answer_handshake(ex)

    with ScriptedServer(handle) as server:
        transport, inbox = _connect(server.url)
        try:
            transport.send(_request(2, "tools/list"), timeout=MESSAGE_TIMEOUT)
            assert inbox.until_response(2)[1]["error"]["code"] == -32700
        finally:
            transport.close()


def test_a_non_json_sse_event_is_skipped_and_the_answer_still_arrives():
    def handle(ex: Any) -> None:
        if ex.method == "POST" and ex.rpc_method == "tools/list":
            ex.start_sse()
            ex.sse("this is not json", id="1")
            ex.sse({"jsonrpc": "2.0", "id": 2, "result": {"tools": []}}, id="2")
            return
        _answer_handshake(ex)

    with ScriptedServer(handle) as server:
        transport, inbox = _connect(server.url)
        try:
            transport.send(_request(2, "tools/list"), timeout=MESSAGE_TIMEOUT)
            before, response, _ = inbox.until_response(2)
            assert before == [] and response["result"] == {"tools": []}
        finally:
            transport.close()


def test_the_transport_never_shows_its_headers_in_repr():
    transport = HttpTransport("http://127.0.0.1:1/mcp", headers={"Authorization": "Bearer secret-token"})
    assert "secret-token" not in repr(transport)
    transport.close()


def test_a_url_that_is_not_http_is_refused_at_construction():
    with pytest.raises(ValueError, match="http"):
        HttpTransport("ftp://example.invalid/mcp")


def test_json_answers_are_read_as_utf8_whatever_the_charset_header_says():
    payload = {"jsonrpc": "2.0", "id": 2, "result": {"text": "h\u00e9llo \u2603"}}

    def handle(ex: Any) -> None:
        if ex.method == "POST" and ex.rpc_method == "tools/list":
            data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
            ex._start(200, {"Content-Type": "application/json", "Content-Length": str(len(data))})
            ex._handler.wfile.write(data)
            return
        _answer_handshake(ex)

    with ScriptedServer(handle) as server:
        transport, inbox = _connect(server.url)
        try:
            transport.send(_request(2, "tools/list"), timeout=MESSAGE_TIMEOUT)
            assert inbox.until_response(2)[1] == payload
        finally:
            transport.close()
