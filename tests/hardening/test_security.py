"""Security review, one test per point: keys stay secret, servers get a safe environment,
the model cannot get around permissions or schemas, and oversized tool results are cut.
"""

from __future__ import annotations

import base64
import json
import logging
import sys
import threading
import traceback
from http.server import BaseHTTPRequestHandler
from typing import Any, Dict, Iterator, List

import pytest
import responses

from agcore_sync.agent.session import AgentSession
from agcore_sync.errors import AgcoreError
from agcore_sync.hooks import HookEvent, Hooks
from agcore_sync.llm.anthropic import AnthropicProvider
from agcore_sync.llm.events import Error, ToolExecutionCompleted
from agcore_sync.llm.mock import MockProvider
from agcore_sync.llm.openai import OpenAIProvider
from agcore_sync.llm.retry import RetryConfig, RetryProvider
from agcore_sync.llm.types import Message, MessageRequest, Role, ToolUseBlock
from agcore_sync.loop.cycle import CycleConfig, LlmCycle
from agcore_sync.mcp import StdioTransport
from agcore_sync.mcp.transports.http import HttpTransport
from agcore_sync.tools.base import BaseTool
from agcore_sync.tools.error import InvalidArgumentsError, ToolError
from agcore_sync.tools.permission import Permission, PermissionChecker, PermissionConfig
from agcore_sync.tools.registry import ToolRegistry
from tests.support.http_server import LocalHttpServer

OPENAI_KEY = "sk-proj-SECRET-openai-0123456789abcdef"
ANTHROPIC_KEY = "sk-ant-api03-SECRET-anthropic-0123456789"
OPENAI_URL = "https://api.openai.com/v1/chat/completions"
ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"
#: Bound on every wait of these tests.
WAIT = 10.0


@pytest.fixture
def api() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock() as mock:
        yield mock


def openai_error(message: str, type_: str, code: Any = None) -> Dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


def anthropic_error(type_: str, message: str) -> Dict[str, Any]:
    return {"type": "error", "error": {"type": type_, "message": message}, "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"}


def everything_said(error: BaseException) -> List[str]:
    """Every text an exception can show: str, repr, body, its whole chain and traceback."""
    texts = []
    seen = set()
    current: Any = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        texts += [str(current), repr(current), repr(getattr(current, "body", None))]
        current = current.__cause__ or current.__context__
    texts.append("".join(traceback.format_exception(type(error), error, error.__traceback__)))
    return texts


# -- 1. API keys --------------------------------------------------------------


def test_an_api_key_appears_in_no_log_repr_error_event_or_saved_session_even_when_servers_echo_it(api, caplog):
    caplog.set_level(logging.DEBUG)  # every logger, every level (urllib3's request lines included)
    api.add(responses.POST, OPENAI_URL, status=401,
            json=openai_error(f"Incorrect API key provided: {OPENAI_KEY}.", "invalid_request_error", "invalid_api_key"))
    api.add(responses.POST, OPENAI_URL, content_type="text/event-stream",
            body=f'data: {{"error": {{"message": "bad key {OPENAI_KEY}", "type": "server_error"}}}}\n\n'.encode())
    api.add(responses.POST, OPENAI_URL, status=500, json=openai_error(f"upstream saw key {OPENAI_KEY}", "server_error"))
    api.add(responses.POST, ANTHROPIC_URL, status=403, json=anthropic_error("permission_error", f"key {ANTHROPIC_KEY}"))
    api.add(responses.POST, ANTHROPIC_URL, content_type="text/event-stream",
            body=f"event: message_start\ndata: not json {ANTHROPIC_KEY}\n\n".encode())
    openai = RetryProvider(OpenAIProvider("gpt-4o-mini", api_key=OPENAI_KEY),
                           RetryConfig(max_retries=1, jitter=False), sleep=lambda _: None)
    anthropic = AnthropicProvider("claude-sonnet-4-5", api_key=ANTHROPIC_KEY)
    texts: List[str] = [repr(openai), repr(openai.inner), repr(anthropic)]
    for provider in (openai, anthropic):
        with AgentSession(provider, CycleConfig(retry=None)) as session:
            with pytest.raises(AgcoreError) as info:
                session.submit_turn("hello")
            texts += everything_said(info.value)
            events = list(session.submit_turn_stream("hello again"))
            assert isinstance(events[-1], Error)
            texts += everything_said(events[-1].error)
            texts += [json.dumps(e.to_dict()) for e in events]
            texts += [repr(session), json.dumps(session.to_dict())]
    formatter = logging.Formatter()
    for record in caplog.records:
        texts.append(formatter.format(record))
    assert caplog.records, "the run logged nothing: the log check would prove nothing"
    for text in texts:
        assert OPENAI_KEY not in text and ANTHROPIC_KEY not in text, text


