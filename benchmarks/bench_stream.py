"""Throughput of OpenAIProvider.chat_stream against a raw requests baseline.

Run from the repository root::

    python benchmarks/bench_stream.py [--chunks 20000] [--repeats 7] [--framing chunked|close]
                                      [--api chat|responses|gemini|bedrock]

``--api bedrock`` compares parsing a ConverseStream body (AWS event-stream
frames) by our decoder with botocore's ``EventStream``, in the same run (see
``bench_stream_bedrock.py``).

``--api responses`` runs the same comparison for
``OpenAIResponsesProvider.chat_stream`` on a recorded-shape Responses API
stream (``response.created``, the message item, ``response.output_text.delta``
events, ``response.completed`` with usage), the raw readers parsing the same
bytes.

``--api gemini`` streams a recorded-shape Gemini
``streamGenerateContent?alt=sse`` body (``GenerateContentResponse`` chunks
framed with ``\r\n\r\n``, the last with ``finishReason``) through
``GeminiProvider.chat_stream`` and, in the same run, through google-genai's
own iterator (``client.models.generate_content_stream``, test extra), and
prints ours / google-genai.

A local HTTP server on 127.0.0.1 (a thread of this process) serves one
recorded-shape Chat Completions stream: a role chunk, content deltas of a few
characters, the ``finish_reason`` chunk, the ``include_usage`` chunk with empty
``choices``, then ``data: [DONE]``. Each SSE event is its own HTTP chunk, as a
server flushing per token sends it; the whole body is built once and written
with one ``sendall`` so the server thread costs almost nothing.

Three readers, interleaved, each ``--repeats`` times after one warm-up:

- ours: ``OpenAIProvider(...).chat_stream(request)``, counting every event;
- raw iter_lines: ``requests.post(stream=True)`` + ``iter_lines()`` +
  ``json.loads`` of each data line;
- raw read+split: ``requests.post(stream=True)`` + 64 KiB ``iter_content``
  reads split on newlines + ``json.loads`` of each data line.

The common unit is wire chunks per second (one ``chat.completion.chunk`` = one
chunk); the ratio compares ours with the faster raw reader, by wall time and
by the reader thread's CPU time (``time.thread_time``), which a busy machine
disturbs far less. Peak RSS is ``ru_maxrss`` of the whole process.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Dict, List, Tuple

import requests

from agcore_sync.llm.openai import OpenAIProvider
from agcore_sync.llm.responses import OpenAIResponsesProvider
from agcore_sync.llm.types import Message, MessageRequest

#: Bound on waiting for the server thread to start and to stop.
SERVER_TIMEOUT = 10.0

#: The target the brief sets for ours / raw, in chunks per second.
TARGET_RATIO = 0.6

_WORDS = ["The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", ".", " É", "té", " 🙂", "\n"]


def build_body(n_chunks: int, framing: str) -> Tuple[bytes, int]:
    """Return the HTTP body bytes (chunk-framed if asked) and the number of JSON chunks in it."""
    base = {
        "id": "chatcmpl-BENCH0000000000000000000000",
        "object": "chat.completion.chunk",
        "created": 1741569952,
        "model": "gpt-4o-mini-2024-07-18",
        "system_fingerprint": "fp_06737a9306",
        "service_tier": "default",
    }

    def chunk(choices, usage=None) -> bytes:
        return b"data: " + json.dumps({**base, "choices": choices, "usage": usage}).encode() + b"\n\n"

    def choice(delta, finish_reason=None):
        return [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]

    events: List[bytes] = [chunk(choice({"role": "assistant", "content": "", "refusal": None}))]
    for i in range(n_chunks - 3):
        events.append(chunk(choice({"content": _WORDS[i % len(_WORDS)]})))
    events.append(chunk(choice({}, "stop")))
    events.append(chunk([], usage={
        "prompt_tokens": 20, "completion_tokens": n_chunks - 3, "total_tokens": n_chunks + 17,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                      "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
    }))
    events.append(b"data: [DONE]\n\n")
    n_json = len(events) - 1
    if framing == "chunked":
        body = b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events) + b"0\r\n\r\n"
    else:
        body = b"".join(events)
    return body, n_json


def build_responses_body(n_chunks: int, framing: str) -> Tuple[bytes, int]:
    """Return a Responses API stream body (chunk-framed if asked) and the number of JSON events in it."""
    response = {"id": "resp_BENCH", "object": "response", "created_at": 1764547200, "model": "gpt-4.1-mini",
                "status": "in_progress", "output": [], "usage": None}
    counter = iter(range(10 ** 9))

    def event(data) -> bytes:
        data = {**data, "sequence_number": next(counter)}
        return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()

    item = {"id": "msg_BENCH", "type": "message", "role": "assistant", "status": "in_progress", "content": []}
    events: List[bytes] = [event({"type": "response.created", "response": response}),
                           event({"type": "response.output_item.added", "output_index": 0, "item": item})]
    text: List[str] = []
    for i in range(n_chunks - 4):
        word = _WORDS[i % len(_WORDS)]
        text.append(word)
        events.append(event({"type": "response.output_text.delta", "item_id": "msg_BENCH", "output_index": 0,
                             "content_index": 0, "delta": word, "logprobs": []}))
    done = dict(item, status="completed", content=[{"type": "output_text", "text": "".join(text), "annotations": []}])
    events.append(event({"type": "response.output_item.done", "output_index": 0, "item": done}))
    events.append(event({"type": "response.completed", "response": dict(
        response, status="completed", output=[done],
        usage={"input_tokens": 20, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": n_chunks - 4,
               "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": n_chunks + 16})}))
    if framing == "chunked":
        body = b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events) + b"0\r\n\r\n"
    else:
        body = b"".join(events)
    return body, len(events)


def read_ours_responses(port: int) -> Tuple[int, int]:
    """Stream through OpenAIResponsesProvider; return (events, wire chunks seen)."""
    provider = OpenAIResponsesProvider(base_url=f"http://127.0.0.1:{port}/v1", api_key="x", model="gpt-4.1-mini")
    request = MessageRequest(model=None, messages=(Message.user("Tell me a long story."),))
    events = 0
    try:
        for _ in provider.chat_stream(request):
            events += 1
    finally:
        provider.close()
    return events, -1


def build_gemini_body(n_chunks: int, framing: str) -> Tuple[bytes, int]:
    """Return a Gemini SSE stream body (chunk-framed if asked) and the number of JSON chunks in it."""
    def chunk(text: str, finish: bool = False, done: int = 0) -> bytes:
        candidate = {"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}
        usage = {"promptTokenCount": 20, "totalTokenCount": 20 + done,
                 "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 20}]}
        if finish:
            candidate["finishReason"] = "STOP"
            usage["candidatesTokenCount"] = done
        data = {"candidates": [candidate], "usageMetadata": usage, "modelVersion": "gemini-2.5-flash",
                "responseId": "BENCHh2ouaPj5Dq6Oz7IP9dfQ0Ak"}
        return b"data: " + json.dumps(data, separators=(",", ":")).encode() + b"\r\n\r\n"

    events = [chunk(_WORDS[i % len(_WORDS)]) for i in range(n_chunks - 1)]
    events.append(chunk(".", finish=True, done=n_chunks))
    if framing == "chunked":
        body = b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events) + b"0\r\n\r\n"
    else:
        body = b"".join(events)
    return body, len(events)


def read_ours_gemini(port: int) -> Tuple[int, int]:
    """Stream through GeminiProvider; return (events, wire chunks seen)."""
    from agcore_sync.llm.gemini import GeminiProvider

    provider = GeminiProvider("gemini-2.5-flash", api_key="x", base_url=f"http://127.0.0.1:{port}")
    request = MessageRequest(model=None, messages=(Message.user("Tell me a long story."),))
    events = 0
    try:
        for _ in provider.chat_stream(request):
            events += 1
    finally:
        provider.close()
    return events, -1


def read_google_genai(port: int) -> Tuple[int, int]:
    """Stream through google-genai's own iterator; return (0, chunks it yielded)."""
    from google import genai
    from google.genai import types

    client = genai.Client(api_key="x", http_options=types.HttpOptions(base_url=f"http://127.0.0.1:{port}",
                                                                      api_version="v1beta"))
    chunks = 0
    try:
        for _ in client.models.generate_content_stream(model="gemini-2.5-flash", contents="Tell me a long story."):
            chunks += 1
    finally:
        client.close()
    return 0, chunks


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _BenchServer

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        if self.server.framing == "chunked":
            self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            self.wfile.write(self.server.body)
        except OSError:
            pass  # a reader that stopped early

    def log_message(self, format, *args) -> None:
        pass


