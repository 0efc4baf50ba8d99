"""The MCP part of bench_growth.py: K calls in flight on one stdio client, K up to 1,000.

K threads share one :class:`McpClient` of ``mcp_hold_server.py K``; in each
round every thread makes one ``call_tool``, and the server answers when all
K calls have arrived, so exactly K are in flight. A round is timed from the
release of the threads to the last answer; client CPU is
``getrusage(RUSAGE_SELF)`` over the rounds (every thread of this process,
the client's reader included; the server is another process). Memory per
caller is the RSS the K threads and their calls add. The floor is the same
harness around bench_mcp.py's minimal reader-thread client (per-id slots, a
held Lock each), so what 1,000 threads cost by themselves shows apart from
what the client adds.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List

from _common import median, table
from _concurrency_common import cpu_seconds, rss_bytes, thread_count
from bench_mcp import ThreadedFloor

from agcore_sync import McpClient, StdioTransport

SERVER = str(Path(__file__).resolve().parent / "mcp_hold_server.py")

#: Bound on every wait of a round (seconds): a lost answer fails the run, never hangs it.
ROUND_TIMEOUT = 120.0


class HoldFloor(ThreadedFloor):
    """bench_mcp.py's reader-thread floor, talking to ``mcp_hold_server.py K``."""

    def __init__(self, k: int) -> None:
        self.proc = subprocess.Popen([sys.executable, SERVER, str(k)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.ids = itertools.count(1)
        self.slots = {}
        self.write_lock = threading.Lock()
        self.reader = threading.Thread(target=self.read, name="bench-floor-reader", daemon=True)
        self.reader.start()
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "f"}})

    def call_text(self, name: str, args: Dict[str, Any]) -> str:
        return self.call_tool(name, args)["content"][0]["text"]


class Ours:
    """McpClient with the harness's ``call_text``."""

    def __init__(self, k: int) -> None:
        transport = StdioTransport(sys.executable, [SERVER, str(k)])
        self.client = McpClient("hold", transport, timeout=ROUND_TIMEOUT).connect()

    def call_text(self, name: str, args: Dict[str, Any]) -> str:
        return self.client.call_tool(name, args).text

    def close(self) -> None:
        self.client.close()


def _in_flight(make: Any, k: int, rounds: int) -> Dict[str, float]:
    client = make(k)
    start = threading.Barrier(k + 1, timeout=ROUND_TIMEOUT)
    done = threading.Barrier(k + 1, timeout=ROUND_TIMEOUT)
    failures: List[str] = []

    def caller(i: int) -> None:
        for r in range(rounds + 1):  # round 0 is a warm-up
            start.wait()
            try:
                text = client.call_text("echo", {"i": i, "r": r})
                if json.loads(text) != {"i": i, "r": r}:
                    failures.append(f"call {i} round {r} got {text!r}")
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
    runs = [_in_flight(Ours, k, size["mcp_rounds"]) for k in ks]
    floor = [_in_flight(HoldFloor, k, size["mcp_rounds"]) for k in ks]
    return {"k": ks, **{key: [r[key] for r in runs] for key in runs[0]},
            **{f"floor_{key}": [r[key] for r in floor] for key in floor[0]}}


def print_mcp(r: Dict[str, Any]) -> None:
    from bench_growth import exponent, fit

    rows = [(k, w, fw, c, fc, c / fc, m, t) for k, w, fw, c, fc, m, t in
            zip(r["k"], r["wall_us_per_call"], r["floor_wall_us_per_call"], r["cpu_us_per_call"],
                r["floor_cpu_us_per_call"], r["kib_per_caller"], r["threads"])]
    print("K threads, one McpClient over stdio, K calls in flight at once (the server answers when all K arrived);")
    print("floor: the same harness around a minimal reader-thread client")
    print(table(["K in flight", "wall us/call", "floor wall", "CPU us/call", "floor CPU", "CPU x floor",
                 "RSS KiB/caller", "threads added"], rows))
    totals = [c * k for c, k in zip(r["cpu_us_per_call"], r["k"])]
    _, b = fit(r["k"], totals)
    floor_totals = [c * k for c, k in zip(r["floor_cpu_us_per_call"], r["k"])]
    print(f"slope: {b:.1f} us of client CPU per added call in flight; exponent k = {exponent(r['k'], totals):.2f} "
          f"(floor {exponent(r['k'], floor_totals):.2f})")
