"""The rest of the MCP client protocol against server-everything, over stdio and Streamable HTTP.

Resources (list, templates, read text and blob, subscribe), prompts (list,
get with arguments), completion, logging level and server log records,
per-call progress, sampling through an ``LlmProvider``, ping, roots and
``roots/list_changed``, and tool content (images, resource links,
structured content checked against ``outputSchema``). Every wait is an
Event with a bound.
"""

from __future__ import annotations

import base64
import logging
import threading
from typing import Any, Callable, Iterator, List, Tuple

import pytest

from agcore_sync import ImageBlock, MockProvider, TextBlock, sampling_handler_for
from agcore_sync.mcp import HttpTransport, McpClient, StdioTransport
from agcore_sync.tools.error import McpError
from tests.support.everything import EverythingHttp, everything_argv

#: Seconds each answer may take: the first one includes Node's start-up.
TIMEOUT = 30.0
#: Bound on waiting for a notification the server sends right away.
NOTICE_TIMEOUT = 20.0


@pytest.fixture(params=["stdio", "http"])
def connect(request) -> Iterator[Callable[..., McpClient]]:
    """Return ``connect(**client_kwargs)``: a connected client of server-everything over the param's transport."""
    argv = everything_argv()
    made: List[McpClient] = []
    server = None
    if request.param == "http":
        server = EverythingHttp().__enter__()

    def make(**kwargs: Any) -> McpClient:
        if server is not None:
            transport: Any = HttpTransport(server.url)
        else:
            transport = StdioTransport(argv[0], [*argv[1:], "stdio"])
        client = McpClient("everything", transport, timeout=TIMEOUT, **kwargs)
        made.append(client)
        return client.connect()

    try:
        yield make
    finally:
        for client in made:
            client.close()
        if server is not None:
            server.__exit__()


