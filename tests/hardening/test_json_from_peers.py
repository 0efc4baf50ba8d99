"""JSON from a peer: NaN/Infinity in tool arguments and nesting too deep end in the path's typed error.

DESIGN.md "Round 5 / Trust": NaN/Infinity in tool arguments is invalid
arguments (a tool error back to the model; the tool never runs); nesting
too deep for the parser raises the documented typed error of its path
(``ResponseParseError``, ``OutputValidationError``, ``SessionStoreError``;
tool arguments: invalid arguments), never ``RecursionError``.
"""

from __future__ import annotations

import json
import sqlite3
from http.server import BaseHTTPRequestHandler

import pytest

from agcore_sync import (
    AgentError,
    AgentSession,
    CycleConfig,
    LlmCycle,
    Message,
    MockProvider,
    OutputValidationError,
    ResponseParseError,
    ServerError,
    SessionStoreError,
    ToolRegistry,
    ToolUseBlock,
)
from agcore_sync._http import peer_json
from agcore_sync.agent.sqlite_store import SqliteSessionStore
from agcore_sync.llm._tool_calls import parse_tool_arguments
from agcore_sync.llm.anthropic import AnthropicProvider
from agcore_sync.llm.openai import OpenAIProvider
from agcore_sync.llm.output import OUTPUT_TOOL_NAME
from agcore_sync.llm.types import MessageRequest
from agcore_sync.tools.base import BaseTool
from tests.support.http_server import LocalHttpServer

CONFIG = CycleConfig(retry=None, tool_timeout_secs=None)
#: Deeper than any parser takes (Python's raises RecursionError near 1,000).
DEEP = 100_000
REQUEST = MessageRequest(model="m", messages=(Message.user("hi"),))


def deep_json(depth: int = DEEP) -> str:
    return '{"a":' * depth + "1" + "}" * depth


class Runs(BaseTool):
    """``echo``: takes any object (so only the JSON rules can refuse it) and records each run."""

    name = "echo"
    parameters = {"type": "object"}

    def __init__(self):
        self.calls = []
        self.tool = self

    def execute(self, args):
        self.calls.append(args)
        return "ok"


@pytest.fixture
def runs():
    found = Runs()
    with ToolRegistry() as registry:
        registry.register(found.tool)
        found.registry = registry
        yield found


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        status, content_type, body = self.server.owner.reply
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def server():
    with LocalHttpServer(_Handler, name="peer-json", path="/v1") as running:
        yield running


