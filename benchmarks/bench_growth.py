"""Growth: the cost per unit stays flat as the work grows (no quadratic copying).

Five workloads, each at several sizes, each printing a table and its slope:

- session: an ``AgentSession`` of 1,000 turns on ``MockProvider`` (each turn
  one ``add`` round and an answer, 4 messages), streamed and not. Time per
  turn by blocks of turns, against the floor every request pays (copying the
  history into the request, twice a turn, timed alone), and the memory each
  turn keeps (``tracemalloc``, in a separate pass so it does not slow the
  timed one). The mock's record of requests is cleared after each turn: it
  keeps every request, history included, which the library does not.
- parallel tools: one round of K parallel ``add`` calls, K up to 100, through
  ``submit_with_tools_stream``; time per call.
- tool result: one tool returning S bytes, S up to 10 MB, through
  ``submit_with_tools_stream``, with the default 100,000-byte cut and with
  none; time per MB and the peak memory as copies of the result.
- stream: a text answer of E events, E up to 100,000, through
  ``submit_with_tools_stream`` and ``MockProvider.chat_stream`` alone; time per
  event and peak memory per event.
- MCP in flight: K threads sharing one ``McpClient`` (stdio, a real
  subprocess, ``mcp_hold_server.py``, which answers when all K calls have
  arrived), K up to 1,000; wall and client CPU per call, memory per caller.

Times are CPU time of the whole process (``time.process_time``: every
thread, the stream workers and tool threads included), which a machine
shared with other work disturbs far less than wall time; the MCP part also
shows wall time. The slope is the least-squares fit of total cost = a + b *
size (b is the cost of one more unit); the exponent k fits total cost ~
size^k on log-log axes (1.0 is linear, 2.0 quadratic). Medians of
``--repeats``, sizes interleaved.

Run: ``python benchmarks/bench_growth.py [--only session,tools,result,stream,mcp] [--plot docs/_static]``.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import math
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any, Callable, Dict, List, Sequence, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import median, table  # noqa: E402

from agcore_sync import (  # noqa: E402
    AgentSession,
    CycleConfig,
    Error,
    LlmCycle,
    Message,
    MessageRequest,
    MockProvider,
    ToolRegistry,
    tool,
)

PARTS = ("session", "tools", "result", "stream", "mcp")

#: The bound of the stream's bounded variant (``max_buffered_events``).
BOUND = 1024

#: Full sizes, and the tiny ones of ``--quick`` (the smoke test).
FULL = {"turns": 1000, "block": 100, "tools": (1, 3, 10, 30, 100), "result": (10_000, 100_000, 1_000_000, 10_000_000),
        "stream": (1_000, 10_000, 100_000), "mcp": (10, 100, 1000), "mcp_rounds": 5}
QUICK = {"turns": 20, "block": 10, "tools": (1, 4), "result": (1_000, 10_000), "stream": (100, 1_000),
         "mcp": (2, 8), "mcp_rounds": 2}


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first addend.
        b: the second addend.
    """
    return a + b


_PATTERN = "abcdefghijklmnopqrstuvwxyz0123456789 é—🙂\n"