class _Records(logging.Handler):
    """Collects records and sets an Event when one whose message contains ``needle`` arrives."""

    def __init__(self, needle: str) -> None:
        super().__init__(logging.DEBUG)
        self.needle = needle
        self.seen = threading.Event()
        self.records: List[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        if self.needle in record.getMessage():
            self.seen.set()


@pytest.fixture
def server_log() -> Iterator[Callable[[str], _Records]]:
    """Return ``watch(needle)``: a handler on ``agcore_sync.mcp.server.everything``, removed at teardown."""
    logger = logging.getLogger("agcore_sync.mcp.server.everything")
    added: List[_Records] = []
    old_level = logger.level
    logger.setLevel(logging.DEBUG)

    def watch(needle: str) -> _Records:
        handler = _Records(needle)
        logger.addHandler(handler)
        added.append(handler)
        return handler

    yield watch
    for handler in added:
        logger.removeHandler(handler)
    logger.setLevel(old_level)


def test_resources_are_listed_read_as_text_and_bytes_and_templates_listed(connect):
    client = connect()
    resources = client.list_resources()
    assert resources and all(r.uri and r.name for r in resources)
    markdown = next(r for r in resources if r.mime_type == "text/markdown")
    (part,) = client.read_resource(markdown.uri)
    assert part.uri == markdown.uri and part.text and part.text.startswith("#") and part.blob is None
    templates = {t.uri_template: t for t in client.list_resource_templates()}
    assert "demo://resource/dynamic/blob/{resourceId}" in templates
    (blob,) = client.read_resource("demo://resource/dynamic/blob/7")
    assert blob.text is None and isinstance(blob.blob, bytes) and blob.blob
    (text,) = client.read_resource("demo://resource/dynamic/text/7")
    assert text.blob is None and "7" in text.text


def test_reading_an_unknown_resource_raises_mcp_error_and_the_client_stays_usable(connect):
    client = connect()
    with pytest.raises(McpError) as caught:
        client.read_resource("demo://no/such/resource")
    assert caught.value.code is not None and caught.value.recoverable
    client.ping()


def test_a_subscribed_resource_s_updates_reach_its_callback_and_stop_after_unsubscribe(connect):
    client = connect()
    uri = client.list_resources()[0].uri
    updated: List[str] = []
    seen = threading.Event()

    def on_update(changed: str) -> None:
        updated.append(changed)
        seen.set()

    client.subscribe_resource(uri, on_update)
    # The toggle sends one update of every subscribed resource at once.
    client.call_tool("toggle-subscriber-updates", {})
    assert seen.wait(NOTICE_TIMEOUT)
    assert set(updated) == {uri}
    client.unsubscribe_resource(uri)
    with pytest.raises(TypeError):
        client.subscribe_resource(uri, "not callable")


def test_prompts_are_listed_and_filled_in_as_messages(connect):
    client = connect()
    prompts = {p.name: p for p in client.list_prompts()}
    assert {"simple-prompt", "args-prompt"} <= set(prompts)
    city = prompts["args-prompt"].arguments[0]
    assert (city.name, city.required) == ("city", True)
    simple = client.get_prompt("simple-prompt")
    assert [m.role.value for m in simple.messages] == ["user"]
    assert simple.messages[0].text == "This is a simple prompt without arguments."
    filled = client.get_prompt("args-prompt", {"city": "Lyon", "state": "Rhone"})
    assert "Lyon" in filled.messages[0].text
    with pytest.raises(McpError):
        client.get_prompt("no-such-prompt")


def test_completion_suggests_values_for_a_prompt_argument(connect):
    client = connect()
    assert client.complete(("prompt", "completable-prompt"), "department", "Eng") == ["Engineering"]
    names = client.complete(("prompt", "completable-prompt"), "name", "", context={"department": "Engineering"})
    assert names and all(isinstance(n, str) for n in names)
    with pytest.raises(ValueError, match="ref must be"):
        client.complete(("tool", "x"), "a", "b")


def test_server_log_messages_reach_the_server_logger_after_set_logging_level(connect, server_log):
    client = connect()
    records = server_log("level")
    client.set_logging_level(logging.DEBUG)
    client.call_tool("toggle-simulated-logging", {})
    assert records.seen.wait(NOTICE_TIMEOUT)
    record = next(r for r in records.records if "level" in r.getMessage())
    assert record.name == "agcore_sync.mcp.server.everything"
    # The server names the level in the text: the record's level is the mapped one.
    expected = {"Debug": logging.DEBUG, "Info": logging.INFO, "Notice": logging.WARNING, "Warning": logging.WARNING,
                "Error": logging.ERROR, "Critical": logging.CRITICAL, "Alert": logging.CRITICAL,
                "Emergency": logging.CRITICAL}
    for seen in records.records:
        word = seen.getMessage().split(": ", 1)[-1].split("-")[0].split(" ")[0]
        assert seen.levelno == expected[word], seen.getMessage()
    with pytest.raises(ValueError, match="level must be"):
        client.set_logging_level("verbose")


def test_progress_of_a_call_arrives_in_order_before_the_call_returns(connect):
    client = connect()
    steps: List[Tuple[float, Any, Any]] = []
    result = client.call_tool(
        "trigger-long-running-operation", {"duration": 1, "steps": 4},
        progress=lambda progress, total, message: steps.append((progress, total, message)),
    )
    # No wait here: every callback has run when call_tool returns.
    assert "completed" in result.text
    assert [s[0] for s in steps] == [1, 2, 3, 4]
    assert all(s[1] == 4 for s in steps)


def test_sampling_requests_are_answered_by_a_provider_and_can_be_refused(connect):
    provider = MockProvider([MockProvider.text("sampled answer")])
    client = connect(sampling_handler=sampling_handler_for(provider))
    result = client.call_tool("trigger-sampling-request", {"prompt": "say something", "maxTokens": 50})
    assert "sampled answer" in result.text and "mock-model" in result.text
    refusing = connect(sampling_handler=sampling_handler_for(MockProvider([]), approve=lambda params: False))
    refused = refusing.call_tool("trigger-sampling-request", {"prompt": "no", "maxTokens": 5})
    assert refused.is_error or "rejected" in refused.text.lower()


def test_ping_is_answered(connect):
    connect().ping()


def test_roots_are_answered_and_a_change_is_announced(connect, server_log):
    client = connect(roots=[{"uri": "file:///first", "name": "first"}])
    assert "file:///first" in client.call_tool("get-roots-list", {}).text
    records = server_log("2 root(s)")
    client.set_logging_level("debug")
    client.set_roots([{"uri": "file:///a", "name": "a"}, {"uri": "file:///b", "name": "b"}])
    # The server asks roots/list again on list_changed and logs what it got.
    assert records.seen.wait(NOTICE_TIMEOUT)
    assert "file:///b" in client.call_tool("get-roots-list", {}).text


def test_set_roots_without_roots_declared_is_a_value_error(connect):
    with pytest.raises(ValueError, match="without roots"):
        connect().set_roots([{"uri": "file:///x", "name": "x"}])


def test_tool_content_reaches_the_model_as_images_and_text_with_uris(connect):
    client = connect()
    tools = {tool.name: tool for tool in client.into_tools()}
    image = tools["get-tiny-image"].execute({})
    assert any(isinstance(b, ImageBlock) and b.media_type == "image/png" for b in image)
    assert base64.b64decode(next(b for b in image if isinstance(b, ImageBlock)).data)[:4] == b"\x89PNG"
    links = tools["get-resource-links"].execute({"count": 2})
    uris = [b.text for b in links if isinstance(b, TextBlock) and "demo://" in b.text]
    assert len(uris) == 2


def test_structured_content_is_checked_against_the_output_schema(connect):
    client = connect()
    tool = next(t for t in client.into_tools() if t.name == "get-structured-content")
    assert tool.output_schema is not None
    out = tool.execute({"location": "New York"})
    assert out  # text, checked: temperature, conditions and humidity match the schema


def test_the_resource_tool_lets_the_model_read_listed_resources(connect):
    from agcore_sync import McpResourceTool

    client = connect()
    tool = McpResourceTool(client)
    first = client.list_resources()[0]
    assert tool.name == "read_resource" and first.uri in tool.description
    assert "demo://resource/dynamic/text/{resourceId}" in tool.description
    assert tool.execute({"uri": first.uri}) == client.read_resource(first.uri)[0].text
    blob = tool.execute({"uri": "demo://resource/dynamic/blob/3"})
    assert isinstance(blob, list) and "demo://resource/dynamic/blob/3" in blob[0].text
    with pytest.raises(McpError):
        tool.execute({"uri": "demo://nothing/here"})
