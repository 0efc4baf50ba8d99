"""bench_mcp_server.py runs at a tiny size and prints its table (both servers, both transports, concurrent sessions)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Bound on the benchmark at its tiny size (seconds).
RUN_TIMEOUT = 180.0


def test_bench_mcp_server_measures_both_servers_over_stdio_and_http() -> None:
    for module in ("mcp", "uvicorn", "gunicorn"):
        pytest.importorskip(module)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_mcp_server.py"), "--calls", "5",
                          "--sessions", "3", "--session-calls", "2"], capture_output=True, text=True,
                         timeout=RUN_TIMEOUT, cwd=ROOT, env=env)
    assert out.returncode == 0, out.stderr[-4000:]
    rows = {line.split("  ")[0] for line in out.stdout.splitlines()}
    assert {"stdio", "http", "http, 3 sessions"} <= rows
