"""The benchmarks run at a tiny size, print their tables and count right, so they cannot rot.

Each runs as its own process, as a user runs it (``python benchmarks/...``);
its servers and workers are its children and are reaped before it exits.
Figures are not checked here: only that the workload ran in full.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"

#: Bound on one benchmark at its tiny size (seconds); they take a few.
RUN_TIMEOUT = 180.0


def run_benchmark(script: str, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, str(BENCHMARKS / script), *args], capture_output=True, text=True,
                         timeout=RUN_TIMEOUT, cwd=ROOT, env=env)
    assert out.returncode == 0, f"{script} failed:\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}"
    return out.stdout


def has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def test_bench_concurrency_runs_every_turn_of_both_clients_and_prints_its_tables(tmp_path):
    sizes, turns, text_chunks = (2, 3), 2, 3
    peer = "asyncio" if has("openai") else "none"
    results_file = tmp_path / "runs.json"
    stdout = run_benchmark("bench_concurrency.py", "--sizes", ",".join(map(str, sizes)), "--turns", str(turns),
                           "--repeats", "1", "--gap-min", "0.001", "--gap-max", "0.002",
                           "--text-chunks", str(text_chunks), "--peer", peer, "--json", str(results_file))
    results = json.loads(results_file.read_text())
    clients = ["ours", "asyncio"] if peer == "asyncio" else ["ours"]
    assert sorted(results) == sorted(clients)
    # A turn: a tool call (role, 3 argument deltas, finish, usage) and an answer (role, text, finish, usage).
    chunks_per_turn = 6 + text_chunks + 3
    for client in clients:
        for n in sizes:
            (run,) = results[client][str(n)]
            assert run["turns"] == n * turns and run["error_count"] == 0
            assert run["requests"] == 2 * n * turns
            assert run["chunks"] == n * turns * chunks_per_turn
            assert run["peak_open_turns"] >= 1
            assert run["text_latency_us"][0] is not None
        for n in sizes:
            assert any(line.split()[:2] == [str(n), client] for line in stdout.splitlines()), stdout
    assert all(run["events"] > run["chunks"] for run in results["ours"].values() for run in run)
    assert "turns/s" in stdout and "TCP conns" in stdout and "hand-off p50 us" in stdout
    if peer == "asyncio":
        assert "ratios: ours / asyncio" in stdout


def test_bench_growth_measures_every_part_at_every_size_and_prints_a_slope_for_each(tmp_path):
    results_file = tmp_path / "growth.json"
    stdout = run_benchmark("bench_growth.py", "--quick", "--repeats", "1", "--json", str(results_file))
    results = json.loads(results_file.read_text())
    assert sorted(results) == ["mcp", "result", "session", "stream", "tools"]
    assert results["session"]["blocks"] == [5, 15]
    assert set(results["session"]["us"]) == {"submit_turn_stream", "submit_turn"}
    assert results["tools"]["k"] == [1, 4] and len(results["tools"]["total_us"]) == 2
    assert results["result"]["bytes"] == [1_000, 10_000]
    assert all(len(v) == 2 for v in results["result"]["ms"].values())
    assert results["stream"]["events"] == [100, 1_000] and len(results["stream"]["peak_b"]) == 2
    assert results["mcp"]["k"] == [2, 8]
    assert [t >= k for t, k in zip(results["mcp"]["threads"], results["mcp"]["k"])] == [True, True]
    # Two slopes for the session (streamed and not), two for the result (cut and whole), one each for the rest.
    assert sum(line.startswith("slope") for line in stdout.splitlines()) == 7, stdout


@pytest.mark.skipif(not has("matplotlib"), reason="plots need matplotlib (the docs extra)")
def test_bench_growth_draws_one_png_per_part(tmp_path):
    run_benchmark("bench_growth.py", "--quick", "--repeats", "1", "--only", "tools,stream", "--plot", str(tmp_path))
    pngs = sorted(p.name for p in tmp_path.iterdir())
    assert pngs == ["growth_stream.png", "growth_tools.png"]
    assert all((tmp_path / p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)


def test_bench_import_prints_the_first_use_row_and_the_importtime_top(tmp_path):
    stdout = run_benchmark("bench_import.py", "--runs", "1", "--top", "5")
    lines = stdout.splitlines()
    assert any(line.startswith("first use: AgentSession, OpenAIProvider, ToolRegistry, tool") for line in lines)
    assert any(line.startswith("import requests, attrs (baseline)") for line in lines)
    start = next(i for i, line in enumerate(lines) if line.startswith("python -X importtime"))
    header = next(i for i in range(start, len(lines)) if lines[i].startswith("module"))
    body = lines[header + 2:]
    rows = body[:body.index(next(line for line in body if line.startswith("=")))]
    assert len(rows) == 5
    assert any(line.startswith("self time by top-level package: ") for line in lines)


def test_bench_ui_encodes_a_small_turn_with_both_adapters_and_prints_its_table():
    out = run_benchmark("bench_ui.py", "--events", "200", "--runs", "2")
    assert "AI SDK" in out and "AG-UI" in out and "adapter cost on top" in out


def test_bench_stream_bedrock_parses_every_frame_with_both_readers_and_prints_the_ratio():
    if not has("botocore"):
        pytest.skip("botocore is not installed")
    out = run_benchmark("bench_stream.py", "--api", "bedrock", "--chunks", "200", "--repeats", "1")
    assert "stream: 200 ConverseStream events" in out
    assert "botocore EventStream" in out and "ratio ours (decoder + JSON) / botocore" in out


def test_bench_resilience_runs_its_three_parts_and_prints_their_tables(tmp_path):
    import shutil

    if shutil.which("redis-server") is None or not has("redis"):
        pytest.skip("bench_resilience needs redis-server and the redis package")
    results_file = tmp_path / "resilience.json"
    stdout = run_benchmark("bench_resilience.py", "--duration", "3", "--processes", "2", "--threads", "2",
                           "--turns", "40", "--overhead-calls", "200", "--redis-calls", "20",
                           "--json", str(results_file))
    results = json.loads(results_file.read_text())
    budget, failover, overhead = results["budget"], results["failover"], results["overhead"]
    assert budget["requests"] >= 1 and budget["errors"] == [] and budget["over_budget_requests"] == 0
    assert failover["turns"] == 40 and failover["succeeded"] == 40 and failover["events_ok"]
    assert failover["by_primary"] + failover["by_backup"] == 40 and failover["by_backup"] >= 1
    assert overhead["bare_evalsha_us"] > 0 and overhead["redis_chat_us"] > 0
    assert "shared budget" in stdout and "failover" in stdout and "Redis / EVALSHA" in stdout