class _BenchServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, body: bytes, framing: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.body = body
        self.framing = framing


class ServerThread:
    """Owns the server and the thread serving it; ``stop()`` shuts down and joins."""

    def __init__(self, body: bytes, framing: str) -> None:
        self.httpd = _BenchServer(body, framing)
        self.port = self.httpd.server_address[1]
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-stream-server", daemon=True)

    def _run(self) -> None:
        self._ready.set()
        self.httpd.serve_forever(poll_interval=0.1)

    def start(self) -> None:
        self._thread.start()
        if not self._ready.wait(SERVER_TIMEOUT):
            raise RuntimeError("benchmark server did not start")

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()  # also joins the (finished) connection threads
        self._thread.join(SERVER_TIMEOUT)
        if self._thread.is_alive():
            raise RuntimeError("benchmark server thread did not stop")


def read_ours(port: int) -> Tuple[int, int]:
    """Stream through OpenAIProvider; return (events, wire chunks seen)."""
    provider = OpenAIProvider(base_url=f"http://127.0.0.1:{port}/v1", api_key="x", model="gpt-4o-mini")
    request = MessageRequest(model=None, messages=(Message.user("Tell me a long story."),))
    events = 0
    try:
        for _ in provider.chat_stream(request):
            events += 1
    finally:
        provider.close()
    return events, -1