def _openai_body(arguments: str) -> bytes:
    return json.dumps({"id": "c", "object": "chat.completion", "model": "m", "choices": [{
        "index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "echo", "arguments": arguments}}]}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()


# -- NaN and Infinity in tool arguments ---------------------------------------------------------------------------


@pytest.mark.parametrize("text", ['{"x": NaN}', '{"x": Infinity}', '{"x": [-Infinity]}'])
def test_arguments_with_nan_or_infinity_off_the_wire_stay_text(text):
    assert parse_tool_arguments(text) == text


def test_an_openai_call_with_nan_arguments_keeps_them_as_text(server):
    server.reply = (200, "application/json", _openai_body('{"x": NaN}'))
    provider = OpenAIProvider(model="m", api_key="k", base_url=server.url)
    try:
        call = provider.chat(REQUEST).message.tool_uses[0]
    finally:
        provider.close()
    assert call.input == '{"x": NaN}'


@pytest.mark.parametrize("arguments", ['{"x": NaN}', {"x": float("nan")}, {"x": [float("-inf")]}],
                         ids=["wire text", "parsed nan", "parsed -inf"])
def test_nan_arguments_are_a_tool_error_back_to_the_model_and_the_session_still_saves(runs, arguments, tmp_path):
    provider = MockProvider([MockProvider.tool_calls(ToolUseBlock("c1", "echo", arguments)), MockProvider.text("ok")])
    session = AgentSession(provider, CONFIG, runs.registry)

    session.submit_turn("go")

    assert runs.calls == []  # the tool never ran
    result = [b for m in provider.requests[1].messages for b in m.content if b.type == "tool_result"][0]
    assert result.is_error and ("NaN" in str(result.content) or "Infinity" in str(result.content))
    json.dumps(session.to_dict(), allow_nan=False)  # strict JSON: no NaN kept anywhere
    with SqliteSessionStore(str(tmp_path / "s.db")) as store:
        session.save(store, "s1")
        assert AgentSession.load(store, "s1", provider=provider).turn_index == 1


def test_the_registry_itself_refuses_nan_arguments(runs):
    invocation = runs.registry.invoke("echo", {"x": float("inf")})
    assert invocation.error is not None and "invalid arguments" in str(invocation.error)
    assert runs.calls == []


# -- nesting too deep -----------------------------------------------------------------------------------------------


def test_the_helper_never_raises_recursion_error():
    for text in (deep_json(), "[" * DEEP, deep_json(peer_json.MAX_DEPTH + 1)):
        with pytest.raises(peer_json.TooDeep):
            peer_json.loads(text)
    assert peer_json.loads(deep_json(peer_json.MAX_DEPTH - 1))


def test_a_deep_non_streamed_body_is_a_response_parse_error(server):
    server.reply = (200, "application/json", deep_json().encode())
    provider = OpenAIProvider(model="m", api_key="k", base_url=server.url)
    try:
        with pytest.raises(ResponseParseError, match="nested deeper"):
            provider.chat(REQUEST)
    finally:
        provider.close()


def test_a_deep_error_body_keeps_its_status_error(server):
    server.reply = (500, "application/json", deep_json(2000).encode())
    provider = OpenAIProvider(model="m", api_key="k", base_url=server.url)
    try:
        with pytest.raises(ServerError):
            provider.chat(REQUEST)
    finally:
        provider.close()


@pytest.mark.parametrize("cls", [OpenAIProvider, AnthropicProvider])
def test_a_deep_sse_event_is_a_response_parse_error(server, cls):
    server.reply = (200, "text/event-stream", b"data: " + deep_json().encode() + b"\n\n")
    provider = cls(model="m", api_key="k", base_url=server.url)
    try:
        with pytest.raises(ResponseParseError):
            list(provider.chat_stream(REQUEST))
    finally:
        provider.close()


@pytest.mark.parametrize("arguments", ["far", "wire", "parsed"])
def test_deep_tool_arguments_are_invalid_arguments_and_the_tool_never_runs(runs, arguments):
    if arguments == "far":
        arguments = deep_json()
    elif arguments == "wire":
        arguments = deep_json(peer_json.MAX_DEPTH + 5)
    elif arguments == "parsed":
        arguments = json.loads(deep_json(peer_json.MAX_DEPTH + 5))
    provider = MockProvider([MockProvider.tool_calls(ToolUseBlock("c1", "echo", arguments)), MockProvider.text("ok")])
    session = AgentSession(provider, CONFIG, runs.registry)

    session.submit_turn("go")

    assert runs.calls == []
    result = [b for m in provider.requests[1].messages for b in m.content if b.type == "tool_result"][0]
    assert result.is_error and "nested" in str(result.content)


@pytest.mark.parametrize("mode", ["native", "tool"])
def test_a_deep_structured_answer_is_an_output_validation_error(mode):
    schema = {"type": "object", "properties": {"a": {}}}
    if mode == "native":
        answer = MockProvider.text(deep_json())
    else:
        answer = MockProvider.tool_calls(ToolUseBlock("o", OUTPUT_TOOL_NAME, deep_json()))
    cycle = LlmCycle(MockProvider([answer]), CycleConfig(retry=None, output_retries=0, output_mode=mode))
    with pytest.raises(OutputValidationError, match="nested"):
        cycle.submit("go", output=schema)


def test_a_deep_stored_session_is_a_store_error_on_load_and_on_save(tmp_path):
    session = AgentSession(MockProvider([]), CONFIG)
    saved = session.to_dict()
    saved["system_prompt"] = json.loads(deep_json(peer_json.DOCUMENT_MAX_DEPTH + 10))
    path = str(tmp_path / "s.db")
    with SqliteSessionStore(path) as store:
        with pytest.raises(SessionStoreError, match="nested"):
            store.save("s1", saved, None)
        with pytest.raises(AgentError, match="nested"):
            AgentSession.from_dict(saved, provider=MockProvider([]))
        store.save("s2", session.to_dict(), None)
        # A row written by someone else, nested far deeper than any parser takes.
        with sqlite3.connect(path) as db:
            db.execute("UPDATE agcore_sessions SET data = ? WHERE id = ?", (deep_json(), "s2"))
        with pytest.raises(SessionStoreError, match="nested"):
            store.load("s2")
        with pytest.raises(SessionStoreError, match="nested"):
            AgentSession.load(store, "s2", provider=MockProvider([]))
