"""Small PNG plots of bench_growth.py's results (``--plot DIR``); needs matplotlib (the ``docs`` extra)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

#: Size of each plot in inches, and its resolution: small enough to sit beside a table.
FIGSIZE = (4.0, 2.6)
DPI = 110


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as exc:
        raise SystemExit("--plot needs matplotlib: pip install matplotlib "
                         "(or the docs extra: pip install -e .[docs])") from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_all(results: Dict[str, Any], folder: Path) -> List[Path]:
    """Write ``growth_<part>.png`` for every part in ``results``; return the paths."""
    plt = _pyplot()
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for part, r in results.items():
        fig, ax = plt.subplots(figsize=FIGSIZE, dpi=DPI)
        if part == "session":
            for name, ys in r["us"].items():
                ax.plot(r["blocks"], ys, marker="o", markersize=3, label=name)
            ax.plot(r["blocks"], r["floor_us"], linestyle="--", label="request floor")
            ax.set(xlabel="turn", ylabel="CPU us per turn", title="session: time per turn")
        elif part == "tools":
            ax.plot(r["k"], [t / k for t, k in zip(r["total_us"], r["k"])], marker="o", markersize=3)
            ax.set(xscale="log", xlabel="parallel calls in the round", ylabel="CPU us per call",
                   title="parallel tool calls: time per call")
        elif part == "result":
            for name, ys in r["ms"].items():
                ax.plot(r["bytes"], [y / (s / 1e6) for y, s in zip(ys, r["bytes"])], marker="o", markersize=3,
                        label=name)
            ax.set(xscale="log", yscale="log", xlabel="tool result, bytes", ylabel="CPU ms per MB",
                   title="tool result: time per MB")
        elif part == "stream":
            for name, ys in r["us"].items():
                ax.plot(r["events"], [y / e for y, e in zip(ys, r["events"])], marker="o", markersize=3, label=name)
            ax.set(xscale="log", xlabel="events in the stream", ylabel="CPU us per event",
                   title="stream: time per event")
        elif part == "mcp":
            ax.plot(r["k"], r["cpu_us_per_call"], marker="o", markersize=3, label="client CPU")
            ax.plot(r["k"], r["wall_us_per_call"], marker="o", markersize=3, label="wall")
            ax.set(xscale="log", xlabel="calls in flight", ylabel="us per call", title="MCP: cost per call")
        ax.set_ylim(bottom=0) if ax.get_yscale() == "linear" else None
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
        ax.title.set_fontsize(9)
        ax.tick_params(labelsize=7)
        ax.xaxis.label.set_fontsize(8)
        ax.yaxis.label.set_fontsize(8)
        fig.tight_layout()
        path = folder / f"growth_{part}.png"
        fig.savefig(path)
        plt.close(fig)
        written.append(path)
    return written
