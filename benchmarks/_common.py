"""Helpers shared by the benchmark scripts: medians and table printing."""

from __future__ import annotations

import resource
import statistics
from typing import List, Sequence


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def peak_rss_mib() -> float:
    """Peak resident set size of this process in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def table(headers: Sequence[str], rows: List[Sequence[object]]) -> str:
    cells = [[str(h) for h in headers]] + [[f"{c:.2f}" if isinstance(c, float) else str(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    line = "  ".join("=" * w for w in widths)
    out = [line, "  ".join(c.ljust(w) for c, w in zip(cells[0], widths)), line]
    out += ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in cells[1:]]
    out.append(line)
    return "\n".join(out)