URL_PASSWORD = "pw-SECRET-userinfo-4242"
HEADER_SECRETS = {"Authorization": "Bearer tok-SECRET-authorization-77", "api-key": "SECRET-azure-api-key-55",
                  "X-Api-Key": "SECRET-x-api-key-66", "X-Session-Token": "SECRET-session-token-88",
                  "X-Client-Secret": "SECRET-client-secret-99", "X-Trace": "not-a-secret-trace-id"}


class _EchoingHandler(BaseHTTPRequestHandler):
    """Answers 500 with an OpenAI error body that repeats every header and the Basic credentials it got."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        seen = [f"{name}={value}" for name, value in self.headers.items()]
        basic = self.headers.get("Authorization", "")
        if basic.startswith("Basic "):
            seen.append("basic=" + base64.b64decode(basic[6:]).decode())
        body = json.dumps(openai_error("proxy saw " + "; ".join(seen), "server_error")).encode()
        self.send_response(500)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_a_url_password_and_credential_headers_are_masked_in_reprs_errors_and_logs_like_the_key(caplog):
    caplog.set_level(logging.DEBUG)
    with LocalHttpServer(_EchoingHandler, name="echo-secrets") as server:
        for extra in (HEADER_SECRETS, {}):  # with the headers, and the URL's userinfo alone (sent as Basic auth)
            url = f"http://user:{URL_PASSWORD}@127.0.0.1:{server.port}/v1"
            provider = OpenAIProvider("gpt-4o-mini", api_key=OPENAI_KEY, base_url=url, extra_headers=extra)
            texts = [repr(provider)]
            try:
                with pytest.raises(AgcoreError) as info:
                    provider.chat(MessageRequest(model="gpt-4o-mini", messages=(Message.user("hi"),)))
            finally:
                provider.close()
            texts += everything_said(info.value)
            said = " ".join(texts)
            assert "proxy saw" in said and "not-a-secret-trace-id" in said or not extra, said
    formatter = logging.Formatter()
    texts += [formatter.format(record) for record in caplog.records]
    texts += [repr(vars(record)) for record in caplog.records]
    assert any("POST" in text for text in texts), "the request's DEBUG line was not logged: the check proves nothing"
    secrets = [URL_PASSWORD, OPENAI_KEY] + [value for name, value in HEADER_SECRETS.items() if name != "X-Trace"]
    secrets.append("tok-SECRET-authorization-77")  # the bare token, without its scheme
    for text in texts:
        for secret in secrets:
            assert secret not in text, (secret, text)
    assert f"user:***@127.0.0.1:{server.port}" in repr(provider)


def test_an_mcp_http_transports_auth_header_stays_out_of_its_repr():
    transport = HttpTransport("https://mcp.example.com/mcp", headers={"Authorization": "Bearer SECRET-token-42"})
    assert "SECRET-token-42" not in repr(transport)


# -- 2. the environment of MCP servers ------------------------------------------


def test_an_mcp_server_started_with_the_defaults_sees_none_of_the_parents_secrets(monkeypatch):
    secrets = {"OPENAI_API_KEY": "sk-x", "ANTHROPIC_API_KEY": "sk-ant-x", "GITHUB_TOKEN": "ghp_x",
               "AWS_SECRET_ACCESS_KEY": "aws-x", "DATABASE_URL": "postgres://u:p@h/db"}
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    # A "server" that reports its environment as one JSON-RPC notification, then exits.
    script = ("import json, os; print(json.dumps({'jsonrpc': '2.0', 'method': 'env', "
              "'params': dict(os.environ)}), flush=True)")
    transport = StdioTransport(sys.executable, ["-c", script])
    received: List[Dict[str, Any]] = []
    done = threading.Event()
    transport.start(lambda message: (received.append(message), done.set()), lambda error: done.set())
    try:
        assert done.wait(WAIT)
    finally:
        transport.close()
    env = received[0]["params"]
    assert not set(secrets) & set(env), sorted(env)
    assert set(env) <= {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_CTYPE"}


# -- 3. what the model sends cannot get around the checks ---------------------------


class DeleteFile(BaseTool):
    """A dangerous tool that records every run."""

    name = "delete_file"
    description = "Delete a file."
    parameters = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"],
                  "additionalProperties": False}
    required_permissions = (Permission.DELETE,)

    def __init__(self) -> None:
        self.runs: List[Any] = []

    def execute(self, args: Dict[str, Any]) -> Any:
        self.runs.append(args)
        return "deleted"


class ReadFile(DeleteFile):
    """The same shape, allowed by the default permissions."""

    name = "read_file"
    description = "Read a file."
    required_permissions = (Permission.READ,)


def openai_call(call_id: str, name: str, arguments: str) -> Dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def openai_completion(message: Dict[str, Any], finish_reason: str) -> Dict[str, Any]:
    return {
        "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT", "object": "chat.completion", "created": 1741569952,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": None, "refusal": None,
                                             "annotations": [], **message},
                     "logprobs": None, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 19, "completion_tokens": 10, "total_tokens": 29},
    }


#: Calls a model might make to get around the checks, and why each must fail.
SNEAKY_CALLS = [
    ("call_1", "Delete_File", '{"path": "/etc/passwd"}'),  # another case: not the tool
    ("call_2", " delete_file ", '{"path": "/etc/passwd"}'),  # surrounding spaces
    ("call_3", "delete_file\u200b", '{"path": "/etc/passwd"}'),  # a zero-width space
    ("call_4", "delete_file", '{"path": "/etc/passwd"}'),  # the real name: denied (DELETE)
    ("call_5", "read_file", json.dumps(json.dumps({"path": "/etc/passwd"}))),  # an object inside a JSON string
    ("call_6", "read_file", '[{"path": "/etc/passwd"}]'),  # an array
    ("call_7", "read_file", '{"path": "/etc/passwd", "mode": "rw"}'),  # a property the schema forbids
    ("call_8", "read_file", '{"path": ["/etc/passwd"]}'),  # the wrong type
    ("call_9", "read_file", '{"path": "/etc/passwd"'),  # not JSON at all
]


def test_tool_names_and_arguments_from_the_model_never_get_around_permissions_or_schemas(api):
    api.add(responses.POST, OPENAI_URL, json=openai_completion(
        {"tool_calls": [openai_call(*call) for call in SNEAKY_CALLS]}, "tool_calls"))
    api.add(responses.POST, OPENAI_URL, json=openai_completion({"content": "I could not."}, "stop"))
    delete, read = DeleteFile(), ReadFile()
    registry = ToolRegistry(PermissionChecker(PermissionConfig()))
    registry.register_all([delete, read])
    cycle = LlmCycle(OpenAIProvider("gpt-4o-mini", api_key=OPENAI_KEY), CycleConfig(retry=None))
    try:
        assert cycle.submit_with_tools("clean up", registry).message.text == "I could not."
    finally:
        registry.close()
    assert delete.runs == [] and read.runs == []
    results = [m for m in cycle.messages() if m.role is Role.TOOL]
    assert [r.content[0].tool_use_id for r in results] == [c[0] for c in SNEAKY_CALLS]
    assert all(r.content[0].is_error for r in results)
    texts = [r.content[0].content for r in results]
    assert all("no tool named" in t for t in texts[:3]), texts[:3]
    assert "denied" in texts[3] and "rule 1" in texts[3], texts[3]
    # Every argument problem is reported to the model as invalid arguments, never coerced.
    sent = json.loads(api.calls[1].request.body)["messages"]
    assert [m["content"] for m in sent if m["role"] == "tool"] == texts


@pytest.mark.parametrize("arguments", ['{"path": "/etc/passwd"}', '["/etc/passwd"]', "/etc/passwd", ""])
def test_arguments_that_are_not_an_object_are_refused_by_the_registry_itself(arguments):
    read = ReadFile()
    with ToolRegistry() as registry:
        registry.register(read)
        invocation = registry.invoke("read_file", arguments)
    assert isinstance(invocation.error, InvalidArgumentsError)
    assert read.runs == []


# -- 4. oversized tool results -------------------------------------------------------


class Flood(BaseTool):
    """Answers (or fails) with far more text than the limit."""

    name = "flood"
    description = "Return a lot."
    parameters = {"type": "object", "properties": {"fail": {"type": "boolean"}}}

    def execute(self, args: Dict[str, Any]) -> Any:
        text = "\u00e9" * 600_000  # 1.2 MB of UTF-8, two bytes per character
        if args.get("fail"):
            raise ToolError(f"the backend answered: {text}")
        return text


@pytest.mark.parametrize("fail", [False, True], ids=["result", "error"])
def test_a_tool_result_over_the_limit_is_cut_before_the_model_the_hooks_or_the_stream_see_it(fail):
    limit = 1000
    seen_by_hook: List[str] = []
    hooks = Hooks()
    hooks.on(HookEvent.POST_TOOL_USE, lambda ctx: seen_by_hook.append(ctx.invocation.content()))
    provider = MockProvider([MockProvider.tool_calls(("flood", {"fail": fail})), MockProvider.text("ok")])
    cycle = LlmCycle(provider, CycleConfig(retry=None, max_tool_result_bytes=limit), hooks=hooks)
    with ToolRegistry() as registry:
        registry.register(Flood())
        with cycle.submit_with_tools_stream("go", registry) as stream:
            events = list(stream)
    [completed] = [e for e in events if isinstance(e, ToolExecutionCompleted)]
    assert completed.is_error is fail
    assert len(completed.result_summary) <= 200
    [result_message] = [m for m in provider.requests[1].messages if m.role is Role.TOOL]
    sent = result_message.content[0].content
    marker_room = 100
    assert len(sent.encode("utf-8")) <= limit + marker_room, len(sent.encode("utf-8"))
    assert "bytes cut" in sent
    assert sent.encode("utf-8").decode("utf-8") == sent  # cut on a character boundary
    if not fail:
        assert seen_by_hook == [sent]


def test_a_tool_use_block_whose_input_is_a_string_is_never_parsed_a_second_time():
    # A string input is what the provider kept because it was not a JSON object;
    # the loop hands it to the registry as is, which refuses it.
    read = ReadFile()
    provider = MockProvider([
        MockProvider.tool_calls(ToolUseBlock("call_1", "read_file", '{"path": "/etc/passwd"}')),
        MockProvider.text("done"),
    ])
    with ToolRegistry() as registry:
        registry.register(read)
        LlmCycle(provider, CycleConfig(retry=None)).submit_with_tools("go", registry)
    assert read.runs == []
    [result] = [m for m in provider.requests[1].messages if m.role is Role.TOOL]
    assert result.content[0].is_error and "read_file" in result.content[0].content


def test_no_log_record_field_and_no_span_carries_an_api_key(api, caplog):
    sdk = pytest.importorskip("opentelemetry.sdk.trace")
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from agcore_sync import telemetry

    caplog.set_level(logging.DEBUG)
    api.add(responses.POST, OPENAI_URL, status=500, json=openai_error(f"upstream saw key {OPENAI_KEY}", "server_error"))
    api.add(responses.POST, OPENAI_URL, status=401,
            json=openai_error(f"Incorrect API key provided: {OPENAI_KEY}.", "invalid_request_error", "invalid_api_key"))
    exporter = InMemorySpanExporter()
    tracer_provider = sdk.TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.instrument(tracer_provider=tracer_provider, capture_content=True)
    try:
        provider = OpenAIProvider("gpt-4o-mini", api_key=OPENAI_KEY)
        config = CycleConfig(retry=RetryConfig(max_retries=1, initial_backoff=0.0, jitter=False))
        with AgentSession(provider, config) as session:
            with pytest.raises(AgcoreError):
                session.submit_turn("hello")
    finally:
        telemetry.uninstrument()
        tracer_provider.shutdown()
    ours = [r for r in caplog.records if r.name.startswith("agcore_sync")]
    assert ours and all(r.agcore_turn_id for r in ours), "the turn logged nothing of its own"
    texts = [repr(vars(record)) for record in caplog.records]
    spans = exporter.get_finished_spans()
    assert [s.name for s in spans] == ["chat gpt-4o-mini", "invoke_agent"]
    texts += [span.to_json() for span in spans]
    for text in texts:
        assert OPENAI_KEY not in text, text


# -- 6. cassettes (agcore_sync.testing) ----------------------------------------------


def test_no_key_auth_header_or_token_reaches_a_cassette_even_when_servers_echo_them(stream_server, tmp_path):
    from agcore_sync.llm.types import Message, MessageRequest
    from agcore_sync.mcp import McpClient
    from agcore_sync.testing import RecordingProvider, RecordingTransport
    from tests.mcp_servers.scripted_http import ScriptedServer
    from tests.support.wire import openai_error_body, openai_text_stream

    header_secret, token = "hdr-SECRET-0123456789", "oauth-SECRET-token-0123456789"
    stream_server.add_response([json.dumps(openai_error_body(f"Incorrect API key provided: {OPENAI_KEY}.",
                                                             "invalid_request_error")).encode()],
                               status=401, headers={"Content-Type": "application/json"})
    stream_server.add_response(openai_text_stream("chatcmpl-sec", ["fine"], (5, 1)))
    inner = OpenAIProvider(model="gpt-4o-mini", api_key=OPENAI_KEY, base_url=f"{stream_server.url}/v1",
                           extra_headers={"x-api-key": header_secret, "X-Session-Token": token})
    provider = RecordingProvider(inner, tmp_path / "llm.jsonl")
    request = MessageRequest(None, [Message.user("hi")])
    try:
        with pytest.raises(AgcoreError):
            provider.chat(request)
        list(provider.chat_stream(request))
    finally:
        provider.close()
    assert all(r.headers["authorization"] == f"Bearer {OPENAI_KEY}" for r in stream_server.requests)  # sent...

    def handle(ex: Any) -> None:
        if ex.method == "POST" and ex.rpc_method == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "s", "version": "1"}}
            ex.send_json({"jsonrpc": "2.0", "id": ex.body["id"], "result": result},
                         headers={"Mcp-Session-Id": "session-1"})
        elif ex.method == "POST" and "id" not in ex.body:
            ex.send_empty(202)
        elif ex.method in ("GET", "DELETE"):
            ex.send_empty(405)
        else:
            ex.send_json({"jsonrpc": "2.0", "id": ex.body["id"], "result": {"tools": []}})

    with ScriptedServer(handle) as server:
        transport = RecordingTransport(HttpTransport(server.url, headers={"Authorization": f"Bearer {token}"}),
                                       tmp_path / "mcp.jsonl")
        with McpClient("secure", transport, timeout=WAIT) as client:
            assert client.list_tools() == []
        assert all(r.headers["authorization"] == f"Bearer {token}" for r in server.requests if r.method == "POST")

    for cassette in ("llm.jsonl", "mcp.jsonl"):
        text = (tmp_path / cassette).read_text("utf-8")
        assert "initialize" in text if cassette == "mcp.jsonl" else "Incorrect API key provided: ***" in text
        for secret in (OPENAI_KEY, header_secret, token, "authorization", "Authorization", "x-api-key"):
            assert secret not in text, (cassette, secret)  # ...and never written
