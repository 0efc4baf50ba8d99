"""Provider chaos: 200 agent turns against a local OpenAI-compatible server that misbehaves by seed.

The server (:class:`ChaosServer`, 127.0.0.1, port 0) draws a mode for each
request from a seeded generator: a correct answer, 429 with Retry-After,
500, 503 (sometimes with Retry-After), a stream or body cut mid-event, a
stall past the client's read timeout, a malformed chunk or body, or an
``{"error": ...}`` chunk in the stream. A correct answer is shaped like the
API reference: the first round calls the tool ``add`` with the numbers of
the user's message, the second answers with the tool's result.

Each turn goes through ``AgentSession(RetryProvider(OpenAIProvider(...)))``,
``submit_turn`` and ``submit_turn_stream`` alternately, and must either give
the right answer or end with a typed error (an ``AgcoreError`` raised, or a
final ``Error`` event). The server records the usage of every response whose
usage chunk it sent whole; the session must have counted exactly that. No
socket or other file descriptor may be left open.
"""

from __future__ import annotations

import json
import random
import re
import select
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any, Dict, Iterator, List, Optional, Tuple

import attrs
import pytest

from agcore_sync.agent.session import AgentSession
from agcore_sync.errors import AgcoreError
from agcore_sync.hooks import HookEvent, Hooks
from agcore_sync.llm.errors import LlmConnectionError, LlmTimeoutError, RateLimitError, ResponseParseError, ServerError
from agcore_sync.llm.events import CostUpdate, Error, MessageComplete
from agcore_sync.llm.openai import OpenAIProvider
from agcore_sync.llm.retry import RetryConfig, RetryProvider
from agcore_sync.llm.types import Message, MessageRequest, Usage
from agcore_sync.loop.cycle import CycleConfig
from agcore_sync.tools.function import tool
from agcore_sync.tools.registry import ToolRegistry
from tests.support.http_server import LocalHttpServer
from tests.support.leaks import new_fds, open_fds
from tests.support.wire import (
    openai_chunk,
    openai_completion,
    openai_error_body,
    openai_tool_piece,
    openai_usage,
    openai_usage_chunk,
    sse_data,
)

SEED = 7_2026
TURNS = 200
#: The provider's connect and read timeout: what a stall must outlast. Each
#: stall costs this much wall time; much shorter, and a loaded machine can
#: time out a correct answer (the run then fails: its outcome is not the one
#: the server planned).
READ_TIMEOUT = 1.0
#: Longest a stalled handler waits; it ends earlier when the client hangs up
#: or the server stops.
STALL_BOUND = 10.0
#: Slice of a stalled handler's wait, to notice the client leaving.
_STALL_POLL = 0.05
RETRY_AFTER = 2.0
API_KEY = "sk-chaos-0123456789abcdefSECRET"
MODEL = "gpt-4o-mini"

#: Request modes and their weights.
MODES = {"ok": 50, "429": 8, "500": 6, "503": 6, "cut": 11, "stall": 4, "malformed": 8, "error_chunk": 5}
#: The error a turn ends with, by the mode of its last request (stream, plain).
ERROR_FOR_MODE = {
    "429": (RateLimitError, RateLimitError),
    "500": (ServerError, ServerError),
    "503": (ServerError, ServerError),
    "cut": (LlmConnectionError, LlmConnectionError),
    "stall": (LlmTimeoutError, LlmTimeoutError),
    "malformed": (ResponseParseError, ResponseParseError),
    "error_chunk": (ServerError, ResponseParseError),  # a plain body cannot hold a chunk: it is malformed
}


# -- payloads shaped like the API reference ----------------------------------


def pieces(text: str, rng: random.Random) -> List[str]:
    cuts = sorted(rng.sample(range(1, len(text)), min(3, len(text) - 1)))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]


@attrs.define
class Plan:
    """What the server answers one request with."""

    tool_call: Optional[Tuple[str, Dict[str, int]]]  # (call id, arguments) for a tool round
    answer: Optional[str]  # the text of an answer round
    usage: Usage
    response_id: str


