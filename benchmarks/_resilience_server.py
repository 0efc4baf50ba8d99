"""The local OpenAI-compatible server of bench_resilience.py: it keeps the provider's books and scripts faults.

A thread of the benchmark's process, on 127.0.0.1 and a free port:

- ``POST /budget/v1/chat/completions``: a plain answer whose ``usage`` is
  the prompt's JSON / 4 and a completion of 1,500 to ``max_tokens``
  tokens; charged on arrival to :class:`Books` (the provider's own rule: a
  bucket of a minute's budget, refilled continuously, full when the first
  request arrives). A request it has no room for is *over budget*.
- ``POST /a/v1/...`` (the primary): as ``primary_mode`` says: ``ok`` (a
  stream), ``down`` (503), ``429`` (with ``Retry-After: 1``) or ``stall``
  (no answer for :data:`STALL` seconds).
- ``POST /b/v1/...`` (the backup): always a stream.
"""

from __future__ import annotations

import json
import math
import random
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional

#: The shared budget of part 1.
RPM, TPM = 60, 100_000
#: Seconds of refill allowed for the time between taking the budget and arriving at the server.
ARRIVAL_SLACK = 0.25
#: How long the server stalls in ``stall`` mode (longer than the primary's timeout).
STALL = 0.5
#: The text every streamed answer carries, in pieces.
ANSWER_PIECES = ["The answer ", "is 42, ", "as always."]
#: Pause before each streamed chunk (a model's pace).
CHUNK_GAP = 0.002


class Books:
    """The server's token bucket for one dimension, and the requests it had no room for."""

    def __init__(self, per_minute: float, start: float) -> None:
        self.per_minute, self.level, self.at, self.over = per_minute, float(per_minute), start, 0

    def charge(self, amount: float, now: float) -> None:
        self.level = min(self.per_minute, self.level + self.per_minute * (now - self.at) / 60.0) - amount
        self.at = now
        if self.level < -self.per_minute * ARRIVAL_SLACK / 60.0:
            self.over += 1


class BenchServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.primary_mode = "ok"
        self.counts: Dict[str, int] = {}
        self.start_budget()

    def start_budget(self) -> None:
        # The books open with the first request, as the clients' shared bucket does (full, at its first acquire).
        with self.lock:
            self.t0: Optional[float] = None
            self.arrivals: List[tuple] = []

    def _open_books(self, now: float) -> None:
        if self.t0 is None:
            self.t0 = now
            self.requests, self.tokens = Books(RPM, now), Books(TPM, now)

    def count(self, name: str) -> None:
        with self.lock:
            self.counts[name] = self.counts.get(name, 0) + 1


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: BenchServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        if self.path.startswith("/budget/"):
            self._budget(body)
        elif self.path.startswith("/a/"):
            self._primary(body)
        else:
            self._stream(body, "backup-model")

    def _send(self, status: int, payload: Dict[str, Any], headers: Optional[Dict[str, str]] = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _budget(self, body: Dict[str, Any]) -> None:
        server = self.server
        prompt = math.ceil(len(json.dumps(body["messages"])) / 4)
        completion = random.randint(1500, int(body.get("max_tokens") or 2000))
        with server.lock:
            now = time.monotonic()
            server._open_books(now)
            server.requests.charge(1, now)
            server.tokens.charge(prompt + completion, now)
            server.arrivals.append((now - server.t0, prompt + completion))  # type: ignore[operator]
        self._send(200, {"id": "chatcmpl-bench", "object": "chat.completion", "created": 1741569952,
                         "model": body["model"], "choices": [{"index": 0, "finish_reason": "stop",
                                                              "message": {"role": "assistant", "content": "ok"}}],
                         "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                                   "total_tokens": prompt + completion}})

    def _primary(self, body: Dict[str, Any]) -> None:
        mode = self.server.primary_mode
        self.server.count(f"primary:{mode}")
        if mode == "down":
            self._send(503, {"error": {"message": "no healthy upstream", "type": "server_error"}})
        elif mode == "429":
            self._send(429, {"error": {"message": "Rate limit reached", "type": "requests"}}, {"Retry-After": "1"})
        elif mode == "stall":
            self.server.stopping.wait(STALL)
            self.close_connection = True
        else:
            self._stream(body, "primary-model")

    def _stream(self, body: Dict[str, Any], model: str) -> None:
        if model == "backup-model":
            self.server.count("backup")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def chunk(payload: Any) -> None:
            data = b"data: " + (payload if isinstance(payload, bytes) else json.dumps(payload).encode()) + b"\n\n"
            self.server.stopping.wait(CHUNK_GAP)
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1741569952, "model": model}
        chunk({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                    "finish_reason": None}]})
        for piece in ANSWER_PIECES:
            chunk({**base, "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})
        chunk({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        chunk({**base, "choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 6, "total_tokens": 18}})
        chunk(b"[DONE]")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def serve() -> tuple:
    server = BenchServer()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              name="agcore-bench-server", daemon=True)
    thread.start()
    return server, thread


