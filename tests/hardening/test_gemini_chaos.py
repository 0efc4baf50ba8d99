"""Gemini chaos: 80 agent turns against a local Gemini-shaped server that misbehaves by seed.

The server (127.0.0.1, port 0) draws a mode for each request from a seeded
generator: a correct answer, 429 with a ``RetryInfo`` ``retryDelay``, 500,
503, a body cut mid-chunk (connection closed), a malformed chunk or body,
or an ``{"error": ...}`` chunk in a stream. A correct answer is shaped like
the API reference: the first round calls ``add`` (no call id, with a
``thoughtSignature``), the second answers with the tool's result.

Each turn goes through ``AgentSession(RetryProvider(GeminiProvider(...)))``,
``submit_turn`` and ``submit_turn_stream`` alternately, and must give the
right answer or end with a typed error. Every answer round must carry the
tool-call round's signature back unchanged. The suite's leak check proves
no socket or thread is left behind.
"""

from __future__ import annotations

import json
import random
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any, List, Optional, Tuple

from agcore_sync import AgentSession, CycleConfig, Error, GeminiProvider, RetryConfig, RetryProvider, ToolRegistry
from agcore_sync.errors import AgcoreError
from agcore_sync.llm.errors import LlmError
from tests.support.gemini import gemini_chunk, gemini_usage
from tests.support.http_server import LocalHttpServer
from tests.support.tools import add

SEED = 23_2026
TURNS = 80
MODES = {"ok": 55, "429": 8, "500": 5, "503": 5, "cut": 10, "malformed": 8, "error_chunk": 5}
SIGNATURE = "CpkBAVSoXO4n3Y0H7Zq2lQ+/gK9mR1sT5uV6wX7yZ8aB9cD0eF1gH2iJ3kL4mN5o="
#: The client's read timeout (no stall mode here: a read that outlasts it is tested elsewhere).
READ_TIMEOUT = 10.0


def _numbers(body: Any) -> Tuple[int, int]:
    text = body["contents"][-1]["parts"][0].get("text") or body["contents"][0]["parts"][0]["text"]
    a, b = (int(n) for n in text.split()[1].split("+"))
    return a, b


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30.0
    server: Any

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: requests are recorded instead."""

    def do_POST(self) -> None:
        self.close_connection = True
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        owner = self.server.owner
        stream = "alt=sse" in self.path
        with owner.lock:
            mode = owner.rng.choices(list(MODES), list(MODES.values()))[0]
            cut_at = owner.rng.random()
            owner.records.append((mode, stream, body))
        last = body["contents"][-1]["parts"][0]
        if "functionResponse" in last:
            answer = last["functionResponse"]["response"]["output"]
            chunks = [gemini_chunk([{"text": "The sum "}]),
                      gemini_chunk([{"text": f"is {answer} \u2713"}], "STOP", usage=gemini_usage(30, 6))]
        else:
            a, b = _numbers(body)
            chunks = [gemini_chunk([{"functionCall": {"name": "add", "args": {"a": a, "b": b}},
                                     "thoughtSignature": SIGNATURE}], "STOP", usage=gemini_usage(20, 5))]
        try:
            self._answer(mode, stream, chunks, cut_at)
        except OSError:
            pass  # the client went away: its right

    def _send(self, status: int, data: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def _answer(self, mode: str, stream: bool, chunks: List[Any], cut_at: float) -> None:
        if mode in ("429", "500", "503"):
            status = {"429": "RESOURCE_EXHAUSTED", "500": "INTERNAL", "503": "UNAVAILABLE"}[mode]
            error: Any = {"code": int(mode), "message": "chaos", "status": status}
            if mode == "429":
                error["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"}]
            self._send(int(mode), json.dumps({"error": error}).encode())
            return
        if not stream:
            whole = json.loads(json.dumps(chunks[-1]))
            whole["candidates"][0]["content"]["parts"] = [p for c in chunks for p in c["candidates"][0]["content"]
                                                          ["parts"]]
            data = json.dumps(whole).encode()
            if mode in ("malformed", "error_chunk"):
                data = data[:len(data) // 2]
            if mode == "cut":
                self._cut(data, cut_at)
                return
            self._send(200, data)
            return
        body = b"".join(b"data: " + json.dumps(c).encode() + b"\r\n\r\n" for c in chunks)
        if mode == "malformed":
            body = body.replace(b"data: {", b"data: {{", 1)
        elif mode == "error_chunk":
            body = (b"data: " + json.dumps(chunks[0]).encode() + b"\r\n\r\n" if len(chunks) > 1 else b"") + \
                b'data: {"error": {"code": 500, "message": "chaos", "status": "INTERNAL"}}\r\n\r\n'
        if mode == "cut":
            self._cut(body, cut_at)
            return
        self._send(200, body, "text/event-stream")

    def _cut(self, data: bytes, cut_at: float) -> None:
        """Announce the whole length, send part of it, close: the client sees a short body."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data[:max(1, int(len(data) * cut_at) - 1)])
        self.wfile.flush()


class ChaosServer(LocalHttpServer):
    def __init__(self) -> None:
        super().__init__(_Handler, name="gemini-chaos")
        self.lock = threading.Lock()
        self.rng = random.Random(SEED)
        self.records: List[Tuple[str, bool, Any]] = []


def _run_turn(session: AgentSession, prompt: str, streamed: bool) -> Tuple[Optional[str], Optional[BaseException]]:
    if not streamed:
        try:
            return session.submit_turn(prompt).message.text, None
        except AgcoreError as exc:
            return None, exc
    events = list(session.submit_turn_stream(prompt))
    if isinstance(events[-1], Error):
        return None, events[-1].error
    return events[-1].full_response.message.text, None


def test_eighty_turns_against_a_misbehaving_gemini_server_end_typed_and_keep_every_signature():
    answered = failed = 0
    with ChaosServer() as server, ToolRegistry() as registry:
        registry.register(add)
        inner = GeminiProvider("gemini-2.5-flash", api_key="chaos-key", base_url=server.url, timeout=READ_TIMEOUT)
        provider = RetryProvider(inner, RetryConfig(max_retries=2, jitter=False), sleep=lambda _: None)
        try:
            for turn in range(TURNS):
                a, b = turn, turn * 7
                session = AgentSession(provider, CycleConfig(retry=None), registry)
                text, error = _run_turn(session, f"Compute {a}+{b} with the tool.", streamed=turn % 2 == 0)
                if error is None:
                    assert text == f"The sum is {a + b} \u2713", text
                    answered += 1
                else:
                    assert isinstance(error, LlmError), repr(error)
                    assert "chaos-key" not in str(error)
                    failed += 1
        finally:
            provider.close()
    assert answered >= TURNS // 3 and failed >= 5, (answered, failed)
    modes = {mode for mode, _, _ in server.records}
    assert modes == set(MODES)
    for _mode, _, body in server.records:
        calls = [p for c in body["contents"] if c["role"] == "model" for p in c["parts"] if "functionCall" in p]
        assert all(p["thoughtSignature"] == SIGNATURE for p in calls)
        assert all("id" not in p["functionCall"] for p in calls)  # ids made up here are not sent
