"""Import time of ``import agcore_sync`` against ``import requests, attrs``.

Each import runs in a fresh interpreter; the table shows the whole process
time minus an empty interpreter's start. Median of 7 runs of each,
interleaved. Target ratio <= 1.25. ``agcore_sync`` loads its submodules on
first use (PEP 562), so the table also shows a typical first use
(``from agcore_sync import AgentSession, OpenAIProvider, ToolRegistry,
tool``) and the import of every module; jsonschema is imported only when a
registry first validates arguments.

Before timing, the package's bytecode is written (``compileall``), as
pip does for every installed package (``requests`` and ``attrs`` have
theirs): an editable install under ``PYTHONDONTWRITEBYTECODE`` never caches
it, and every fresh interpreter would compile the 55 modules a first use
loads, which is what made the first use 1.6 times the baseline in fresh
venvs on a machine that sets that variable.

Then where the first use spends its time: ``python -X importtime`` of the
first-use statement, 5 fresh interpreters, the 15 modules with the largest
median self time (the module's own top-level code, its imports excluded),
with their cumulative time (imports included).
Run: ``python benchmarks/bench_import.py [--top 15]``.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import median, table  # noqa: E402

RUNS = 7
IMPORTTIME_RUNS = 5
FIRST_USE = "from agcore_sync import AgentSession, OpenAIProvider, ToolRegistry, tool"
STATEMENTS = {
    "empty interpreter": "pass",
    "import requests, attrs (baseline)": "import requests, attrs",
    "import agcore_sync": "import agcore_sync",
    "first use: AgentSession, OpenAIProvider, ToolRegistry, tool": FIRST_USE,
    "from agcore_sync import * (every module)": "from agcore_sync import *",
    "first use: AgentSession, GeminiProvider, ToolRegistry, tool":
        "from agcore_sync import AgentSession, GeminiProvider, ToolRegistry, tool",
}


def timed(statement: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", statement], check=True)
    return time.perf_counter() - start


_IMPORTTIME = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)\s*$")


def importtime(statement: str) -> Dict[str, Tuple[int, int, int]]:
    """Return {module: (self us, cumulative us, depth)} from one ``-X importtime`` run."""
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", statement], check=True,
                         capture_output=True, text=True)
    found = {}
    for line in out.stderr.splitlines():
        match = _IMPORTTIME.match(line)
        if match:
            found[match.group(4)] = (int(match.group(1)), int(match.group(2)), len(match.group(3)) // 2)
    return found


def where_the_time_goes(statement: str, top: int) -> None:
    runs = [importtime(statement) for _ in range(IMPORTTIME_RUNS)]
    modules = set().union(*runs)
    rows: List[Tuple[str, float, float, int]] = []
    for name in modules:
        seen = [run[name] for run in runs if name in run]
        rows.append((name, median([s[0] for s in seen]) / 1e3, median([s[1] for s in seen]) / 1e3, seen[0][2]))
    total_self = sum(r[1] for r in rows)
    rows.sort(key=lambda r: -r[1])
    print(f"python -X importtime -c {statement!r}: {len(modules)} modules, {total_self:.1f} ms of self time "
          f"in all; the {top} largest self times, median of {IMPORTTIME_RUNS}")
    print(table(["module", "self ms", "cumulative ms", "depth", "% of self total"],
                [(name, own, cum, str(depth), own / total_self * 100) for name, own, cum, depth in rows[:top]]))
    groups: Dict[str, float] = {}
    for name, own, _, _ in rows:
        root = name.split(".")[0]
        groups[root] = groups.get(root, 0.0) + own
    biggest = sorted(groups.items(), key=lambda kv: -kv[1])[:8]
    print("self time by top-level package: " + ", ".join(f"{k} {v:.1f} ms" for k, v in biggest))


def cache_bytecode() -> str:
    """Write the bytecode of the package the children import; return its folder."""
    find = "import agcore_sync, os; print(os.path.dirname(agcore_sync.__file__))"
    where = subprocess.run([sys.executable, "-c", find], check=True, capture_output=True, text=True).stdout.strip()
    subprocess.run([sys.executable, "-m", "compileall", "-q", where], check=True)
    return where


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=15, help="modules to list from -X importtime (default 15)")
    parser.add_argument("--runs", type=int, default=RUNS, help=f"fresh interpreters per statement (default {RUNS})")
    args = parser.parse_args()
    print(f"bytecode written for {cache_bytecode()} (as pip writes it for installed packages)")
    samples = {name: [] for name in STATEMENTS}
    for _ in range(args.runs):
        for name, statement in STATEMENTS.items():
            samples[name].append(timed(statement))
    empty = median(samples["empty interpreter"])
    cost = {name: max(1e-9, median(values) - empty) for name, values in samples.items()}
    baseline = cost["import requests, attrs (baseline)"]
    rows = [(name, cost[name] * 1e3, cost[name] / baseline) for name in STATEMENTS if name != "empty interpreter"]
    print(f"import cost over an empty interpreter ({empty * 1e3:.1f} ms), median of {args.runs}")
    print(table(["statement", "ms", "x baseline"], rows))
    print()
    where_the_time_goes(FIRST_USE, args.top)


if __name__ == "__main__":
    main()