def stream_events(plan: Plan, rng: random.Random) -> Tuple[List[bytes], int]:
    """Return the SSE events of a correct stream and the index of its usage event."""
    rid = plan.response_id
    events: List[bytes] = []
    if plan.tool_call is not None:
        call_id, arguments = plan.tool_call
        events.append(sse_data(openai_chunk({"role": "assistant", "content": None, "tool_calls": [
            {"index": 0, "id": call_id, "type": "function", "function": {"name": "add", "arguments": ""}}],
            "refusal": None}, id=rid)))
        for piece in pieces(json.dumps(arguments), rng):
            events.append(sse_data(openai_chunk(openai_tool_piece(0, piece), id=rid)))
        events.append(sse_data(openai_chunk({}, "tool_calls", id=rid)))
    else:
        assert plan.answer is not None
        events.append(sse_data(openai_chunk({"role": "assistant", "content": "", "refusal": None}, id=rid)))
        for piece in pieces(plan.answer, rng):
            events.append(sse_data(openai_chunk({"content": piece}, id=rid)))
        events.append(sse_data(openai_chunk({}, "stop", id=rid)))
    u = plan.usage
    events.append(sse_data(openai_usage_chunk(u.prompt_tokens, u.completion_tokens, u.cache_read_tokens, id=rid)))
    usage_index = len(events) - 1
    events.append(sse_data("[DONE]"))
    return events, usage_index


def completion_body(plan: Plan) -> bytes:
    message: Dict[str, Any] = {}
    if plan.tool_call is not None:
        call_id, arguments = plan.tool_call
        message["tool_calls"] = [{"id": call_id, "type": "function",
                                  "function": {"name": "add", "arguments": json.dumps(arguments)}}]
        finish = "tool_calls"
    else:
        message["content"] = plan.answer
        finish = "stop"
    u = plan.usage
    usage = openai_usage(u.prompt_tokens, u.completion_tokens, u.cache_read_tokens)
    return json.dumps(openai_completion(message, finish, usage, id=plan.response_id)).encode()


def expected_answer(total: Any) -> str:
    return f"The sum is {total} \u2713 (r\u00e9sultat v\u00e9rifi\u00e9)"


# -- the server ---------------------------------------------------------------


