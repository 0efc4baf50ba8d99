"""The proof: a turn recorded against real peers replays to the same events and the same cost.

The turn is streamed, calls three tools in parallel (a local one, an MCP
server's tool, and one that needs approval), pauses for the approval, is
saved, loaded and resumed, then answers. It is recorded from an
``OpenAIProvider`` talking to a local HTTP server and a subprocess MCP
server; it is replayed with every connection and every subprocess refused.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from agcore_sync.agent.session import AgentSession
from agcore_sync.hooks import Approve
from agcore_sync.llm.events import ApprovalRequired, CostUpdate, ToolExecutionCompleted
from agcore_sync.llm.openai import OpenAIProvider
from agcore_sync.llm.provider import LlmProvider
from agcore_sync.mcp import McpClient, StdioTransport, Transport
from agcore_sync.testing import RecordingProvider, RecordingTransport, ReplayProvider, ReplayTransport
from agcore_sync.tools.function import tool
from agcore_sync.tools.registry import ToolRegistry
from tests.support.wire import openai_text_stream, openai_tool_call_stream

RAW_SERVER = str(Path(__file__).resolve().parents[1] / "mcp_servers" / "raw_server.py")
#: Bound on every MCP answer.
TIMEOUT = 20.0


def local_tools(sent: List[str], echo_done: threading.Event):
    @tool
    def get_weather(city: str) -> str:
        """Current weather of a city."""
        # Parallel calls complete in the order the threads happen to finish, live or replayed; this
        # one waits for the MCP call's completion to be seen, so the order is the same in every run.
        echo_done.wait(TIMEOUT)
        return f"{city}: 21 C, sunny"

    @tool(requires_approval=True)
    def send_email(to: str, body: str) -> str:
        """Send an email."""
        sent.append(to)
        return f"sent to {to}"

    return [get_weather, send_email]


def strip_timing(events) -> List[Dict[str, Any]]:
    """Every event as its dict, without the one field that measures this run (a tool's duration)."""
    return [{k: v for k, v in event.to_dict().items() if k != "duration_s"} for event in events]


def run_turn(provider: LlmProvider, transport: Transport) -> Tuple[List[Dict[str, Any]], Any, List[str]]:
    """Stream the turn to its pause, save and load the session, resume it: return the events, the cost, the emails."""
    sent: List[str] = []
    echo_done = threading.Event()
    with McpClient("raw", transport, timeout=TIMEOUT) as client, ToolRegistry() as registry:
        registry.register_all(local_tools(sent, echo_done))
        registry.register_all(client.into_tools(prefix="raw_"))
        session = AgentSession(provider, registry=registry)
        first = []
        for event in session.submit_turn_stream("Weather in Paris? Echo 'hi' and email it to ada@example.com."):
            first.append(event)
            if isinstance(event, ToolExecutionCompleted) and event.tool_name == "raw_echo":
                echo_done.set()
        assert echo_done.is_set()
        assert isinstance(first[-1], ApprovalRequired)
        saved = json.dumps(session.to_dict())
        session = AgentSession.from_dict(json.loads(saved), provider=provider, registry=registry)
        decisions = {request.tool_call_id: Approve() for request in first[-1].requests}
        second = list(session.resume_turn_stream(decisions))
        return strip_timing(first + second), session.cost_usd, sent


def test_a_recorded_turn_replays_to_the_same_events_and_the_same_cost(stream_server, tmp_path, request):
    stream_server.add_response(openai_tool_call_stream("chatcmpl-turn-1", [
        ("call_weather", "get_weather", {"city": "Paris"}),
        ("call_echo", "raw_echo", {"text": "hi"}),
        ("call_email", "send_email", {"to": "ada@example.com", "body": "Paris: 21 C, sunny"}),
    ], (310, 64)))
    stream_server.add_response(openai_text_stream("chatcmpl-turn-2", ["Paris is sunny (21 C); ", "the server said hi; ",
                                                                      "Ada has the email."], (420, 22)))
    llm_cassette, mcp_cassette = tmp_path / "turn.jsonl", tmp_path / "mcp.jsonl"
    live_provider = RecordingProvider(OpenAIProvider(model="gpt-4o-mini", api_key="sk-proof-key",
                                                     base_url=f"{stream_server.url}/v1"), llm_cassette)
    try:
        live = run_turn(live_provider, RecordingTransport(StdioTransport(sys.executable, [RAW_SERVER]), mcp_cassette))
    finally:
        live_provider.close()
    stream_server.stop()

    guard = request.getfixturevalue("no_network")
    started = []
    monkeypatch = request.getfixturevalue("monkeypatch")
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: started.append(a) or pytest.fail("a process started"))
    replayed = run_turn(ReplayProvider(llm_cassette), ReplayTransport(mcp_cassette))

    live_events, live_cost, live_sent = live
    assert replayed == live and guard.attempts == [] and started == []
    assert live_sent == ["ada@example.com"] and live_cost is not None and live_cost > 0
    completed = {e["tool_name"]: e["result_summary"] for e in live_events if e["type"] == "tool_execution_completed"}
    assert completed == {"get_weather": "Paris: 21 C, sunny", "raw_echo": "hi", "send_email": "sent to ada@example.com"}
    costs = [e["cost_usd"] for e in live_events if e["type"] == CostUpdate.type]
    assert len(costs) == 2 and all(cost > 0 for cost in costs)
    assert len(stream_server.requests) == 2
    assert ToolExecutionCompleted.type in {e["type"] for e in live_events}