def _raw_request(port: int) -> requests.Response:
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Tell me a long story."}],
            "stream": True, "stream_options": {"include_usage": True}}
    response = requests.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=body, stream=True,
                             headers={"Authorization": "Bearer x", "Accept": "text/event-stream"}, timeout=60)
    response.raise_for_status()
    return response


def read_raw_lines(port: int) -> Tuple[int, int]:
    """requests + iter_lines + json.loads per data line; return (0, chunks)."""
    chunks = 0
    with _raw_request(port) as response:
        for line in response.iter_lines():
            if line.startswith(b"data: "):
                payload = line[6:]
                if payload == b"[DONE]":
                    break
                json.loads(payload)
                chunks += 1
    return 0, chunks


def read_raw_split(port: int) -> Tuple[int, int]:
    """requests + 64 KiB reads split on newlines + json.loads per data line; return (0, chunks)."""
    chunks = 0
    rest = b""
    done = False
    with _raw_request(port) as response:
        for block in response.iter_content(chunk_size=65536):
            lines = (rest + block).split(b"\n")
            rest = lines.pop()
            for line in lines:
                if line.startswith(b"data: "):
                    payload = line[6:]
                    if payload == b"[DONE]":
                        done = True
                        break
                    json.loads(payload)
                    chunks += 1
            if done:
                break
    return 0, chunks


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=20_000, help="JSON chunks in the stream (default 20000)")
    parser.add_argument("--repeats", type=int, default=7, help="timed runs per reader (default 7)")
    parser.add_argument("--framing", choices=("chunked", "close"), default="chunked")
    parser.add_argument("--api", choices=("chat", "responses", "gemini", "bedrock"), default="chat",
                        help="Chat Completions (OpenAIProvider), the Responses API (OpenAIResponsesProvider), "
                             "Gemini (GeminiProvider, compared with google-genai); "
                             "bedrock: event-stream parsing, ours against botocore's EventStream")
    args = parser.parse_args(argv)
    if args.api == "bedrock":
        from bench_stream_bedrock import main as bedrock_main  # the Bedrock row lives beside this file

        return bedrock_main(args.chunks, args.repeats)

    if args.api == "responses":
        body, n_json = build_responses_body(args.chunks, args.framing)
        ours_name, ours_read = "ours (OpenAIResponsesProvider)", read_ours_responses
    elif args.api == "gemini":
        body, n_json = build_gemini_body(args.chunks, args.framing)
        ours_name, ours_read = "ours (GeminiProvider.chat_stream)", read_ours_gemini
    else:
        body, n_json = build_body(args.chunks, args.framing)
        ours_name, ours_read = "ours (OpenAIProvider.chat_stream)", read_ours
    server = ServerThread(body, args.framing)
    server.start()
    readers: Dict[str, Callable[[int], Tuple[int, int]]] = {
        ours_name: ours_read,
        "raw requests iter_lines": read_raw_lines,
        "raw requests read+split": read_raw_split,
    }
    if args.api == "gemini":
        readers["google-genai generate_content_stream"] = read_google_genai
    times: Dict[str, List[float]] = {name: [] for name in readers}
    cpu: Dict[str, List[float]] = {name: [] for name in readers}
    counts: Dict[str, Tuple[int, int]] = {}
    try:
        for name, read in readers.items():  # warm-up: imports, first connection, caches
            counts[name] = read(server.port)
        for _ in range(args.repeats):
            for name, read in readers.items():
                start, start_cpu = time.perf_counter(), time.thread_time()
                result = read(server.port)
                times[name].append(time.perf_counter() - start)
                cpu[name].append(time.thread_time() - start_cpu)
                if result != counts[name]:
                    raise RuntimeError(f"{name}: counted {result}, the warm-up counted {counts[name]}")
    finally:
        server.stop()

    for name, (_, raw_chunks) in counts.items():
        if raw_chunks not in (-1, n_json):
            raise RuntimeError(f"{name} saw {raw_chunks} chunks, the body has {n_json}")

    what = {"responses": "Responses API events", "gemini": "Gemini GenerateContentResponse chunks"}.get(
        args.api, "chat.completion.chunk objects + [DONE]")
    print(f"stream: {n_json} {what}, {len(body) / 1e6:.2f} MB, "
          f"framing={args.framing}, {args.repeats} interleaved runs each, medians shown")
    print(f"python {sys.version.split()[0]}, requests {requests.__version__}")
    print()
    header = f"{'reader':36s} {'median s':>9s} {'min s':>8s} {'chunks/s':>10s} {'events/s':>10s} {'events':>7s}"
    print(header)
    print("-" * len(header))
    rates: Dict[str, float] = {}
    for name in readers:
        median = statistics.median(times[name])
        rates[name] = n_json / median
        events = counts[name][0]
        ev_rate = f"{events / median:10.0f}" if events else f"{'-':>10s}"
        ev_count = f"{events:7d}" if events else f"{'-':>7s}"
        print(f"{name:36s} {median:9.4f} {min(times[name]):8.4f} {rates[name]:10.0f} {ev_rate} {ev_count}")
    print()
    ours = rates[ours_name]
    for name in ("raw requests iter_lines", "raw requests read+split"):
        print(f"ratio ours / {name[4:]:24s} (chunks/s): {ours / rates[name]:.2f}")
    best_raw = max(rates["raw requests iter_lines"], rates["raw requests read+split"])
    ratio = ours / best_raw
    verdict = "meets" if ratio >= TARGET_RATIO else "BELOW"
    print(f"ratio ours / faster raw (chunks/s): {ratio:.2f}  ({verdict} the {TARGET_RATIO} target)")
    # The reader runs in this thread and the server has already written
    # everything, so the reader's CPU time is its cost, whatever else the
    # machine is doing; wall time suffers when other processes compete.
    cpu_rates = {name: n_json / statistics.median(cpu[name]) for name in readers}
    cpu_ratio = cpu_rates[ours_name] / max(
        cpu_rates["raw requests iter_lines"], cpu_rates["raw requests read+split"])
    print("reader-thread CPU time (time.thread_time), medians: " + ", ".join(
        f"{name.split(' (')[0]} {statistics.median(cpu[name]):.4f} s" for name in readers))
    print(f"ratio ours / faster raw by CPU time (chunks per CPU-second): {cpu_ratio:.2f}")
    sdk = "google-genai generate_content_stream"
    if sdk in readers:
        print(f"ratio ours / google-genai (chunks/s): {ours / rates[sdk]:.2f}, by CPU time: "
              f"{cpu_rates[ours_name] / cpu_rates[sdk]:.2f}  (goal 1.5)")
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(f"peak RSS of this process: {peak_kb / 1024:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
