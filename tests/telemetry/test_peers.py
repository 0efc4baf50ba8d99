"""Spans with real peers: an MCP server over stdio, a Flask app on 127.0.0.1, a clean interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import requests
from opentelemetry.trace import SpanKind, StatusCode

from agcore_sync.agent.session import AgentSession
from agcore_sync.llm.mock import MockProvider
from agcore_sync.mcp import McpClient, StdioTransport
from agcore_sync.mcp.client._requests import RequestOptions
from agcore_sync.tools.error import McpError
from agcore_sync.tools.function import tool
from agcore_sync.tools.registry import ToolRegistry

WAIT = 5.0
RAW_SERVER = str(Path(__file__).resolve().parents[1] / "mcp_servers" / "raw_server.py")
ROOT = Path(__file__).resolve().parents[2]


def traceparent(span) -> str:
    context = span.context
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


def test_an_mcp_call_is_a_client_span_whose_trace_context_reaches_the_server(otel):
    with otel.tracer.start_as_current_span("job"):
        with McpClient("raw", StdioTransport(sys.executable, [RAW_SERVER])) as client:
            params = json.loads(client.call_tool("params").text)
    assert otel.tree() == "job\n  initialize\n  tools/call params"
    call = otel.span("tools/call params")
    assert call.kind is SpanKind.CLIENT
    assert dict(call.attributes) == {"mcp.method.name": "tools/call", "gen_ai.tool.name": "params",
                                     "gen_ai.operation.name": "execute_tool", "network.transport": "pipe"}
    assert call.status.status_code is StatusCode.UNSET
    # The server got the span's W3C trace context in params._meta.
    assert params["_meta"] == {"traceparent": traceparent(call)}
    assert params["name"] == "params"


def test_an_mcp_tool_in_a_turn_nests_under_its_execute_tool_span(otel):
    with McpClient("raw", StdioTransport(sys.executable, [RAW_SERVER])) as client, ToolRegistry() as registry:
        registry.register_all(client.into_tools())
        provider = MockProvider([MockProvider.tool_calls(("c1", "echo", {"text": "hi"})), MockProvider.text("ok")])
        AgentSession(provider, registry=registry).submit_turn("echo hi")
    assert otel.tree() == ("initialize\ntools/list\n"
                           "invoke_agent\n  chat mock-model\n  execute_tool echo\n    tools/call echo\n"
                           "  chat mock-model")


def test_a_tool_result_with_is_error_is_a_tool_error_span(otel):
    with McpClient("raw", StdioTransport(sys.executable, [RAW_SERVER])) as client:
        assert client.call_tool("no_such_tool_here").is_error
    span = otel.span("tools/call no_such_tool_here")
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == "tool_error"


def test_a_json_rpc_error_answer_sets_error_type_to_its_code(otel):
    with McpClient("raw", StdioTransport(sys.executable, [RAW_SERVER])) as client:
        with pytest.raises(McpError):
            # The seam every request takes; no server knows this method.
            client._requester.request("agcore/no_such_method", None, RequestOptions(timeout=WAIT))
    span = otel.span("agcore/no_such_method")
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes["error.type"], span.attributes["rpc.response.status_code"]) == ("-32601", "-32601")


def test_a_turn_started_in_a_flask_request_sits_under_the_request_span(otel):
    flask = pytest.importorskip("flask")
    instrumentation = pytest.importorskip("opentelemetry.instrumentation.flask")
    from werkzeug.serving import make_server

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    registry = ToolRegistry()
    registry.register(add)
    app = flask.Flask("telemetry_test")
    instrumentation.FlaskInstrumentor().instrument_app(app, tracer_provider=otel.tracer_provider)

    @app.post("/chat")
    def chat():
        provider = MockProvider([MockProvider.tool_calls(("c1", "add", {"a": 1, "b": 2})), MockProvider.text("3")])
        stream = AgentSession(provider, registry=registry).submit_turn_stream(flask.request.json["message"])

        def sse():
            with stream:
                for event in stream:
                    yield f"data: {json.dumps(event.to_dict())}\n\n"

        return flask.Response(sse(), mimetype="text/event-stream")

    before = set(threading.enumerate())
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, name="test-flask-server")
    thread.start()
    try:
        reply = requests.post(f"http://127.0.0.1:{server.server_port}/chat", json={"message": "1+2?"}, timeout=WAIT)
        assert reply.status_code == 200 and '"message_complete"' in reply.text
    finally:
        server.shutdown()
        server.server_close()
        thread.join(WAIT)
        registry.close()
        instrumentation.FlaskInstrumentor().uninstrument_app(app)
        for left in set(threading.enumerate()) - before:
            left.join(WAIT)
    assert otel.tree() == "POST /chat\n  invoke_agent\n    chat mock-model\n    execute_tool add\n    chat mock-model"
    request = otel.span("POST /chat")
    assert request.kind is SpanKind.SERVER
    assert otel.span("invoke_agent").parent.span_id == request.context.span_id


def test_importing_agcore_sync_imports_no_opentelemetry():
    code = ("import sys, agcore_sync, agcore_sync.telemetry; from agcore_sync import AgentSession, LlmCycle; "
            "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_instrument_without_the_otel_extra_names_the_extra():
    code = ("import sys; sys.modules['opentelemetry'] = None\n"
            "from agcore_sync import telemetry\n"
            "try:\n    telemetry.instrument()\nexcept ImportError as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT,
                         check=True)
    assert "pip install 'agcore_sync[otel]'" in out.stdout