@attrs.define
class Record:
    """One request as the server answered it."""

    number: int
    mode: str
    stream: bool
    #: The usage the client was sent whole (a complete usage chunk or body), else None.
    usage_sent: Optional[Usage] = None
    detail: str = ""


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
        with owner.lock:  # requests arrive one at a time; the lock keeps the draws in order regardless
            rng = owner.rng
            record = Record(len(owner.records), rng.choices(list(MODES), list(MODES.values()))[0],
                            bool(body.get("stream")))
            owner.records.append(record)
            plan = owner.plan(body, rng)
            choice = rng.random()
            framing = rng.choice(("chunked", "close"))
            split_seed = rng.random()
            events, usage_index = stream_events(plan, random.Random(split_seed))
            point = rng.randrange(len(events))
            offset_choice = rng.random()
        try:
            if record.mode in ("429", "500", "503"):
                self._status(record, choice)
            elif record.stream:
                self._stream(record, plan, events, usage_index, point, offset_choice, framing, split_seed)
            else:
                self._plain(record, plan, offset_choice)
        except OSError as exc:  # the client hung up (after its timeout): its right
            record.detail += f" client went away: {exc!r}"

    # -- answers ---------------------------------------------------------------

    def _status(self, record: Record, choice: float) -> None:
        headers = {}
        if record.mode == "429":
            status, payload = 429, openai_error_body("Rate limit reached for gpt-4o-mini on requests per min (RPM).",
                                              "requests", "rate_limit_exceeded")
            headers["Retry-After"] = f"{RETRY_AFTER:g}"
        elif record.mode == "500":
            status, payload = 500, openai_error_body("The server had an error while processing your request.",
                                              "server_error")
        else:
            status, payload = 503, openai_error_body("The engine is currently overloaded, please try again later.",
                                              "server_error")
            if choice < 0.5:
                headers["Retry-After"] = f"{RETRY_AFTER:g}"
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def _start(self, framing: str, content_type: str = "text/event-stream") -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        if framing == "chunked":
            self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.flush()

    def _write(self, data: bytes, framing: str, rng: random.Random) -> None:
        """Write ``data`` in a few network pieces cut anywhere (inside characters too)."""
        if not data:
            return
        cuts = sorted(rng.sample(range(1, len(data)), min(3, len(data) - 1))) if len(data) > 1 else []
        for a, b in zip([0, *cuts], [*cuts, len(data)]):
            piece = data[a:b]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece) if framing == "chunked" else piece)
            self.wfile.flush()

    def _end(self, framing: str) -> None:
        if framing == "chunked":
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    def _stream(self, record: Record, plan: Plan, events: List[bytes], usage_index: int, point: int,
                offset_choice: float, framing: str, split_seed: float) -> None:
        rng = random.Random(split_seed + 1)
        mode = record.mode
        self._start(framing)
        if mode == "ok":
            self._write(b"".join(events), framing, rng)
            # Sent once written: the client may stop reading after [DONE] (it drains what
            # follows for a bounded time only), so the end of the body can fail to go out.
            record.usage_sent = plan.usage
            self._end(framing)
        elif mode == "cut":
            # Stop inside event `point`: at its start, or before its closing "}" / "]",
            # so what was sent of it never parses.
            event = events[point]
            offset = int(offset_choice * (len(event) - 2))
            self._write(b"".join(events[:point]) + event[:offset], framing, rng)
            record.usage_sent = plan.usage if point > usage_index else None
            record.detail = f"cut in event {point} at byte {offset} ({framing})"
            if offset_choice < 0.3:
                self._reset()
            # else: the handler returns and the connection closes without an end marker.
        elif mode == "stall":
            self._write(b"".join(events[:point]), framing, rng)
            record.usage_sent = plan.usage if point > usage_index else None
            record.detail = f"stalled after {point} events"
            self._stall()
        else:
            if mode == "malformed":
                bad = sse_data(['{"id": "chatcmpl-x", "choices": [', "[1, 2, 3]", "not json at all"][point % 3])
            else:
                bad = sse_data(openai_error_body("The server had an error while processing your request.",
                                                 "server_error"))
            # Recorded before the writes: the client stops reading at the bad chunk and
            # closes, so writing what follows it may fail.
            record.usage_sent = plan.usage if point > usage_index else None
            self._write(b"".join(events[:point]) + bad + b"".join(events[point:]), framing, rng)
            self._end(framing)
            record.detail = f"{mode} before event {point}"

    def _plain(self, record: Record, plan: Plan, offset_choice: float) -> None:
        mode = record.mode
        body = completion_body(plan)
        if mode == "stall":
            record.detail = "stalled before the headers" if offset_choice < 0.5 else "stalled in the body"
            if offset_choice >= 0.5:
                self._start_plain(len(body))
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
            self._stall()
            return
        if mode in ("malformed", "error_chunk"):
            body = body[: int(offset_choice * (len(body) - 1))] if offset_choice < 0.5 else b"<html>502</html>"
            record.detail = "malformed body"
            self._start_plain(len(body))
            self.wfile.write(body)
            return
        self._start_plain(len(body))
        if mode == "cut":
            self.wfile.write(body[: int(offset_choice * (len(body) - 1))])
            self.wfile.flush()
            record.detail = "body cut short"
            if offset_choice < 0.3:
                self._reset()
            return
        self.wfile.write(body)
        record.usage_sent = plan.usage

    def _start_plain(self, length: int) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(length))
        self.send_header("Connection", "close")
        self.end_headers()

    def _stall(self) -> None:
        # Bounded, and ends as soon as the client hangs up (its read timed
        # out) or the server stops: no handler outlives the test.
        self.wfile.flush()
        deadline = time.monotonic() + STALL_BOUND
        stop = self.server.owner.stopping
        while time.monotonic() < deadline and not stop.wait(_STALL_POLL):
            readable, _, _ = select.select([self.connection], [], [], 0)
            if readable and not self.connection.recv(1, socket.MSG_PEEK):
                return

    def _reset(self) -> None:
        self.wfile.flush()
        LocalHttpServer.reset(self.connection)


