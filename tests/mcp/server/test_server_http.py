"""Streamable HTTP edge cases of McpServer.wsgi_app, over a real local HTTP server with ``requests``."""

from __future__ import annotations

import json
import threading
from typing import Any, Dict, Iterator, List, Optional

import pytest
import requests
from demo_server import make_server as make_demo
from mcp_server_helpers import WsgiThreadServer

from agcore_sync._http.sse import SseParser
from agcore_sync.mcp import HttpTransport, McpClient
from agcore_sync.mcp.server import BearerAuth

ACCEPT = "application/json, text/event-stream"
HEADERS = {"Accept": ACCEPT, "Content-Type": "application/json"}
TIMEOUT = 30.0


def _init(url: str, version: str = "2025-11-25", headers: Optional[Dict[str, str]] = None) -> requests.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    return requests.post(url, json=body, headers={**HEADERS, **(headers or {})}, timeout=TIMEOUT)


def _session(url: str) -> Dict[str, str]:
    response = _init(url)
    session = {**HEADERS, "Mcp-Session-Id": response.headers["Mcp-Session-Id"]}
    requests.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session,
                  timeout=TIMEOUT)
    return session


def _call(url: str, headers: Dict[str, str], method: str, params: Any = None, id: Any = 2) -> requests.Response:  # noqa: A002
    body: Dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        body["params"] = params
    return requests.post(url, json=body, headers=headers, timeout=TIMEOUT)


def _events(response: requests.Response) -> Iterator[Any]:
    """Yield each SSE event of ``response`` as it arrives (the library's own parser)."""
    parser = SseParser(1 << 20)
    for chunk in response.iter_content(chunk_size=1):
        yield from parser.feed(chunk)


def test_initialize_answers_json_with_a_session_id_and_a_known_version(http_server) -> None:
    response = _init(http_server.url)
    assert response.status_code == 200
    assert len(response.headers["Mcp-Session-Id"]) == 32
    assert response.json()["result"]["protocolVersion"] == "2025-11-25"
    for version in ("2024-11-05", "2025-03-26", "2025-06-18"):
        assert _init(http_server.url, version).json()["result"]["protocolVersion"] == version
    assert _init(http_server.url, "1999-01-01").json()["result"]["protocolVersion"] == "2025-11-25"


def test_a_host_not_allowed_gets_421_and_an_origin_not_allowed_403(http_server) -> None:
    assert _init(http_server.url, headers={"Host": "evil.example.com"}).status_code == 421
    assert _init(http_server.url, headers={"Origin": "http://evil.example.com"}).status_code == 403
    assert _init(http_server.url, headers={"Origin": f"http://localhost:{http_server.port}"}).status_code == 200
    assert _init(http_server.url, headers={"Host": f"[::1]:{http_server.port}"}).status_code == 200


def test_listed_hosts_and_origins_replace_the_loopback_defaults() -> None:
    demo = make_demo()
    served = WsgiThreadServer(demo.wsgi_app(allowed_hosts=["mcp.example.com"],
                                            allowed_origins=["https://app.example.com"]))
    try:
        assert _init(served.url).status_code == 421
        assert _init(served.url, headers={"Host": "mcp.example.com"}).status_code == 200
        assert _init(served.url, headers={"Host": "mcp.example.com", "Origin": "https://evil.com"}).status_code == 403
        assert _init(served.url, headers={"Host": "mcp.example.com",
                                          "Origin": "https://app.example.com"}).status_code == 200
    finally:
        demo.close()
        served.close()


def test_malformed_json_unknown_methods_and_bad_versions_get_the_specs_errors(http_server) -> None:
    url = http_server.url
    headers = _session(url)
    bad = requests.post(url, data=b'{"jsonrpc": "2.0", "id": 1, "method": ', headers=headers, timeout=TIMEOUT)
    assert bad.status_code == 400 and bad.json()["error"]["code"] == -32700
    assert _call(url, headers, "no/such").json()["error"]["code"] == -32601
    wrong = _call(url, {**headers, "MCP-Protocol-Version": "1999-01-01"}, "ping")
    assert wrong.status_code == 400 and "Unsupported protocol version" in wrong.json()["error"]["message"]
    not_json = requests.post(url, data=b"{}", headers={**headers, "Content-Type": "text/plain"}, timeout=TIMEOUT)
    assert not_json.status_code == 415
    assert _call(url, headers, "ping").json() == {"jsonrpc": "2.0", "id": 2, "result": {}}


def test_an_oversized_message_gets_413_and_the_server_keeps_serving(http_server) -> None:
    url = http_server.url
    headers = _session(url)
    big = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * (33 * 1024 * 1024) + b'"}}'
    assert requests.post(url, data=big, headers=headers, timeout=TIMEOUT).status_code == 413
    assert _call(url, headers, "ping").status_code == 200


