"""Connecting: the version handshake of every era, client identity, capabilities, lifecycle."""

from __future__ import annotations

import json

import pytest

import agcore_sync
from agcore_sync.mcp import McpClient, StdioTransport
from agcore_sync.tools.error import McpError, McpNotInitializedError

HANDSHAKE_VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
MODERN = "2026-07-28"
PROTOCOL_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"


def test_the_default_handshake_offers_2025_11_25_and_sends_initialized(open_client, sdk_server):
    with open_client(sdk_server) as client:
        assert client.negotiated_version == "2025-11-25"
        assert client.server_info == {"name": "agcore-test-server", "version": "1.0.0"}
        sent = client.transport.sent
        assert sent[0]["method"] == "initialize"
        assert sent[0]["params"]["protocolVersion"] == "2025-11-25"
        assert sent[1] == {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"


@pytest.mark.parametrize("version", HANDSHAKE_VERSIONS)
def test_a_handshake_version_string_offers_that_version_and_the_sdk_server_agrees(open_client, sdk_server, version):
    with open_client(sdk_server, protocol=version) as client:
        assert client.transport.requests("initialize")[0]["params"]["protocolVersion"] == version
        assert client.negotiated_version == version
        assert client.call_tool("add", {"a": 2, "b": 3}).text == "5"


@pytest.mark.parametrize("answered", HANDSHAKE_VERSIONS)
def test_any_known_version_the_server_answers_is_accepted(open_client, raw_server, answered):
    with open_client(raw_server + ["--answer-version", answered]) as client:
        assert client.negotiated_version == answered
        assert client.call_tool("echo", {"text": "ok"}).text == "ok"


def test_an_unknown_answered_version_raises_a_clear_error_and_stops_the_server(open_client, raw_server):
    client = open_client(raw_server + ["--answer-version", "1999-01-01"])
    with pytest.raises(McpError) as caught:
        client.connect()
    assert "'1999-01-01'" in str(caught.value)
    assert "does not know" in str(caught.value)
    assert client.transport.returncode is not None, "the server process must be stopped"
    with pytest.raises(McpNotInitializedError):
        client.call_tool("echo", {"text": "x"})


def test_client_info_carries_the_package_version(open_client, raw_server):
    with open_client(raw_server) as client:
        init = json.loads(client.call_tool("init_params").text)
    assert init["clientInfo"] == {"name": "agcore_sync", "version": agcore_sync.__version__}


def test_capabilities_declared_are_exactly_those_with_a_handler_or_data(open_client, raw_server):
    with open_client(raw_server) as bare:
        assert json.loads(bare.call_tool("init_params").text)["capabilities"] == {}
    with open_client(
        raw_server,
        roots=[{"uri": "file:///tmp", "name": "tmp"}],
        elicitation_handler=lambda params: {"action": "decline"},
        sampling_handler=lambda params: {},
    ) as full:
        assert json.loads(full.call_tool("init_params").text)["capabilities"] == {
            "roots": {}, "sampling": {}, "elicitation": {"form": {}},
        }
    with open_client(raw_server, sampling_handler=lambda params: {}) as one:
        assert json.loads(one.call_tool("init_params").text)["capabilities"] == {"sampling": {}}


def test_auto_speaks_2026_07_28_with_the_sdk_server_and_stamps_every_request(open_client, sdk_server):
    with open_client(sdk_server, protocol="auto", roots=[{"uri": "file:///r", "name": "r"}]) as client:
        assert client.negotiated_version == MODERN
        assert client.server_info == {"name": "agcore-test-server", "version": "1.0.0"}
        assert client.call_tool("echo", {"text": "modern"}).text == "modern"
        assert "echo" in [tool.name for tool in client.list_tools()]
        methods = client.transport.sent_methods()
        assert "initialize" not in methods and methods[0] == "server/discover"
        for request in client.transport.sent:
            if "id" in request and "method" in request:
                meta = request["params"]["_meta"]
                assert meta[PROTOCOL_KEY] == MODERN
                assert meta[CLIENT_INFO_KEY] == {"name": "agcore_sync", "version": agcore_sync.__version__}
                assert meta[CAPABILITIES_KEY] == {"roots": {}}


def test_requiring_2026_07_28_works_with_a_server_that_speaks_it(open_client, sdk_server):
    with open_client(sdk_server, protocol=MODERN) as client:
        assert client.negotiated_version == MODERN
        assert client.call_tool("add", {"a": 20, "b": 22}).text == "42"


def test_auto_falls_back_to_initialize_when_the_server_has_no_discover(open_client, raw_server):
    with open_client(raw_server, protocol="auto") as client:
        assert client.negotiated_version == "2025-11-25"
        assert client.transport.sent_methods()[:3] == ["server/discover", "initialize", "notifications/initialized"]
        params = json.loads(client.call_tool("params").text)
        assert "_meta" not in params


def test_auto_falls_back_to_initialize_when_discover_is_not_answered_in_time(open_client, raw_server):
    with open_client(raw_server + ["--ignore-discover"], protocol="auto", timeout=0.5) as client:
        assert client.negotiated_version == "2025-11-25"
        assert client.call_tool("echo", {"text": "ok"}).text == "ok"
        assert client.transport.requests("notifications/cancelled") == [], "discover is never cancelled"


def test_requiring_2026_07_28_of_an_older_server_fails_and_stops_it(open_client, raw_server):
    client = open_client(raw_server, protocol=MODERN)
    with pytest.raises(McpError) as caught:
        client.connect()
    assert MODERN in str(caught.value)
    assert caught.value.code == -32601
    assert client.transport.returncode is not None


def test_an_unknown_protocol_setting_is_refused_at_construction():
    with pytest.raises(ValueError, match="protocol"):
        McpClient("x", StdioTransport("true"), protocol="2030-01-01")


def test_a_call_before_connect_raises_not_initialized(open_client, raw_server):
    client = open_client(raw_server)
    with pytest.raises(McpNotInitializedError) as caught:
        client.call_tool("echo", {"text": "x"})
    assert caught.value.recoverable is False
    with pytest.raises(McpNotInitializedError):
        client.list_tools()
    assert client.transport.pid is None, "nothing was started"


def test_a_closed_client_cannot_be_used_or_reconnected(open_client, raw_server):
    client = open_client(raw_server)
    with client:
        assert client.call_tool("echo", {"text": "x"}).text == "x"
    with pytest.raises(McpNotInitializedError, match="closed"):
        client.call_tool("echo", {"text": "x"})
    with pytest.raises(McpNotInitializedError, match="closed"):
        client.connect()


def test_connect_twice_is_a_no_op(open_client, raw_server):
    client = open_client(raw_server)
    assert client.connect() is client
    assert client.connect() is client
    assert client.transport.sent_methods().count("initialize") == 1


def test_a_program_that_cannot_start_raises_a_connection_error(open_client):
    from agcore_sync.tools.error import McpConnectionError

    client = open_client(["/nonexistent/mcp-server-binary"])
    with pytest.raises(McpConnectionError, match="could not start"):
        client.connect()
