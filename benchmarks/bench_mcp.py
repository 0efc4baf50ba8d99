"""MCP client over stdio: call latency, client CPU and throughput, against a floor.

Workload: ``tools/call`` of the ``echo`` tool of ``mcp_echo_server.py`` (a
stdlib server, one process per client) with a small argument object.

- sequential: one thread, median wall time of a call over 2,000 calls, and
  the client's CPU per call (``time.process_time`` over the loop: every
  thread of this process, the reader included; the server is another process).
- 32 in flight: 32 threads share one client and make 20,000 calls in all;
  calls per second, and CPU per call the same way.

The floors are minimal stdlib clients measured in the same run: for the
sequential case one that writes a line and reads the answer in the calling
thread (no reader thread, no timeouts, no slots), and for 32 in flight one
with a reader thread that completes per-id slots (a held Lock each). The
official Python SDK client measured 144 us, 141 us CPU and 7,800 calls/s
on this kind of machine. Run: ``python benchmarks/bench_mcp.py``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import median, table  # noqa: E402

from agcore_sync.mcp import McpClient, StdioTransport  # noqa: E402

SERVER = str(Path(__file__).resolve().parent / "mcp_echo_server.py")
ARGS = {"text": "hello", "n": 1}
WARMUP = 200
TARGET_SEQ_US = 45.0
TARGET_CPU_US = 30.0
TARGET_RATE = 25_000.0


# -- the floors ---------------------------------------------------------------


class BlockingFloor:
    """Write a line, read a line, in the calling thread: one caller only."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.ids = itertools.count(1)
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "f"}})

    def request(self, method, params):
        line = json.dumps({"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": params})
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())["result"]

    def call_tool(self, name, args):
        return self.request("tools/call", {"name": name, "arguments": args})

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()
        self.proc.stdout.close()