def test_requests_without_or_with_an_unknown_session_id_are_refused(http_server) -> None:
    assert _call(http_server.url, HEADERS, "ping").status_code == 400
    assert _call(http_server.url, {**HEADERS, "Mcp-Session-Id": "nope"}, "ping").status_code == 404


def test_delete_ends_the_session_and_leaves_no_session_behind(http_server, demo) -> None:
    headers = _session(http_server.url)
    assert demo.session_count == 1
    assert requests.delete(http_server.url, headers=headers, timeout=TIMEOUT).status_code == 200
    assert demo.session_count == 0
    assert _call(http_server.url, headers, "ping").status_code == 404


def test_idle_sessions_expire_and_max_sessions_answers_503() -> None:
    demo = make_demo(session_idle_timeout=0.0, max_sessions=2)
    served = WsgiThreadServer(demo.wsgi_app())
    try:
        first = _session(served.url)
        assert _call(served.url, first, "ping").status_code == 404  # idle for longer than 0 s
        assert demo.session_count == 0
    finally:
        demo.close()
        served.close()
    demo = make_demo(max_sessions=2)
    served = WsgiThreadServer(demo.wsgi_app())
    try:
        _session(served.url)
        _session(served.url)
        assert _init(served.url).status_code == 503
    finally:
        demo.close()
        served.close()


def test_stateless_mode_sends_no_session_id_and_serves_each_post_alone() -> None:
    demo = make_demo()
    served = WsgiThreadServer(demo.wsgi_app(stateless=True))
    try:
        response = _init(served.url)
        assert "Mcp-Session-Id" not in response.headers
        answer = _call(served.url, {**HEADERS, "Accept": "application/json"}, "tools/call",
                       {"name": "add", "arguments": {"a": 1, "b": 2}})
        assert answer.json()["result"]["structuredContent"] == {"result": 3}
        assert requests.get(served.url, headers={"Accept": "text/event-stream"}, timeout=TIMEOUT).status_code == 405
        assert demo.session_count == 0
    finally:
        demo.close()
        served.close()


