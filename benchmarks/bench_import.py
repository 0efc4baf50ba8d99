"""Import time of ``import agcore_sync`` against ``import requests, attrs``.

Each import runs in a fresh interpreter; the table shows the whole process
time minus an empty interpreter's start. Median of 7 runs of each,
interleaved. Target ratio <= 1.25. ``agcore_sync`` loads its submodules on
first use (PEP 562), so the table also shows a typical first use and the
import of every module; jsonschema is imported only when a registry first
validates arguments.
Run: ``python benchmarks/bench_import.py``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import median, table  # noqa: E402

RUNS = 7
STATEMENTS = {
    "empty interpreter": "pass",
    "import requests, attrs (baseline)": "import requests, attrs",
    "import agcore_sync": "import agcore_sync",
    "from agcore_sync import AgentSession, OpenAIProvider": "from agcore_sync import AgentSession, OpenAIProvider",
    "from agcore_sync import * (every module)": "from agcore_sync import *",
}


def timed(statement: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", statement], check=True)
    return time.perf_counter() - start


def main() -> None:
    samples = {name: [] for name in STATEMENTS}
    for _ in range(RUNS):
        for name, statement in STATEMENTS.items():
            samples[name].append(timed(statement))
    empty = median(samples["empty interpreter"])
    cost = {name: max(1e-9, median(values) - empty) for name, values in samples.items()}
    baseline = cost["import requests, attrs (baseline)"]
    rows = [(name, cost[name] * 1e3, cost[name] / baseline) for name in STATEMENTS if name != "empty interpreter"]
    print(f"import cost over an empty interpreter ({empty * 1e3:.1f} ms), median of {RUNS}")
    print(table(["statement", "ms", "x baseline"], rows))


if __name__ == "__main__":
    main()
