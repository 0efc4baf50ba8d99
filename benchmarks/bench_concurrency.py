"""N concurrent streamed tool-using turns through ONE provider, against an asyncio peer.

Workload: N conversations at once, each ``--turns`` turns; a turn is two
streamed Chat Completions requests (the model calls ``add(a, b)``, then
answers in ``--text-chunks`` deltas) with the tool run in between. The server
is ``openai_stub_server.py``, a separate process (threaded, HTTP/1.1
keep-alive, a 2,048-connection backlog, chunked SSE with 10-20 ms before each
chunk) that counts the TCP connections it accepts.

Clients, each in a fresh process per run so that memory, threads and CPU are
its own (``getrusage(RUSAGE_SELF)`` covers all of its threads and none of the
server's):

- ours: N threads, each an ``AgentSession`` reading ``submit_turn_stream``;
  one shared ``OpenAIProvider`` and ``ToolRegistry`` (_concurrency_ours.py);
- asyncio: N tasks on one event loop sharing one ``AsyncOpenAI`` client of the
  official SDK (_concurrency_asyncio.py), if ``openai`` is installed.

Per N, medians over ``--repeats`` interleaved runs: turns/s; TCP connections
the server accepted (target: at most N, reused across rounds and turns) and
the most open at once; client RSS and threads per open turn; client CPU per
wire chunk (one ``chat.completion.chunk``, the unit both clients read);
p50/p99 latency of a text delta from the server's write to the consumer
(CLOCK_MONOTONIC stamps in the deltas); for ours also p50/p99 of the
hand-off from the provider's generator (in the stream worker) to the
consumer thread. Ratios are ours / asyncio.

Run: ``python benchmarks/bench_concurrency.py [--sizes 10,100,500] [--turns 2] [--repeats 3]`` (under 3 minutes
on 2 vCPUs).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import median, table  # noqa: E402

#: Bound on starting the server and on one command's answer (seconds).
SERVER_TIMEOUT = 30.0

#: Bound on one worker run (seconds).
WORKER_TIMEOUT = 900.0


class StubServer:
    """Owns the server process; ``stats()`` asks it for its counters; ``close()`` stops and reaps it."""

    def __init__(self, gap_min: float, gap_max: float, text_chunks: int) -> None:
        command = [sys.executable, str(HERE / "openai_stub_server.py"), "--gap-min", str(gap_min),
                   "--gap-max", str(gap_max), "--text-chunks", str(text_chunks)]
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("PORT "):
            self.close()
            raise RuntimeError(f"the stub server did not start: {line!r}")
        self.port = int(line.split()[1])

    def command(self, name: str) -> Dict[str, int]:
        self.proc.stdin.write(name + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(SERVER_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(SERVER_TIMEOUT)
        self.proc.stdout.close()


def run_worker(client: str, server: StubServer, n: int, turns: int) -> Dict[str, Any]:
    """Run one client in a fresh process; add what the server saw."""
    proc = subprocess.Popen([sys.executable, str(HERE / "bench_concurrency.py"), "--worker", client,
                             "--port", str(server.port), "--n", str(n), "--turns", str(turns)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # The worker says "warm" after its warm-up turn and waits for a line:
        # the counters are read in between, so the warm-up is not counted.
        warm = proc.stdout.readline()
        if warm.strip() == "warm":
            server.command("reset-peak")
            before = server.command("stats")
            proc.stdin.write("go\n")
            proc.stdin.flush()
        out, err = proc.communicate(timeout=WORKER_TIMEOUT)
    except BaseException:
        proc.kill()
        proc.communicate()
        raise
    if proc.returncode != 0 or warm.strip() != "warm":
        raise RuntimeError(f"{client} worker failed (N={n}):\n{warm}{err[-3000:]}")
    result = json.loads(out.strip().splitlines()[-1])
    after = server.command("stats")
    result["connections"] = after["accepted"] - before["accepted"]
    result["server_peak_open"] = after["peak_open"]
    result["requests"] = after["requests"] - before["requests"]
    result["chunks"] = after["chunks"] - before["chunks"]
    result["resets"] = after["resets"] - before["resets"]
    if result["error_count"] or result["turns"] != n * turns:
        raise RuntimeError(f"{client} N={n}: {result['turns']} of {n * turns} turns, errors {result['errors']}")
    return result


def worker_main(args: argparse.Namespace) -> int:
    if args.worker == "ours":
        from _concurrency_ours import run
    else:
        from _concurrency_asyncio import run
    def warmed() -> None:
        print("warm", flush=True)
        sys.stdin.readline()

    print(json.dumps(run(args.port, args.n, args.turns, warmed)))
    return 0


def _med(runs: List[Dict[str, Any]], key: str, index: Optional[int] = None) -> float:
    values = [r[key] if index is None else r[key][index] for r in runs]
    values = [v for v in values if v is not None]
    return median(values) if values else float("nan")


def summarise(runs: List[Dict[str, Any]]) -> Dict[str, float]:
    """Medians over the runs of one client at one N."""
    return {
        "turns/s": median([r["turns"] / r["wall_s"] for r in runs]),
        "connections": _med(runs, "connections"),
        "peak open conns": _med(runs, "server_peak_open"),
        "requests": _med(runs, "requests"),
        "chunks": _med(runs, "chunks"),
        "resets": _med(runs, "resets"),
        "events": _med(runs, "events"),
        "RSS KiB/turn": _med(runs, "rss_per_turn_kib"),
        "threads/turn": _med(runs, "threads_per_turn"),
        "agcore threads/turn": _med(runs, "agcore_threads_per_turn"),
        "open turns": _med(runs, "peak_open_turns"),
        "CPU us/chunk": median([r["cpu_s"] / r["chunks"] * 1e6 for r in runs]),
        "p50 us": _med(runs, "text_latency_us", 0),
        "p99 us": _med(runs, "text_latency_us", 1),
        "hand-off p50 us": _med(runs, "handoff_us", 0),
        "hand-off p99 us": _med(runs, "handoff_us", 1),
    }


def report(sizes: List[int], clients: List[str], results: Dict[str, Dict[int, List[Dict[str, Any]]]],
           args: argparse.Namespace) -> None:
    summary = {c: {n: summarise(results[c][n]) for n in sizes} for c in clients}
    print(f"{args.turns} turns per conversation, 2 streamed requests per turn, {args.text_chunks} text deltas, "
          f"{args.gap_min * 1e3:.0f}-{args.gap_max * 1e3:.0f} ms before each chunk; "
          f"median of {args.repeats} runs")
    print()
    rows = []
    for n in sizes:
        for c in clients:
            s = summary[c][n]
            rows.append((n, c, s["turns/s"], f"{s['connections']:.0f}", f"{s['peak open conns']:.0f}",
                         f"{s['open turns']:.0f}", s["RSS KiB/turn"], s["threads/turn"], s["agcore threads/turn"],
                         s["CPU us/chunk"], s["p50 us"], s["p99 us"]))
    print(table(["N", "client", "turns/s", "TCP conns", "max open", "open turns", "RSS KiB/turn", "threads/turn",
                 "agcore thr/turn", "CPU us/chunk", "p50 us", "p99 us"], rows))
    print("TCP conns: connections the server accepted in the run (target <= N); max open: most open at once;")
    print("p50/p99: a text delta from the server's write to the consumer's hand (both clients).")
    print()
    rows = []
    for n in sizes:
        for c in clients:
            s = summary[c][n]
            handoff = (s["hand-off p50 us"], s["hand-off p99 us"]) if c == "ours" else ("-", "-")
            rows.append((n, c, f"{s['requests']:.0f}", f"{s['chunks']:.0f}", f"{s['events']:.0f}",
                         f"{s['resets']:.0f}", *handoff))
    print(table(["N", "client", "requests", "wire chunks", "events read", "conns reset", "hand-off p50 us",
                 "hand-off p99 us"], rows))
    print("events read: StreamEvents (ours), chunks (asyncio); conns reset: closed by the client with bytes unread;")
    print("hand-off: an event leaving OpenAIProvider.chat_stream (stream worker) to the consumer thread (ours).")
    if len(clients) == 2:
        print()
        ratio_rows = []
        for n in sizes:
            o, a = summary["ours"][n], summary["asyncio"][n]
            ratio_rows.append((n, o["turns/s"] / a["turns/s"], o["connections"] / max(1.0, a["connections"]),
                               o["RSS KiB/turn"] / a["RSS KiB/turn"] if a["RSS KiB/turn"] > 0 else float("nan"),
                               o["CPU us/chunk"] / a["CPU us/chunk"], o["p50 us"] / a["p50 us"],
                               o["p99 us"] / a["p99 us"]))
        print(table(["N", "turns/s", "TCP conns", "RSS/turn", "CPU/chunk", "p50", "p99"], ratio_rows))
        print("ratios: ours / asyncio (turns/s: higher is better for ours; the others: lower is).")
    over = [(c, n, summary[c][n]["connections"]) for c in clients for n in sizes if summary[c][n]["connections"] > n]
    for c, n, conns in over:
        print(f"{c}, N={n}: {conns:.0f} TCP connections for {n} concurrent turns (target <= {n})")


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,500", help="concurrent conversations, comma-separated")
    parser.add_argument("--turns", type=int, default=2, help="turns per conversation (default 2)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per client and size (default 3)")
    parser.add_argument("--peer", choices=("asyncio", "none"), default="asyncio")
    parser.add_argument("--gap-min", type=float, default=0.010)
    parser.add_argument("--gap-max", type=float, default=0.020)
    parser.add_argument("--text-chunks", type=int, default=10)
    parser.add_argument("--json", help="also write every run's figures to this file")
    parser.add_argument("--worker", choices=("ours", "asyncio"), help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker_main(args)

    sizes = [int(s) for s in args.sizes.split(",")]
    clients = ["ours"]
    if args.peer == "asyncio":
        try:
            import openai  # noqa: F401 - only to know whether the peer can run
        except ImportError:
            print("openai is not installed (pip install openai): the asyncio peer is skipped")
        else:
            clients.append("asyncio")
    results: Dict[str, Dict[int, List[Dict[str, Any]]]] = {c: {n: [] for n in sizes} for c in clients}
    server = StubServer(args.gap_min, args.gap_max, args.text_chunks)
    try:
        for _ in range(args.repeats):  # interleaved, so noise hits every client alike
            for n in sizes:
                for c in clients:
                    results[c][n].append(run_worker(c, server, n, args.turns))
    finally:
        server.close()
    import platform

    import requests

    print(f"python {platform.python_version()}, requests {requests.__version__}"
          + (f", openai {sys.modules['openai'].__version__}" if "openai" in sys.modules else ""))
    report(sizes, clients, results, args)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