class ChaosServer(LocalHttpServer):
    """An OpenAI-compatible server on 127.0.0.1 that misbehaves by seed; see the module docstring.

    Its threads are owned and joined as :class:`~tests.support.http_server.LocalHttpServer` says.
    """

    def __init__(self, seed: int) -> None:
        super().__init__(_Handler, name="chaos-server", path="/v1")
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.records: List[Record] = []

    def plan(self, body: Dict[str, Any], rng: random.Random) -> Plan:
        """The correct answer to ``body``: call ``add`` for a user message, answer a tool result."""
        last = body["messages"][-1]
        usage = Usage(rng.randrange(50, 5000), rng.randrange(1, 500))
        cached = rng.randrange(0, usage.prompt_tokens) if rng.random() < 0.3 else 0
        usage = attrs.evolve(usage, cache_read_tokens=cached)
        response_id = f"chatcmpl-{len(self.records)}"
        if last["role"] == "tool":
            return Plan(None, expected_answer(last["content"]), usage, response_id)
        a, b = (int(n) for n in re.findall(r"-?\d+", last["content"]))
        return Plan((f"call_{len(self.records)}", {"a": a, "b": b}), None, usage, response_id)

    def stop(self) -> None:
        """Stop serving and join every thread; idempotent."""
        self.close()


@pytest.fixture
def fds_before() -> Dict[int, str]:
    return open_fds()