@functools.cache
def _text_of(size: int) -> str:
    unit = _PATTERN.encode()
    text = (_PATTERN * (size // len(unit) + 1)).encode()[:size].decode(errors="ignore")
    return text + "x" * (size - len(text.encode()))


@tool
def big(size: int) -> str:
    """Return a text of exactly ``size`` UTF-8 bytes, some characters multi-byte (built once per size).

    Args:
        size: how many bytes.
    """
    return _text_of(size)


# -- fitting ------------------------------------------------------------------


def fit(xs: Sequence[float], ys: Sequence[float]) -> Tuple[float, float]:
    """Least squares y = a + b x; return (a, b)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    return my - b * mx, b


def exponent(sizes: Sequence[float], totals: Sequence[float]) -> float:
    """The k of total ~ size^k, fitted on log-log axes."""
    return fit([math.log(s) for s in sizes], [math.log(max(t, 1e-12)) for t in totals])[1]


#: The clock of every figure but the MCP wall time: CPU seconds of every thread
#: of this process. On a machine shared with other work, wall time also counts
#: the time other processes held the CPUs; CPU time is what the work cost.
cpu_clock = time.process_time


def timed(fn: Callable[[], Any]) -> float:
    start = cpu_clock()
    fn()
    return cpu_clock() - start


def traced_peak(fn: Callable[[], Any]) -> int:
    """Peak bytes allocated (and not yet freed) by Python while ``fn`` runs, above the start."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def drain(stream: Any) -> int:
    """Read a stream to its end; return the number of events; raise on an Error event."""
    count = 0
    for event in stream:
        count += 1
        if isinstance(event, Error):
            raise RuntimeError(f"the stream failed: {event.message}")
    return count


# -- session ------------------------------------------------------------------


def _session_turns(turns: int, streamed: bool, registry: ToolRegistry, on_turn: Callable[[int], None]) -> None:
    provider = MockProvider()
    session = AgentSession(provider, CycleConfig(), registry=registry)
    for t in range(turns):
        provider.add(MockProvider.tool_calls(("add", {"a": t, "b": 1})), MockProvider.text(f"It is {t + 1}."))
        if streamed:
            drain(session.submit_turn_stream(f"What is {t} + 1?"))
        else:
            session.submit_turn(f"What is {t} + 1?")
        provider.requests.clear()
        on_turn(t)
    if session.turn_index != turns or len(session.messages()) != 4 * turns:
        raise RuntimeError(f"session: {session.turn_index} turns, {len(session.messages())} messages")


def session_growth(size: Dict[str, Any], repeats: int) -> Dict[str, Any]:
    turns, block = size["turns"], size["block"]
    out: Dict[str, Any] = {"blocks": [], "us": {}, "floor_us": [], "kib": {}}
    with ToolRegistry() as registry:
        registry.register(add)
        for streamed in (True, False):
            name = "submit_turn_stream" if streamed else "submit_turn"
            _session_turns(block, streamed, registry, lambda t: None)  # warm-up: first-use imports and caches
            runs: List[List[float]] = []
            for _ in range(repeats):
                times: List[float] = []
                last = [cpu_clock()]

                def on_turn(t: int, times: List[float] = times, last: List[float] = last) -> None:
                    now = cpu_clock()
                    times.append(now - last[0])
                    last[0] = now

                _session_turns(turns, streamed, registry, on_turn)
                runs.append([median(times[i:i + block]) * 1e6 for i in range(0, turns, block)])
            out["us"][name] = [median([r[b] for r in runs]) for b in range(len(runs[0]))]
            kept: List[int] = []

            def on_turn_mem(t: int, kept: List[int] = kept) -> None:
                if (t + 1) % block == 0:
                    kept.append(tracemalloc.get_traced_memory()[0])

            tracemalloc.start()
            try:
                start = tracemalloc.get_traced_memory()[0]
                _session_turns(turns, streamed, registry, on_turn_mem)
            finally:
                tracemalloc.stop()
            marks = [start, *kept]
            out["kib"][name] = [(marks[i + 1] - marks[i]) / block / 1024 for i in range(len(kept))]
    # The floor: copying a history of that length into a request, twice a turn.
    message = Message.user("x")
    for b in range(0, turns, block):
        history = [message] * (4 * (b + block // 2))
        samples = [timed(lambda h=history: MessageRequest(None, [*h, message])) for _ in range(201)]
        out["floor_us"].append(2 * median(samples) * 1e6)
        out["blocks"].append(b + block // 2)
    return out


def print_session(r: Dict[str, Any], size: Dict[str, Any]) -> None:
    block = size["block"]
    names = list(r["us"])
    rows = []
    for i, mid in enumerate(r["blocks"]):
        rows.append((f"{mid - block // 2 + 1}-{mid + block // 2}", *(r["us"][n][i] for n in names),
                     r["floor_us"][i], *(r["kib"][n][i] for n in names)))
    print(f"session of {size['turns']} turns (1 tool round + answer each), median per block of {block} turns")
    print(table(["turns", *(f"{n} CPU us/turn" for n in names), "request floor CPU us/turn",
                 *(f"{n} KiB kept/turn" for n in names)], rows))
    for n in names:
        _, b = fit(r["blocks"], r["us"][n])
        _, fb = fit(r["blocks"], r["floor_us"])
        _, kb = fit(r["blocks"], r["kib"][n])
        print(f"slope {n}: {b * 1000:+.1f} us/turn per 1,000 turns of history (request floor {fb * 1000:+.1f}); "
              f"memory kept {kb * 1000:+.2f} KiB/turn per 1,000 turns; first block {r['us'][n][0]:.0f} us/turn, "
              f"last {r['us'][n][-1]:.0f}")


# -- parallel tool calls ----------------------------------------------------------


def tools_growth(size: Dict[str, Any], repeats: int) -> Dict[str, Any]:
    ks = list(size["tools"])
    totals: Dict[int, List[float]] = {k: [] for k in ks}
    with ToolRegistry() as registry:
        registry.register(add)
        for rep in range(repeats + 1):  # the first pass is a warm-up
            for k in ks:
                calls = [("add", {"a": i, "b": k}) for i in range(k)]
                cycle = LlmCycle(MockProvider([MockProvider.tool_calls(*calls), MockProvider.text("done")]),
                                 CycleConfig())
                start = cpu_clock()
                events = drain(cycle.submit_with_tools_stream("go", registry))
                if rep:
                    totals[k].append(cpu_clock() - start)
                if len(cycle.messages()) != k + 3 or events < 2 * k:
                    raise RuntimeError(f"tools: {len(cycle.messages())} messages, {events} events for {k} calls")
    return {"k": ks, "total_us": [median(totals[k]) * 1e6 for k in ks]}


def print_tools(r: Dict[str, Any]) -> None:
    rows = [(k, t, t / k) for k, t in zip(r["k"], r["total_us"])]
    print("one round of K parallel add calls + the answer, submit_with_tools_stream")
    print(table(["K calls", "CPU us per round", "CPU us per call"], rows))
    _, b = fit(r["k"], r["total_us"])
    print(f"slope: {b:.1f} us per added call; exponent k = {exponent(r['k'], r['total_us']):.2f}")


# -- one big tool result ------------------------------------------------------------


def result_growth(size: Dict[str, Any], repeats: int) -> Dict[str, Any]:
    sizes = list(size["result"])
    configs = {"cut at 100,000 bytes (default)": CycleConfig(), "no cut": CycleConfig(max_tool_result_bytes=None)}
    out: Dict[str, Any] = {"bytes": sizes, "ms": {}, "copies": {}}
    with ToolRegistry() as registry:
        registry.register(big)
        for name, config in configs.items():
            def once(s: int, config: CycleConfig = config) -> LlmCycle:
                cycle = LlmCycle(MockProvider([MockProvider.tool_calls(("big", {"size": s})),
                                               MockProvider.text("done")]), config)
                drain(cycle.submit_with_tools_stream("go", registry))
                return cycle

            for s in sizes:  # a warm-up, and a check that the result reaches the history, cut or whole
                kept = len(once(s).messages()[2].content[0].content.encode())
                if kept < min(s, 100_000) * 0.99 or (config.max_tool_result_bytes is None and kept != s):
                    raise RuntimeError(f"result: {kept} bytes kept of {s}")
            samples: Dict[int, List[float]] = {s: [] for s in sizes}
            for _ in range(repeats):  # interleaved, so noise hits every size alike
                for s in sizes:
                    samples[s].append(timed(lambda s=s: once(s)))
            out["ms"][name] = [median(samples[s]) * 1e3 for s in sizes]
            out["copies"][name] = [traced_peak(lambda s=s: once(s)) / s for s in sizes]
    return out


def print_result(r: Dict[str, Any]) -> None:
    names = list(r["ms"])
    rows = []
    for i, s in enumerate(r["bytes"]):
        rows.append((f"{s:,}", *(r["ms"][n][i] for n in names), *(r["ms"][n][i] / (s / 1e6) for n in names),
                     *(r["copies"][n][i] for n in names)))
    short = ["cut", "whole"]
    print("one tool returning S bytes, then the answer, submit_with_tools_stream; peak = tracemalloc peak / S")
    print(table(["S bytes", *(f"CPU ms ({s})" for s in short), *(f"CPU ms/MB ({s})" for s in short),
                 *(f"peak/S ({s})" for s in short)], rows))
    print("configs: " + "; ".join(f"{s} = {n}" for s, n in zip(short, names)))
    for s, n in zip(short, names):
        _, b = fit(r["bytes"], r["ms"][n])
        print(f"slope ({s}): {b * 1e6:.2f} ms per added MB; exponent k = {exponent(r['bytes'], r['ms'][n]):.2f}")


# -- a long stream -------------------------------------------------------------------


def stream_growth(size: Dict[str, Any], repeats: int) -> Dict[str, Any]:
    sizes = list(size["stream"])
    bounded = f"max_buffered_events={BOUND}"
    out: Dict[str, Any] = {"events": sizes, "us": {"submit_with_tools_stream": [], bounded: [],
                                                   "chat_stream alone": []}, "peak_b": [], "peak_b_bounded": []}
    with ToolRegistry() as registry:
        def looped(e: int, bound: Any = None) -> int:
            cycle = LlmCycle(MockProvider([MockProvider.text("abcdefgh" * e)]), CycleConfig())
            return drain(cycle.submit_with_tools_stream("go", registry, max_buffered_events=bound))

        def looped_bounded(e: int) -> int:
            return looped(e, BOUND)

        def alone(e: int) -> int:
            provider = MockProvider([MockProvider.text("abcdefgh" * e)])
            return drain(provider.chat_stream(MessageRequest(None, [Message.user("go")])))

        runners = (("submit_with_tools_stream", looped), (bounded, looped_bounded), ("chat_stream alone", alone))
        for e in sizes:  # a warm-up, and a check of the counts
            if looped(e) < e or looped_bounded(e) < e or alone(e) < e:
                raise RuntimeError(f"stream: fewer than {e} events")
        samples: Dict[Tuple[str, int], List[float]] = {(key, e): [] for key, _ in runners for e in sizes}
        for _ in range(repeats):  # interleaved, so noise hits every size alike
            for e in sizes:
                for key, fn in runners:
                    samples[key, e].append(timed(lambda fn=fn, e=e: fn(e)))
        for key, _ in runners:
            out["us"][key] = [median(samples[key, e]) * 1e6 for e in sizes]
        for e in sizes:
            out["peak_b"].append(traced_peak(lambda e=e: looped(e)) / e)
            out["peak_b_bounded"].append(traced_peak(lambda e=e: looped_bounded(e)) / e)
    return out


def print_stream(r: Dict[str, Any]) -> None:
    loop, alone = r["us"]["submit_with_tools_stream"], r["us"]["chat_stream alone"]
    bounded = r["us"][f"max_buffered_events={BOUND}"]
    rows = [(f"{e:,}", lo / e, bo / e, al / e, p, pb)
            for e, lo, bo, al, p, pb in zip(r["events"], loop, bounded, alone, r["peak_b"], r["peak_b_bounded"])]
    print(f"a text answer of E events (8 characters each); bounded = max_buffered_events={BOUND}")
    print(table(["E events", "stream CPU us/event", "bounded CPU us/event", "chat_stream alone CPU us/event",
                 "peak bytes/event", "bounded peak bytes/event"], rows))
    _, b = fit(r["events"], loop)
    print(f"slope: {b:.2f} us per added event; exponent k = {exponent(r['events'], loop):.2f} "
          f"(bounded {exponent(r['events'], bounded):.2f}, chat_stream alone {exponent(r['events'], alone):.2f})")


# -- main -------------------------------------------------------------------------------


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(PARTS), help="parts to run, comma-separated: " + ", ".join(PARTS))
    parser.add_argument("--repeats", type=int, default=5, help="runs per size (default 5)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for the smoke test")
    parser.add_argument("--plot", help="write one small PNG per part into this folder (needs matplotlib)")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    parts = [p for p in args.only.split(",") if p]
    unknown = set(parts) - set(PARTS)
    if unknown:
        parser.error(f"unknown parts {sorted(unknown)}; choose from {PARTS}")
    size = QUICK if args.quick else FULL
    runners = {"session": (session_growth, print_session), "tools": (tools_growth, print_tools),
               "result": (result_growth, print_result), "stream": (stream_growth, print_stream)}
    results: Dict[str, Any] = {}
    for part in parts:
        if part == "mcp":
            from _growth_mcp import mcp_growth, print_mcp

            results[part] = mcp_growth(size)
            print_mcp(results[part])
        else:
            measure, show = runners[part]
            results[part] = measure(size, args.repeats)
            if part == "session":
                show(results[part], size)
            else:
                show(results[part])
        print()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    if args.plot:
        from _growth_plot import plot_all

        for path in plot_all(results, Path(args.plot)):
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
