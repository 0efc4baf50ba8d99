"""McpServer against the official SDK's MCPServer (FastMCP), the same ``add`` tool, same run.

Client: our ``McpClient`` for both servers (so only the server differs).

- stdio: one client, sequential ``tools/call``; calls per second and p50 latency.
- HTTP: ours under gunicorn (gthread, one worker, 128 threads), the SDK's
  under uvicorn; sequential calls per second and p50 latency, then
  ``--sessions`` clients at once (one session each, its own thread), each
  making ``--session-calls`` calls: total calls per second.

Run: ``python benchmarks/bench_mcp_server.py`` (needs ``mcp``, ``uvicorn``, ``gunicorn``).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, List, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from _common import median, table  # noqa: E402

from agcore_sync.mcp import HttpTransport, McpClient, StdioTransport  # noqa: E402

APPS = str(HERE / "mcp_server_apps.py")
WARMUP = 50


def sequential(client: McpClient, calls: int) -> Tuple[float, float]:
    """Return (calls per second, p50 latency in ms)."""
    for i in range(WARMUP):
        client.call_tool("add", {"a": i, "b": 1})
    latencies = []
    start = time.perf_counter()
    for i in range(calls):
        began = time.perf_counter()
        client.call_tool("add", {"a": i, "b": 1})
        latencies.append(time.perf_counter() - began)
    return calls / (time.perf_counter() - start), median(latencies) * 1000


def concurrent(url: str, sessions: int, calls: int) -> float:
    """Return total calls per second of ``sessions`` clients at once."""
    clients = [McpClient("bench", HttpTransport(url, listen=False), timeout=120.0).connect() for _ in range(sessions)]
    barrier = threading.Barrier(sessions + 1)
    errors: List[BaseException] = []

    def work(client: McpClient) -> None:
        barrier.wait()
        try:
            for i in range(calls):
                client.call_tool("add", {"a": i, "b": 1})
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(c,)) for c in clients]
    for thread in threads:
        thread.start()
    barrier.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    for client in clients:
        client.close()
    if errors:
        raise errors[0]
    return sessions * calls / elapsed


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_ours_http() -> Tuple[str, Callable[[], None]]:
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=f"{HERE.parent}{os.pathsep}{HERE}")
    proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "-k", "gthread", "--threads", "128", "-w", "1",
                             "-b", f"127.0.0.1:{port}", "--chdir", str(HERE), "mcp_server_apps:app"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    return f"http://127.0.0.1:{port}/mcp", lambda: _stop(proc)


def start_sdk_http() -> Tuple[str, Callable[[], None]]:
    proc = subprocess.Popen([sys.executable, APPS, "sdk", "http"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, start_new_session=True)
    url = proc.stdout.readline().split()[-1]
    return url, lambda: _stop(proc)


def _stop(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    if proc.stdout is not None:
        proc.stdout.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=500, help="sequential calls per measurement")
    parser.add_argument("--sessions", type=int, default=100, help="HTTP sessions at once")
    parser.add_argument("--session-calls", type=int, default=10, help="calls per concurrent session")
    opts = parser.parse_args()
    rows = []
    results = {}
    for name in ("ours", "sdk"):
        with McpClient("bench", StdioTransport(sys.executable, [APPS, name, "stdio"]), timeout=60.0) as client:
            results[(name, "stdio")] = sequential(client, opts.calls)
        url, stop = start_ours_http() if name == "ours" else start_sdk_http()
        try:
            with McpClient("bench", HttpTransport(url), timeout=60.0) as client:
                results[(name, "http")] = sequential(client, opts.calls)
            results[(name, "concurrent")] = concurrent(url, opts.sessions, opts.session_calls)
        finally:
            stop()
    for transport in ("stdio", "http"):
        ours_rate, ours_p50 = results[("ours", transport)]
        sdk_rate, sdk_p50 = results[("sdk", transport)]
        rows.append([transport, f"{ours_rate:,.0f}", f"{sdk_rate:,.0f}", f"{ours_rate / sdk_rate:.2f}x",
                     f"{ours_p50:.2f}", f"{sdk_p50:.2f}"])
    ours_c, sdk_c = results[("ours", "concurrent")], results[("sdk", "concurrent")]
    rows.append([f"http, {opts.sessions} sessions", f"{ours_c:,.0f}", f"{sdk_c:,.0f}", f"{ours_c / sdk_c:.2f}x",
                 "", ""])
    print(table(["transport", "McpServer calls/s", "SDK calls/s", "ratio", "McpServer p50 ms", "SDK p50 ms"], rows))


if __name__ == "__main__":
    main()
