"""Our own McpClient against McpServer over stdio (a subprocess) and Streamable HTTP (the WSGI app)."""

from __future__ import annotations

import logging
import threading
from typing import Any, Dict, List

import pytest

from agcore_sync.mcp import HttpTransport, McpClient, StdioTransport
from agcore_sync.tools.error import McpError, McpTimeoutError


@pytest.fixture(params=["stdio", "http"])
def connect(request, stdio_argv):
    """Return ``connect(**client_options) -> McpClient`` over the transport the test is parametrised with."""
    clients: List[McpClient] = []

    def make(**options: Any) -> McpClient:
        if request.param == "stdio":
            transport: Any = StdioTransport(stdio_argv[0], stdio_argv[1:])
        else:
            transport = HttpTransport(request.getfixturevalue("http_server").url)
        client = McpClient("demo", transport, timeout=30.0, **options)
        clients.append(client)
        return client.connect()

    yield make
    for client in clients:
        client.close()


def test_the_client_lists_tools_with_their_schemas_output_schemas_and_annotations(connect) -> None:
    client = connect()
    tools = {t.name: t for t in client.list_tools()}
    assert tools["add"].parameters["properties"]["a"] == {"type": "integer", "description": "the first."}
    assert client.server_info == {"name": "demo", "version": "1.2.3"}
    assert client.instructions == "Adds numbers."
    assert client.negotiated_version == "2025-11-25"


def test_a_tool_answers_with_text_and_structured_content_in_fastmcps_shape(connect) -> None:
    client = connect()
    result = client.call_tool("add", {"a": 2, "b": 3})
    assert result.content == ({"type": "text", "text": "5"},)
    assert result.structured_content == {"result": 5}
    profile = client.call_tool("profile", {"name": "Ada"})
    assert profile.structured_content == {"name": "Ada", "length": 3}


def test_a_failing_tool_is_an_is_error_result_with_its_message(connect) -> None:
    client = connect()
    result = client.call_tool("fail", {})
    assert result.is_error
    assert "the disk is full" in result.content[0]["text"]
    assert client.call_tool("add", {"a": 1, "b": 1}).structured_content == {"result": 2}


def test_a_tool_returning_something_not_json_is_an_is_error_result(connect) -> None:
    result = connect().call_tool("not_json", {})
    assert result.is_error
    assert "not JSON-serialisable" in result.content[0]["text"]


def test_invalid_arguments_are_an_is_error_result_and_an_unknown_tool_is_invalid_params(connect) -> None:
    client = connect()
    assert client.call_tool("add", {"a": "two", "b": 3}).is_error
    with pytest.raises(McpError) as caught:
        client.call_tool("nope", {})
    assert caught.value.code == -32602


def test_resources_templates_and_binary_contents_are_read(connect) -> None:
    client = connect()
    assert {r.uri for r in client.list_resources()} == {"demo://readme", "demo://logo"}
    assert [t.uri_template for t in client.list_resource_templates()] == ["demo://users/{user}/name",
                                                                          "demo://notes/{key}"]
    assert client.read_resource("demo://notes/todo")[0].text == "buy milk"
    assert client.read_resource("demo://readme")[0].text == "read me"
    assert client.read_resource("demo://logo")[0].blob == b"\x89PNG"
    assert client.read_resource("demo://users/ada/name")[0].text == "name of ada"
    for missing in ("demo://missing", "demo://notes/nope"):
        with pytest.raises(McpError) as caught:
            client.read_resource(missing)
        assert caught.value.code == -32002


def test_prompts_render_with_arguments_and_bad_arguments_are_invalid_params(connect) -> None:
    client = connect()
    [prompt] = client.list_prompts()
    assert [(a.name, a.required) for a in prompt.arguments] == [("who", True), ("tone", False)]
    assert client.get_prompt("greet", {"who": "Ada"}).messages[0].text == "Say hello to Ada, warmly."
    with pytest.raises(McpError) as caught:
        client.get_prompt("greet", {})
    assert caught.value.code == -32602
    with pytest.raises(McpError) as caught:
        client.get_prompt("nope", {})
    assert caught.value.code == -32602
    assert client.complete(("prompt", "greet"), "tone", "w") == ["warm", "wry"]


class _Awaited(logging.Handler):
    """Sets ``seen`` when a record holding ``text`` is logged (the client logs on its worker thread)."""

    def __init__(self, text: str) -> None:
        super().__init__(logging.INFO)
        self.text = text
        self.seen = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.seen.set()


def test_progress_and_logs_from_a_tool_reach_the_client(connect) -> None:
    seen: List[Any] = []
    client = connect()
    awaited = _Awaited("shouting hi")
    server_logs = logging.getLogger("agcore_sync.mcp.server")
    server_logs.addHandler(awaited)
    level = server_logs.level
    server_logs.setLevel(logging.INFO)
    try:
        result = client.call_tool("shout", {"text": "hi"}, progress=lambda done, total, message: seen.append(
            (done, total, message)))
        assert awaited.seen.wait(30.0)
    finally:
        server_logs.removeHandler(awaited)
        server_logs.setLevel(level)
    assert result.content[0]["text"] == "HI"
    assert seen == [(1, 2, "half"), (2, 2, None)]


def test_sampling_from_a_tool_is_answered_by_the_clients_handler(connect) -> None:
    asked: List[Dict[str, Any]] = []

    def sampling(params: Dict[str, Any]) -> Dict[str, Any]:
        asked.append(params)
        return {"role": "assistant", "content": {"type": "text", "text": "forty-two"}, "model": "m"}

    client = connect(sampling_handler=sampling)
    assert client.call_tool("ask_model", {"question": "meaning?"}).content[0]["text"] == "forty-two"
    assert asked[0]["messages"][0]["content"]["text"] == "meaning?"
    assert asked[0]["maxTokens"] == 20


def test_elicitation_from_a_tool_gets_the_users_answer_with_schema_defaults(connect) -> None:
    client = connect(elicitation_handler=lambda params: {"action": "accept", "content": {"color": "red"}})
    text = client.call_tool("ask_user", {"question": "color?"}).content[0]["text"]
    assert text == "accept:{'color': 'red', 'size': 3}"


def test_a_client_without_sampling_gets_an_is_error_result(connect) -> None:
    result = connect().call_tool("ask_model", {"question": "x"})
    assert result.is_error and "sampling" in result.content[0]["text"]


def test_a_hanging_tool_is_cancelled_when_the_client_gives_up_and_the_server_keeps_serving(connect) -> None:
    client = connect()
    with pytest.raises(McpTimeoutError):
        client.call_tool("hang", {}, timeout=0.5)
    assert client.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3}


def test_on_2026_07_28_sampling_and_elicitation_come_as_input_required_rounds(connect) -> None:
    def sampling(params: Dict[str, Any]) -> Dict[str, Any]:
        text = params["messages"][0]["content"]["text"]
        answer = "modern answer" if not text.startswith("again") else "second answer"
        return {"role": "assistant", "content": {"type": "text", "text": answer}, "model": "m"}

    client = connect(protocol="2026-07-28", sampling_handler=sampling,
                     elicitation_handler=lambda params: {"action": "accept", "content": {"color": "blue"}})
    assert client.negotiated_version == "2026-07-28"
    assert client.call_tool("ask_model", {"question": "q"}).content[0]["text"] == "modern answer"
    assert client.call_tool("ask_user", {"question": "q"}).content[0]["text"] == "accept:{'color': 'blue', 'size': 3}"
    assert client.call_tool("ask_twice", {"question": "q"}).content[0]["text"] == "modern answer / second answer"
