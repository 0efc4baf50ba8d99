"""Parallelism of ToolRegistry.invoke_all: 16 tools that each block 50 ms.

Each tool waits 50 ms on an Event (blocking, not busy), as I/O-bound tools
do. Ideal parallel wall time is 50 ms; the table prints wall / 50 ms
(target <= 1.15) next to a serial baseline measured in the same run.
Run: ``python benchmarks/bench_invoke_all.py``.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import median, table  # noqa: E402

from agcore_sync import BaseTool, ToolRegistry  # noqa: E402

TOOLS = 16
BLOCK_S = 0.050
REPEATS = 15


class Blocking(BaseTool):
    """Blocks for BLOCK_S on an Event that is never set."""

    description = "waits"
    parameters = {"type": "object", "properties": {}}

    def __init__(self, name: str) -> None:
        self.name = name
        self._never = threading.Event()

    def execute(self, args):
        self._never.wait(BLOCK_S)
        return "ok"


def main() -> None:
    with ToolRegistry(max_workers=TOOLS) as registry:
        registry.register_all([Blocking(f"wait_{i}") for i in range(TOOLS)])
        calls = [(f"wait_{i}", {}) for i in range(TOOLS)]
        registry.invoke_all(calls, timeout=5)  # warm the pool's threads
        parallel, serial = [], []
        for _ in range(REPEATS):
            start = time.perf_counter()
            results = registry.invoke_all(calls, timeout=5)
            parallel.append(time.perf_counter() - start)
            assert all(r.ok for r in results)
        for _ in range(3):
            start = time.perf_counter()
            for name, args in calls:
                registry.invoke(name, args)
            serial.append(time.perf_counter() - start)
    rows = [
        ("invoke_all, 16 workers", median(parallel) * 1e3, median(parallel) / BLOCK_S),
        ("serial invoke (baseline)", median(serial) * 1e3, median(serial) / BLOCK_S),
    ]
    print(f"{TOOLS} tools blocking {BLOCK_S * 1e3:.0f} ms each, median of {REPEATS} batches")
    print(table(["variant", "wall ms", "wall / 50 ms"], rows))


if __name__ == "__main__":
    main()