class ThreadedFloor:
    """A reader thread hands each answer to its caller's slot (a held Lock)."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.ids = itertools.count(1)
        self.slots = {}
        self.write_lock = threading.Lock()
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "f"}})

    def read(self) -> None:
        for line in self.proc.stdout:
            message = json.loads(line)
            slot = self.slots.pop(message["id"])
            slot[1] = message
            slot[0].release()

    def request(self, method, params):
        request_id = next(self.ids)
        slot = [threading.Lock(), None]
        slot[0].acquire()
        self.slots[request_id] = slot
        data = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode() + b"\n"
        with self.write_lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        slot[0].acquire()
        return slot[1]["result"]

    def call_tool(self, name, args):
        return self.request("tools/call", {"name": name, "arguments": args})

    def close(self) -> None:
        self.proc.stdin.close()
        self.reader.join()
        self.proc.wait()
        self.proc.stdout.close()


def ours() -> McpClient:
    return McpClient("echo", StdioTransport(sys.executable, [SERVER])).connect()


# -- workloads ------------------------------------------------------------------


def sequential(client, calls: int):
    """Return (median us per call, client CPU us per call)."""
    call = client.call_tool
    for _ in range(WARMUP):
        call("echo", ARGS)
    times = []
    clock = time.perf_counter
    cpu = time.process_time()
    for _ in range(calls):
        start = clock()
        call("echo", ARGS)
        times.append(clock() - start)
    cpu = time.process_time() - cpu
    return median(times) * 1e6, cpu / calls * 1e6


def in_flight(client, calls: int, threads: int):
    """Return (calls per second, client CPU us per call) with ``threads`` callers."""
    for _ in range(WARMUP):
        client.call_tool("echo", ARGS)
    per_thread = calls // threads
    barrier = threading.Barrier(threads + 1)

    def work() -> None:
        call = client.call_tool
        barrier.wait()
        for _ in range(per_thread):
            call("echo", ARGS)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    cpu = time.process_time()
    start = time.perf_counter()
    barrier.wait()
    for worker in workers:
        worker.join()
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu
    done = per_thread * threads
    return done / elapsed, cpu / done * 1e6


def pin_modes(requested: str):
    """The placements to run: ``none``, ``same`` (client and server on one CPU), ``split`` (on two)."""
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    modes = ["none", "same", "split"] if requested == "all" else [requested]
    if len(cpus) < 2:
        modes = [m for m in modes if m != "split"]
    if not cpus:
        modes = [m for m in modes if m == "none"]
    return cpus, modes


def server_pids(clients):
    return [c.transport.pid if isinstance(c, McpClient) else c.proc.pid for c in clients.values()]


def run(mode: str, cpus, opts):
    # Affinity is per thread and inherited: set it before the clients start
    # their readers and servers, and the workers of in_flight inherit it too.
    if mode != "none":
        os.sched_setaffinity(0, {cpus[0]})
    clients = {"ours": ours(), "floor": BlockingFloor(), "floor-threaded": ThreadedFloor()}
    if mode == "split":
        for pid in server_pids(clients):
            os.sched_setaffinity(pid, {cpus[1]})
    seq = {name: [] for name in clients}
    par = {"ours": [], "floor-threaded": []}
    try:
        assert json.loads(clients["ours"].call_tool("echo", ARGS).text) == ARGS
        for _ in range(opts.repeats):  # interleaved, so noise hits every variant alike
            for name, client in clients.items():
                seq[name].append(sequential(client, opts.calls))
            for name in par:
                par[name].append(in_flight(clients[name], opts.flight_calls, opts.threads))
    finally:
        for client in clients.values():
            client.close()
        if cpus:
            os.sched_setaffinity(0, set(cpus))

    def med(runs, i):
        return median([run[i] for run in runs])

    s_ours, s_floor, s_thr = (med(seq[k], 0) for k in ("ours", "floor", "floor-threaded"))
    c_ours, c_floor, c_thr = (med(seq[k], 1) for k in ("ours", "floor", "floor-threaded"))
    r_ours, r_floor = med(par["ours"], 0), med(par["floor-threaded"], 0)
    rc_ours, rc_floor = med(par["ours"], 1), med(par["floor-threaded"], 1)
    n = opts.threads
    rows = [
        ("sequential call, us (median)", s_ours, s_floor, s_ours / s_floor, f"<= {TARGET_SEQ_US:.0f}", 144),
        ("client CPU per sequential call, us", c_ours, c_floor, c_ours / c_floor, f"<= {TARGET_CPU_US:.0f}", 141),
        (f"calls/s, {n} in flight", r_ours, r_floor, r_ours / r_floor, f">= {TARGET_RATE:.0f}", 7800),
        (f"client CPU per call, {n} in flight, us", rc_ours, rc_floor, rc_ours / rc_floor, "", ""),
    ]
    where = {
        "none": "unpinned (the scheduler places client and server)",
        "same": f"client and server pinned to CPU {cpus[0] if cpus else '-'}",
        "split": f"client on CPU {cpus[0] if cpus else '-'}, server on CPU {cpus[1] if len(cpus) > 1 else '-'}",
    }[mode]
    print(f"\n{where}")
    print(table(["workload", "ours", "floor", "x floor", "target", "SDK"], rows))
    print(f"sequential through the reader-thread floor: {s_thr:.2f} us, {c_thr:.2f} us CPU per call")
    met = s_ours <= TARGET_SEQ_US and c_ours <= TARGET_CPU_US and r_ours >= TARGET_RATE
    print("targets met" if met else "targets not all met")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="sequential calls per run")
    parser.add_argument("--flight-calls", type=int, default=20000, help="calls per run with many in flight")
    parser.add_argument("--threads", type=int, default=32, help="calls in flight (one thread each)")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each workload (medians are reported)")
    parser.add_argument(
        "--pin", choices=("all", "none", "same", "split"), default="all", help="CPU placements to measure"
    )
    opts = parser.parse_args()
    cpus, modes = pin_modes(opts.pin)
    print(
        f"MCP stdio tools/call of echo: sequential median of {opts.calls} calls, "
        f"{opts.flight_calls} calls from {opts.threads} threads; median of {opts.repeats} runs. "
        "floor: blocking client (sequential), reader-thread client (in flight)."
    )
    for mode in modes:
        run(mode, cpus, opts)


if __name__ == "__main__":
    main()