@pytest.fixture
def chaos_server(fds_before) -> Iterator[ChaosServer]:
    server = ChaosServer(SEED)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first term.
        b: the second term.
    """
    return a + b


def run_turn(session: AgentSession, prompt: str, streamed: bool) -> Tuple[Optional[str], Optional[BaseException]]:
    """Run one turn; return (answer text, None) or (None, the typed error)."""
    if not streamed:
        try:
            return session.submit_turn(prompt).message.text, None
        except AgcoreError as exc:
            return None, exc
    events = list(session.submit_turn_stream(prompt))
    errors = [i for i, e in enumerate(events) if isinstance(e, Error)]
    if errors:
        assert errors == [len(events) - 1], "an Error event must be the last event, and the only one"
        assert isinstance(events[-1].error, AgcoreError), repr(events[-1].error)
        return None, events[-1].error
    assert isinstance(events[-1], MessageComplete), events[-1]
    return events[-1].full_response.message.text, None


def test_two_hundred_turns_against_a_misbehaving_server_end_typed_count_all_usage_and_leak_no_socket(
        chaos_server, fds_before):
    sleeps: List[float] = []
    provider_calls = []
    hooks = Hooks()
    hooks.on(HookEvent.PRE_REQUEST, lambda ctx: provider_calls.append(ctx.request))
    retry = RetryConfig(max_retries=3, initial_backoff=0.001, max_backoff=0.004, jitter=False)
    provider = RetryProvider(OpenAIProvider(MODEL, api_key=API_KEY, base_url=chaos_server.url, timeout=READ_TIMEOUT),
                             retry, sleep=sleeps.append)
    registry = ToolRegistry()
    registry.register(add)
    rng = random.Random(SEED)
    outcomes: Dict[str, int] = {}
    started = time.perf_counter()
    try:
        session = AgentSession(provider, CycleConfig(retry=None), registry, hooks=hooks)
        for turn in range(TURNS):
            a, b = rng.randrange(-10**6, 10**6), rng.randrange(-10**6, 10**6)
            streamed = turn % 2 == 1
            text, error = run_turn(session, f"Please add {a} and {b}.", streamed=streamed)
            last = chaos_server.records[-1]
            if error is None:
                assert text == expected_answer(a + b), f"turn {turn}"
                assert last.mode == "ok", f"turn {turn} answered after {last}"
                outcomes["answered"] = outcomes.get("answered", 0) + 1
            else:
                expected_class = ERROR_FOR_MODE[last.mode][0 if streamed else 1]
                assert type(error) is expected_class, f"turn {turn}: {error!r} after {last}"
                assert API_KEY not in str(error) and API_KEY not in repr(error)
                name = type(error).__name__
                outcomes[name] = outcomes.get(name, 0) + 1
        elapsed = time.perf_counter() - started
        assert session.turn_index == TURNS
    finally:
        provider.close()
        registry.close()
    records = chaos_server.records
    modes: Dict[str, int] = {}
    for record in records:
        modes[record.mode] = modes.get(record.mode, 0) + 1
    expected = sum((r.usage_sent for r in records if r.usage_sent is not None), Usage())
    report = (f"{TURNS} turns in {elapsed:.1f} s, {len(records)} requests {modes}, outcomes {outcomes}, "
              f"{len(sleeps)} retries; usage counted {session.cost_so_far}, sent {expected}")
    print("\nprovider chaos:", report)

    assert outcomes.get("answered", 0) >= TURNS // 4 and len(outcomes) > 2, report
    assert len(records) == len(provider_calls) + len(sleeps), f"every attempt but the first waits once; {report}"
    assert all(d == RETRY_AFTER or d <= retry.max_backoff for d in sleeps), sleeps
    assert RETRY_AFTER in sleeps, "Retry-After was never honoured"
    assert session.cost_so_far == expected, report

    chaos_server.stop()
    leaked = new_fds(fds_before)
    assert not leaked, f"file descriptors left open: {leaked}; {report}"


# -- the two defects the chaos run found, pinned on their own -------------------


def test_a_stream_cut_after_its_usage_chunk_reports_that_usage_before_the_connection_error(stream_server):
    plan = Plan(None, expected_answer(5), Usage(120, 30, 20), "chatcmpl-cut")
    events, usage_index = stream_events(plan, random.Random(1))
    stream_server.add_response([b"".join(events[: usage_index + 1])], framing="close")
    provider = OpenAIProvider(MODEL, api_key=API_KEY, base_url=stream_server.url + "/v1", timeout=READ_TIMEOUT * 5)
    received = []
    try:
        with pytest.raises(LlmConnectionError):
            for event in provider.chat_stream(MessageRequest(None, [Message.user("hi")])):
                received.append(event)
    finally:
        provider.close()
    assert isinstance(received[-1], CostUpdate) and received[-1].usage == Usage(120, 30, 20)
    assert not [e for e in received if isinstance(e, MessageComplete)]


@pytest.mark.parametrize("streamed", [True, False], ids=["stream", "plain"])
def test_a_read_timeout_in_the_middle_of_a_body_is_a_timeout_error_not_a_connection_error(stream_server, streamed):
    plan = Plan(None, expected_answer(5), Usage(10, 3), "chatcmpl-stall")
    release = threading.Event()
    stream_server.step_wait_timeout = STALL_BOUND
    if streamed:
        events, _ = stream_events(plan, random.Random(1))
        stream_server.add_response([events[0], events[1], release, *events[2:]])  # chunked
    else:
        body = completion_body(plan)
        stream_server.add_response([body[:40], release, body[40:]], headers={
            "Content-Type": "application/json", "Content-Length": str(len(body))}, framing="close")
    provider = OpenAIProvider(MODEL, api_key=API_KEY, base_url=stream_server.url + "/v1", timeout=READ_TIMEOUT)
    request = MessageRequest(None, [Message.user("hi")])
    try:
        with pytest.raises(LlmTimeoutError) as info:
            if streamed:
                list(provider.chat_stream(request))
            else:
                provider.chat(request)
    finally:
        release.set()  # let the server's handler finish
        provider.close()
    assert info.value.retryable
