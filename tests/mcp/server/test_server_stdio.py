"""McpServer.run_stdio in process, over pipes: bad input, cancellation, and the end of stdin."""

from __future__ import annotations

import contextlib
import threading
from typing import Iterator

import pytest
from demo_server import make_server as make_demo
from mcp_server_helpers import WAIT, Pipes


@pytest.fixture
def pipes() -> Iterator[Pipes]:
    opened = Pipes(max_message_size=4096)
    yield opened
    opened.close()


def test_a_line_that_is_not_json_rpc_gets_a_parse_error_and_the_server_keeps_serving(pipes) -> None:
    pipes.initialize()
    pipes.send(b'{"jsonrpc": "2.0", "id": 1, "method": \n')
    error = pipes.read()
    assert error["id"] is None and error["error"]["code"] == -32700
    pipes.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    assert pipes.read() == {"jsonrpc": "2.0", "id": 2, "result": {}}


def test_unknown_methods_and_bad_params_get_their_json_rpc_errors(pipes) -> None:
    pipes.initialize()
    pipes.send({"jsonrpc": "2.0", "id": 1, "method": "no/such"})
    assert pipes.read()["error"]["code"] == -32601
    pipes.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": [1, 2]})
    assert pipes.read()["error"]["code"] == -32602
    pipes.send({"jsonrpc": "2.0", "id": 3, "method": "resources/list", "params": {"cursor": "!!"}})
    assert pipes.read()["error"]["code"] == -32602
    pipes.send({"jsonrpc": "2.0", "id": 4, "method": "logging/setLevel", "params": {"level": "loud"}})
    assert pipes.read()["error"]["code"] == -32602


def test_an_oversized_line_is_refused_whole_and_the_next_line_is_served(pipes) -> None:
    pipes.initialize()
    pipes.send(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * 10000 + b'"}}\n')
    assert pipes.read()["error"]["code"] == -32600
    pipes.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    assert pipes.read() == {"jsonrpc": "2.0", "id": 2, "result": {}}


def test_a_cancelled_call_tells_the_tool_and_gets_no_answer(pipes) -> None:
    pipes.initialize()
    pipes.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "hang", "arguments": {}}})
    pipes.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}})
    pipes.send({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "add",
                                                                                "arguments": {"a": 1, "b": 1}}})
    answer = pipes.read()
    assert answer["id"] == 6 and answer["result"]["structuredContent"] == {"result": 2}


def test_the_end_of_stdin_ends_the_session_and_a_waiting_sampling_request_fails(pipes) -> None:
    pipes.initialize({"sampling": {}})
    pipes.send({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "ask_model",
                                                                                "arguments": {"question": "q"}}})
    asked = pipes.read()
    assert asked["method"] == "sampling/createMessage" and asked["params"]["maxTokens"] == 20
    # The fixture's close() shuts stdin: serve_stdio must return, the tool's wait end, every thread stop.


def test_pagination_walks_long_lists_with_cursors() -> None:
    opened = Pipes(make_demo(page_size=2))
    try:
        opened.initialize()
        names = []
        cursor = None
        for page in range(10):
            params = {} if cursor is None else {"cursor": cursor}
            opened.send({"jsonrpc": "2.0", "id": page + 1, "method": "tools/list", "params": params})
            result = opened.read()["result"]
            assert len(result["tools"]) <= 2
            names += [t["name"] for t in result["tools"]]
            cursor = result.get("nextCursor")
            if cursor is None:
                break
        assert names == [t.name for t in opened.server.registry.definitions()]
        assert len(names) > 4
    finally:
        opened.close()


def test_closing_the_server_stops_its_worker_threads() -> None:
    opened = Pipes()
    opened.initialize()
    opened.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "add",
                                                                                "arguments": {"a": 1, "b": 1}}})
    assert opened.read()["id"] == 1
    workers = [t for t in threading.enumerate() if t.name.startswith("agcore-mcp-serve-")]
    assert workers
    opened.close()
    for thread in workers:
        thread.join(WAIT)
        assert not thread.is_alive()


def test_a_client_that_closes_the_servers_stdout_ends_the_server_without_an_error() -> None:
    opened = Pipes()
    opened.initialize()
    opened.from_server.close()
    opened.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    opened.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    opened.thread.join(WAIT)
    assert not opened.thread.is_alive()
    opened.to_server.close()
    opened.server.close()
    for handle in opened._server_files:
        with contextlib.suppress(BrokenPipeError):  # the server's unsent bytes, flushed at close
            handle.close()


def test_tools_list_carries_input_and_output_schemas_and_annotations(pipes) -> None:
    pipes.initialize()
    pipes.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    tools = {t["name"]: t for t in pipes.read()["result"]["tools"]}
    assert tools["add"]["annotations"] == {"readOnlyHint": True}
    assert tools["add"]["inputSchema"]["required"] == ["a", "b"]
    assert tools["add"]["outputSchema"] == {"type": "object", "properties": {"result": {"type": "integer"}},
                                            "required": ["result"]}
    assert tools["profile"]["outputSchema"]["type"] == "object"
    assert "outputSchema" not in tools["not_json"]


def test_log_messages_below_the_level_the_client_set_are_not_sent(pipes) -> None:
    pipes.initialize()
    pipes.send({"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "warning"}})
    assert pipes.read() == {"jsonrpc": "2.0", "id": 1, "result": {}}
    pipes.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "shout",
                                                                                "arguments": {"text": "x"}}})
    answer = pipes.read()
    assert answer["id"] == 2 and answer["result"]["content"] == [{"type": "text", "text": "X"}]
