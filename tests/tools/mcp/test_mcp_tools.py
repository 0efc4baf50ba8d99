"""Tools: pages, the cache and list_changed, results, isError versus JSON-RPC errors, progress."""

from __future__ import annotations

import json
import threading

import pytest

from agcore_sync.llm.types import ToolDef
from agcore_sync.mcp import McpToolResult
from agcore_sync.tools.error import McpError

SDK_TOOLS = {
    "echo", "add", "slow", "fail", "rpc_error", "structured", "nbytes", "env_keys", "change_tools", "progress",
    "log", "drop_stream", "elicit_raw", "elicit", "sample", "roots",
}


def test_list_tools_follows_every_next_cursor_page(open_client, sdk_server):
    with open_client(sdk_server + ["--page-size", "3"]) as client:
        tools = client.list_tools()
        pages = client.transport.requests("tools/list")
    assert {tool.name for tool in tools} == SDK_TOOLS
    assert len(tools) == len(SDK_TOOLS)
    assert len(pages) == -(-len(SDK_TOOLS) // 3)
    assert "params" not in pages[0] or "cursor" not in pages[0].get("params", {})
    assert [page["params"]["cursor"] for page in pages[1:]] == [str(3 * i) for i in range(1, len(pages))]


def test_list_tools_returns_tool_defs_with_the_server_schema(open_client, sdk_server):
    with open_client(sdk_server) as client:
        add = next(tool for tool in client.list_tools() if tool.name == "add")
    assert isinstance(add, ToolDef)
    assert add.description == "Add two integers."
    assert add.parameters["properties"]["a"]["type"] == "integer"
    assert add.parameters["required"] == ["a", "b"]


def test_list_tools_is_cached(open_client, sdk_server):
    with open_client(sdk_server + ["--page-size", "4"]) as client:
        first = client.list_tools()
        sent = len(client.transport.requests("tools/list"))
        second = client.list_tools()
        assert first == second
        assert len(client.transport.requests("tools/list")) == sent


def test_tools_list_changed_drops_the_cache_before_the_triggering_call_returns(open_client, sdk_server):
    with open_client(sdk_server) as client:
        before = {tool.name for tool in client.list_tools()}
        added = client.call_tool("change_tools").text
        # The notification precedes the call's response on the wire, so the
        # cache is already gone: no waiting needed.
        after = {tool.name for tool in client.list_tools()}
        assert len(client.transport.requests("tools/list")) == 2
    assert added == "added_1"
    assert added not in before
    assert after == before | {added}


def test_a_text_result_has_content_blocks_and_joined_text(open_client, sdk_server):
    with open_client(sdk_server) as client:
        result = client.call_tool("echo", {"text": "hello"})
    assert isinstance(result, McpToolResult)
    assert result.content == ({"type": "text", "text": "hello"},)
    assert result.text == "hello"
    assert result.is_error is False


def test_structured_content_is_returned_for_a_tool_with_an_output_schema(open_client, sdk_server):
    with open_client(sdk_server) as client:
        tool = next(tool for tool in client._tool_dicts() if tool["name"] == "structured")
        result = client.call_tool("structured", {"city": "Oslo"})
    assert tool["outputSchema"]["properties"]["temperature"]["type"] == "number"
    assert result.structured_content == {"city": "Oslo", "temperature": 21.5, "conditions": "sunny"}
    assert json.loads(result.text) == result.structured_content


def test_text_joins_several_text_blocks_with_newlines_and_skips_others():
    result = McpToolResult.from_result(
        {"content": [{"type": "text", "text": "a"}, {"type": "image", "data": "AA==", "mimeType": "image/png"},
                     {"type": "text", "text": "b"}]}
    )
    assert result.text == "a\nb"
    assert len(result.content) == 3


def test_an_is_error_result_is_returned_not_raised(open_client, sdk_server):
    with open_client(sdk_server) as client:
        result = client.call_tool("fail", {"message": "disk full"})
        assert result.is_error is True
        assert "disk full" in result.text
        assert client.call_tool("echo", {"text": "still fine"}).text == "still fine"


def test_a_json_rpc_error_raises_a_recoverable_mcp_error_with_code_and_data(open_client, sdk_server):
    with open_client(sdk_server) as client:
        with pytest.raises(McpError) as caught:
            client.call_tool("rpc_error", {"code": -32602, "message": "bad city"})
        assert client.call_tool("echo", {"text": "usable"}).text == "usable"
    error = caught.value
    assert type(error) is McpError
    assert error.code == -32602
    assert error.data == {"refused": -32602}
    assert error.recoverable is True
    assert error.tool_name == "rpc_error"
    assert "bad city" in str(error)


def test_a_large_result_arrives_whole(open_client, sdk_server):
    with open_client(sdk_server) as client:
        assert client.call_tool("nbytes", {"n": 1_000_000}).text == "x" * 1_000_000


def test_progress_notifications_reach_on_progress_with_the_calls_token(open_client, sdk_server):
    seen = []
    threads = set()

    def on_progress(params):
        seen.append(params)
        threads.add(threading.current_thread().name)

    with open_client(sdk_server, on_progress=on_progress) as client:
        result = client.call_tool("progress", {"steps": 3})
        call = client.transport.requests("tools/call")[-1]
    assert result.text == "3 steps"
    token = call["params"]["_meta"]["progressToken"]
    progress = [(p["progressToken"], p["progress"], p["total"]) for p in seen]
    assert progress == [(token, 1, 3), (token, 2, 3), (token, 3, 3)]
    assert all(name.startswith("agcore-mcp-worker-") for name in threads)


def test_no_progress_token_is_sent_without_on_progress(open_client, raw_server):
    with open_client(raw_server) as client:
        params = json.loads(client.call_tool("params").text)
    assert params == {"arguments": {}, "name": "params"}


def test_a_progress_token_is_sent_when_on_progress_is_set(open_client, raw_server):
    with open_client(raw_server, on_progress=lambda params: None) as client:
        params = json.loads(client.call_tool("params").text)
        call_id = client.transport.requests("tools/call")[-1]["id"]
    assert params["_meta"] == {"progressToken": call_id}


def test_server_log_messages_go_to_a_logger_named_after_the_server_at_the_mapped_level(open_client, raw_server, caplog):
    caplog.set_level("DEBUG", logger="agcore_sync.mcp")
    with open_client(raw_server, name="logger-test") as client:
        client.call_tool("notify", {"level": "error"})
        client.call_tool("notify", {"level": "notice"})
    # close() joined the worker, so both records are in.
    records = [r for r in caplog.records if "note" in r.getMessage()]
    assert {r.name for r in records} == {"agcore_sync.mcp.server.logger-test"}
    # Round 4: notice and warning map to WARNING.
    assert [r.levelname for r in records] == ["ERROR", "WARNING"]
    assert "'logger-test'" in records[0].getMessage() and "[raw]" in records[0].getMessage()
