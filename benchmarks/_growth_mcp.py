"""The MCP part of bench_growth.py: K calls in flight on one stdio client, K up to 1,000.

K threads share one :class:`McpClient` of ``mcp_hold_server.py K``; in each
round every thread makes one ``call_tool``, and the server answers when all
K calls have arrived, so exactly K are in flight. A round is timed from the
release of the threads to the last answer; client CPU is
``getrusage(RUSAGE_SELF)`` over the rounds (every thread of this process,
the client's reader included; the server is another process). Memory per
caller is the RSS the K threads and their calls add.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List

from _common import median, table
from _concurrency_common import cpu_seconds, rss_bytes, thread_count

from agcore_sync import McpClient, StdioTransport

SERVER = str(Path(__file__).resolve().parent / "mcp_hold_server.py")

#: Bound on every wait of a round (seconds): a lost answer fails the run, never hangs it.
ROUND_TIMEOUT = 120.0


def _in_flight(k: int, rounds: int) -> Dict[str, float]:
    client = McpClient("hold", StdioTransport(sys.executable, [SERVER, str(k)]), timeout=ROUND_TIMEOUT).connect()
    start = threading.Barrier(k + 1, timeout=ROUND_TIMEOUT)
    done = threading.Barrier(k + 1, timeout=ROUND_TIMEOUT)
    failures: List[str] = []

    def caller(i: int) -> None:
        for r in range(rounds + 1):  # round 0 is a warm-up
            start.wait()
            try:
                result = client.call_tool("echo", {"i": i, "r": r})
                if json.loads(result.text) != {"i": i, "r": r}:
                    failures.append(f"call {i} round {r} got {result.text!r}")
            except Exception as exc:  # noqa: BLE001 - reported after the run
                failures.append(f"{type(exc).__name__}: {exc}")
            done.wait()

    threads: List[threading.Thread] = []
    try:
        base_rss, base_threads = rss_bytes(), thread_count()
        threads = [threading.Thread(target=caller, args=(i,), name=f"bench-mcp-{i}", daemon=True) for i in range(k)]
        for thread in threads:
            thread.start()
        walls: List[float] = []
        cpu0 = 0.0
        for r in range(rounds + 1):
            start.wait()
            t0 = time.perf_counter()
            done.wait()
            if r == 0:  # every caller has made a call and waits for the next round
                rss, added_threads = rss_bytes(), thread_count() - base_threads
                cpu0 = cpu_seconds()
            else:
                walls.append(time.perf_counter() - t0)
        cpu = cpu_seconds() - cpu0
        for thread in threads:
            thread.join(ROUND_TIMEOUT)
    finally:
        client.close()
    if failures or any(t.is_alive() for t in threads):
        raise RuntimeError(f"MCP, {k} in flight: {failures[:3]}")
    return {"wall_us_per_call": median(walls) / k * 1e6, "cpu_us_per_call": cpu / (k * rounds) * 1e6,
            "kib_per_caller": (rss - base_rss) / k / 1024, "threads": added_threads}


def mcp_growth(size: Dict[str, Any]) -> Dict[str, Any]:
    """Measure each K of ``size["mcp"]`` over ``size["mcp_rounds"]`` rounds."""
    ks = list(size["mcp"])
    runs = [_in_flight(k, size["mcp_rounds"]) for k in ks]
    return {"k": ks, **{key: [r[key] for r in runs] for key in runs[0]}}


def print_mcp(r: Dict[str, Any]) -> None:
    from bench_growth import exponent, fit

    rows = [(k, w, c, m, t) for k, w, c, m, t in
            zip(r["k"], r["wall_us_per_call"], r["cpu_us_per_call"], r["kib_per_caller"], r["threads"])]
    print("K threads, one McpClient over stdio, K calls in flight at once (the server answers when all K arrived)")
    print(table(["K in flight", "wall us/call", "client CPU us/call", "RSS KiB/caller", "threads added"], rows))
    totals = [c * k for c, k in zip(r["cpu_us_per_call"], r["k"])]
    _, b = fit(r["k"], totals)
    print(f"slope: {b:.1f} us of client CPU per added call in flight; exponent k = {exponent(r['k'], totals):.2f}")