def test_a_tool_call_that_logs_is_answered_as_sse_starting_with_a_comment_and_a_priming_event(http_server) -> None:
    headers = _session(http_server.url)
    with requests.post(http_server.url, json={"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                              "params": {"name": "shout", "arguments": {"text": "a"}}},
                       headers=headers, stream=True, timeout=TIMEOUT) as response:
        assert response.headers["Content-Type"] == "text/event-stream"
        assert response.raw.read(2) == b": "
        events = list(_events(response))
    assert events[0].data == "" and events[0].id.endswith("_0")
    assert json.loads(events[1].data)["method"] == "notifications/message"
    assert json.loads(events[-1].data)["result"]["content"] == [{"type": "text", "text": "A"}]


def test_a_tool_call_that_sends_nothing_before_its_result_is_answered_as_json(http_server) -> None:
    headers = _session(http_server.url)
    answer = _call(http_server.url, headers, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
    assert answer.headers["Content-Type"] == "application/json"
    assert answer.json()["result"]["structuredContent"] == {"result": 2}


def test_the_get_stream_carries_list_changed_and_resource_updates_and_resumes_with_last_event_id(
        http_server, demo) -> None:
    headers = _session(http_server.url)
    _call(http_server.url, headers, "resources/subscribe", {"uri": "demo://readme"})
    get_headers = {"Accept": "text/event-stream", "Mcp-Session-Id": headers["Mcp-Session-Id"]}
    received: List[Any] = []
    two = threading.Event()

    with requests.get(http_server.url, headers=get_headers, stream=True, timeout=TIMEOUT) as stream:
        events = _events(stream)
        assert next(events).data == ""  # the priming event: the stream is open

        @demo.tool
        def extra() -> str:
            """An extra tool."""
            return "x"

        demo.notify_resource_updated("demo://readme")
        for event in events:
            received.append(event)
            if len(received) == 2:
                two.set()
                break
    assert [json.loads(e.data)["method"] for e in received] == [
        "notifications/tools/list_changed", "notifications/resources/updated"]
    demo.remove_tool("extra")
    resumed_headers = {**get_headers, "Last-Event-ID": received[0].id}
    with requests.get(http_server.url, headers=resumed_headers, stream=True, timeout=TIMEOUT) as again:
        replay = _events(again)
        methods = [json.loads(next(replay).data)["method"] for _ in range(2)]
    assert methods == ["notifications/resources/updated", "notifications/tools/list_changed"]


def test_protocol_2026_07_28_is_reached_through_server_discover(http_server) -> None:
    client = McpClient("demo", HttpTransport(http_server.url), protocol="2026-07-28", timeout=TIMEOUT)
    with client.connect():
        assert client.negotiated_version == "2026-07-28"
        assert client.call_tool("add", {"a": 2, "b": 2}).structured_content == {"result": 4}
        assert client.server_info == {"name": "demo", "version": "1.2.3"}


# -- auth -----------------------------------------------------------------------------------------


def _verify(token: str) -> Optional[Dict[str, Any]]:
    return {"good": {"sub": "u1", "scope": "mcp:read mcp:write"}, "weak": {"sub": "u2", "scope": "mcp:read"}}.get(token)


@pytest.fixture
def authed() -> Iterator[WsgiThreadServer]:
    demo = make_demo()
    served = WsgiThreadServer(None)
    auth = BearerAuth(_verify, resource=served.url, authorization_servers=["https://auth.example.com"],
                      scopes=["mcp:write"])
    served.httpd.set_app(demo.wsgi_app(auth=auth))
    yield served
    demo.close()
    served.close()


def test_bearer_auth_answers_401_with_resource_metadata_then_403_for_missing_scopes(authed) -> None:
    missing = _init(authed.url)
    assert missing.status_code == 401
    challenge = missing.headers["WWW-Authenticate"]
    metadata_url = f"http://127.0.0.1:{authed.port}/.well-known/oauth-protected-resource/mcp"
    assert challenge.startswith("Bearer ") and f'resource_metadata="{metadata_url}"' in challenge
    assert 'error="invalid_token"' in _init(authed.url, headers={"Authorization": "Bearer forged"}).headers[
        "WWW-Authenticate"]
    weak = _init(authed.url, headers={"Authorization": "Bearer weak"})
    assert weak.status_code == 403 and 'error="insufficient_scope"' in weak.headers["WWW-Authenticate"]
    metadata = requests.get(metadata_url, timeout=TIMEOUT).json()
    assert metadata["resource"] == authed.url
    assert metadata["authorization_servers"] == ["https://auth.example.com"]
    assert metadata["scopes_supported"] == ["mcp:write"]


def test_a_client_with_a_good_token_is_served(authed) -> None:
    client = McpClient("demo", HttpTransport(authed.url, headers={"Authorization": "Bearer good"}), timeout=TIMEOUT)
    with client.connect():
        assert client.call_tool("add", {"a": 1, "b": 1}).structured_content == {"result": 2}


def test_a_stateless_tool_asking_the_client_gets_an_is_error_result_at_once() -> None:
    demo = make_demo()
    served = WsgiThreadServer(demo.wsgi_app(stateless=True))
    try:
        _init(served.url)
        answer = _call(served.url, {**HEADERS, "Accept": "application/json"}, "tools/call",
                       {"name": "ask_model", "arguments": {"question": "q"}})
        result = answer.json()["result"]
        assert result["isError"] and "cannot carry requests" in result["content"][0]["text"]
    finally:
        demo.close()
        served.close()


def test_delete_ends_an_open_get_stream_and_unsubscribed_resources_send_no_updates(http_server, demo) -> None:
    headers = _session(http_server.url)
    _call(http_server.url, headers, "resources/subscribe", {"uri": "demo://readme"})
    _call(http_server.url, headers, "resources/unsubscribe", {"uri": "demo://readme"}, id=3)
    get_headers = {"Accept": "text/event-stream", "Mcp-Session-Id": headers["Mcp-Session-Id"]}
    with requests.get(http_server.url, headers=get_headers, stream=True, timeout=TIMEOUT) as stream:
        events = _events(stream)
        assert next(events).data == ""  # primed: the stream is open
        demo.notify_resource_updated("demo://readme")  # unsubscribed: nothing is sent
        assert requests.delete(http_server.url, headers=headers, timeout=TIMEOUT).status_code == 200
        assert list(events) == []  # the stream ends with the session, having carried nothing


def test_2026_07_28_headers_that_disagree_with_the_body_and_unknown_versions_are_refused(http_server) -> None:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": meta}}
    modern = {**HEADERS, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"}
    ok = requests.post(http_server.url, json=body, headers={**modern, "Mcp-Name": "add"}, timeout=TIMEOUT)
    assert ok.status_code == 200 and ok.json()["result"]["structuredContent"] == {"result": 3}
    wrong = requests.post(http_server.url, json=body, headers={**modern, "Mcp-Name": "fail"}, timeout=TIMEOUT)
    assert wrong.status_code == 400 and wrong.json()["error"]["code"] == -32020
    odd = dict(body, params=dict(body["params"], _meta=dict(meta, **{
        "io.modelcontextprotocol/protocolVersion": "2027-01-01"})))
    refused = requests.post(http_server.url, json=odd, headers=HEADERS, timeout=TIMEOUT).json()
    assert refused["error"]["code"] == -32022
    assert refused["error"]["data"]["requested"] == "2027-01-01"
    assert "2026-07-28" in refused["error"]["data"]["supported"]
