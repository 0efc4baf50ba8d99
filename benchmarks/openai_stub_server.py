"""A local OpenAI-compatible Chat Completions server for bench_concurrency.py.

Run as its own process so that its CPU never counts against the clients::

    python benchmarks/openai_stub_server.py [--gap-min 0.010] [--gap-max 0.020] [--text-chunks 10]

It binds 127.0.0.1 on a free port and prints ``PORT <n>`` on stdout when it
accepts connections. Then it reads commands on stdin, one per line, and
answers each with one JSON line on stdout: ``stats`` (counters, see
:meth:`StubServer.stats`) and ``reset-peak`` (the peak of open connections
restarts from the current count). EOF on stdin stops it.

Each connection gets a thread (``ThreadingHTTPServer``), HTTP/1.1
keep-alive, and a listen backlog of :data:`BACKLOG` (a stock
``ThreadingHTTPServer`` listens with 5 and resets connections past that).
``POST /v1/chat/completions`` with ``"stream": true`` answers a streamed,
tool-using conversation, chunked, one SSE event per HTTP chunk, with a pause
of ``gap-min`` to ``gap-max`` seconds before each chunk as a model sends
tokens:

- while the last message is not a ``tool`` message: one ``add(a, b)`` call,
  its arguments in three deltas, ``finish_reason: "tool_calls"``;
- after a tool result: ``--text-chunks`` content deltas, each the
  ``time.monotonic_ns()`` at which it was written (CLOCK_MONOTONIC is shared
  by every process of the machine, so a client subtracts it from its own
  ``time.monotonic_ns()`` to get the write-to-consumer latency), then
  ``finish_reason: "stop"``;

and always the ``include_usage`` chunk with empty ``choices`` and
``data: [DONE]``. The chunks are shaped like the ones the API documents.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional

#: Listen backlog: more than the largest concurrency the benchmark opens at once.
BACKLOG = 2048

#: The arguments of the scripted tool call, in the pieces they are streamed in.
ARGUMENT_PIECES = ('{"a": ', '17, "b"', ': 25}')


class StubServer(ThreadingHTTPServer):
    """The HTTP server plus the counters the benchmark reads."""

    daemon_threads = True
    request_queue_size = BACKLOG

    def __init__(self, gap_min: float, gap_max: float, text_chunks: int) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.gap_min = gap_min
        self.gap_max = gap_max
        self.text_chunks = text_chunks
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._accepted = 0
        self._open = 0
        self._peak_open = 0
        self._requests = 0
        self._chunks = 0
        self._resets = 0

    # -- counters ---------------------------------------------------------------

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._lock:
            self._accepted += 1
            self._open += 1
            self._peak_open = max(self._peak_open, self._open)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._lock:
            self._open -= 1
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that closes a connection with bytes still unread (the end
        # of a chunked body) makes the kernel send a reset, which the next
        # read of the handler meets: counted, not printed.
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            with self._lock:
                self._resets += 1
            return
        super().handle_error(request, client_address)

    def count(self, requests: int = 0, chunks: int = 0) -> None:
        with self._lock:
            self._requests += requests
            self._chunks += chunks

    def stats(self) -> Dict[str, int]:
        """Return the connections accepted, open now and at the peak, reset by the client, requests and chunks.

        ``chunks`` counts the ``chat.completion.chunk`` objects sent (not ``[DONE]``).
        """
        with self._lock:
            return {"accepted": self._accepted, "open": self._open, "peak_open": self._peak_open,
                    "resets": self._resets, "requests": self._requests, "chunks": self._chunks}

    def reset_peak(self) -> Dict[str, int]:
        with self._lock:
            self._peak_open = self._open
        return self.stats()


def _chunk(base: Dict[str, Any], choices: List[Dict[str, Any]], usage: Optional[Dict[str, Any]] = None) -> bytes:
    return b"data: " + json.dumps({**base, "choices": choices, "usage": usage}).encode() + b"\n\n"


def _choice(delta: Dict[str, Any], finish_reason: Optional[str] = None) -> List[Dict[str, Any]]:
    return [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # each chunk leaves at once, as a streaming API's do
    server: StubServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length)) if length else {}
        except ValueError:
            body = {}
        if self.path.rstrip("/") != "/v1/chat/completions" or not body.get("stream"):
            self._plain(400, {"error": {"message": "only streamed chat completions", "type": "invalid_request_error"}})
            return
        self.server.count(requests=1)
        messages = body.get("messages") or [{}]
        after_tool = messages[-1].get("role") == "tool"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        rng = random.Random()
        n = 0
        try:
            for event in self._events(body.get("model") or "gpt-4o-mini", after_tool):
                if self.server.stopping.wait(rng.uniform(self.server.gap_min, self.server.gap_max)):
                    self.close_connection = True
                    return
                data = event() if callable(event) else event
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
                n += data != b"data: [DONE]\n\n"
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True  # the client went away mid-stream
        finally:
            self.server.count(chunks=n)

    def _events(self, model: str, after_tool: bool) -> List[Any]:
        base = {"id": f"chatcmpl-BENCH{random.randrange(10**8):08d}", "object": "chat.completion.chunk",
                "created": int(time.time()), "model": model, "system_fingerprint": "fp_bench",
                "service_tier": "default"}
        usage = {"prompt_tokens": 60, "completion_tokens": 12, "total_tokens": 72,
                 "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                 "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                               "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}
        events: List[Any] = []
        if after_tool:
            events.append(_chunk(base, _choice({"role": "assistant", "content": "", "refusal": None})))
            for _ in range(self.server.text_chunks):
                # Built when written, so the stamp is the time of the write.
                events.append(lambda: _chunk(base, _choice({"content": f"{time.monotonic_ns()} "})))
            events.append(_chunk(base, _choice({}, "stop")))
        else:
            call_id = f"call_{random.getrandbits(64):016x}"
            events.append(_chunk(base, _choice({"role": "assistant", "content": None, "refusal": None, "tool_calls": [
                {"index": 0, "id": call_id, "type": "function", "function": {"name": "add", "arguments": ""}}]})))
            for piece in ARGUMENT_PIECES:
                events.append(_chunk(base, _choice({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})))
            events.append(_chunk(base, _choice({}, "tool_calls")))
        events.append(_chunk(base, [], usage))
        events.append(b"data: [DONE]\n\n")
        return events

    def _plain(self, status: int, payload: Dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gap-min", type=float, default=0.010, help="least pause before a chunk, seconds")
    parser.add_argument("--gap-max", type=float, default=0.020, help="longest pause before a chunk, seconds")
    parser.add_argument("--text-chunks", type=int, default=10, help="content deltas of the final answer")
    args = parser.parse_args(argv)
    server = StubServer(args.gap_min, args.gap_max, args.text_chunks)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                              name="stub-server", daemon=True)
    thread.start()
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        for line in sys.stdin:
            command = line.strip()
            if command == "stats":
                print(json.dumps(server.stats()), flush=True)
            elif command == "reset-peak":
                print(json.dumps(server.reset_peak()), flush=True)
            elif command:
                print(json.dumps({"error": f"unknown command {command!r}"}), flush=True)
    finally:
        server.stopping.set()
        server.shutdown()
        server.server_close()
        thread.join(10)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
