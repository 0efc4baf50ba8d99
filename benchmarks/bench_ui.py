"""What the UI adapters cost per event, over a bare ``json.dumps`` of each event.

A recorded-shape turn (text deltas, a streamed tool call with its output,
usage, the end) of N events is encoded by :func:`agcore_sync.ui.to_ai_sdk`
and :func:`agcore_sync.ui.to_ag_ui`; the baseline is the same loop writing
``b"data: " + json.dumps(event.to_dict()) + b"\\n\\n"`` per event, measured
in the same run (what an app that sends the library's own event JSON pays).
Median of RUNS runs each, interleaved. Goal: under 3 µs per event on top of
the baseline.

Run: ``python benchmarks/bench_ui.py [--events 20000] [--runs 7]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable, List

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import median, table  # noqa: E402

from agcore_sync.llm.events import (  # noqa: E402
    ContentBlockEnd,
    ContentBlockStart,
    CostUpdate,
    MessageComplete,
    MessageStart,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallEnd,
    ToolExecutionCompleted,
    ToolExecutionStarted,
)
from agcore_sync.llm.types import Message, MessageResponse, StopReason, Usage  # noqa: E402
from agcore_sync.ui import to_ag_ui, to_ai_sdk  # noqa: E402


def turn(n_events: int) -> List[Any]:
    """A turn of about ``n_events`` events: a tool round, then a long streamed answer."""
    response = MessageResponse("r1", "m", Message.assistant("x"), StopReason.STOP, Usage(100, 50))
    tool_round = [MessageStart("r0", "m"), ContentBlockStart(0, "tool_use", "c1", "search"),
                  ToolCallArgumentsDelta(0, "c1", '{"q": "wea'), ToolCallArgumentsDelta(0, "c1", 'ther"}'),
                  ToolCallEnd("c1", "search", '{"q": "weather"}'), ContentBlockEnd(0),
                  CostUpdate(Usage(80, 20), 0.0001), MessageComplete(response),
                  ToolExecutionStarted("search", "c1", '{"q": "weather"}'),
                  ToolExecutionCompleted("search", "c1", '{"temp": 21}', False, 0.01, output='{"temp": 21}')]
    deltas = max(1, n_events - len(tool_round) - 6)
    answer = [MessageStart("r1", "m"), ContentBlockStart(0, "text")]
    answer += [TextDelta("word ") for _ in range(deltas)]
    answer += [ContentBlockEnd(0), CostUpdate(Usage(100, 50), 0.0002), MessageComplete(response)]
    return tool_round + answer


def own_json(events: List[Any]) -> int:
    dumps = json.dumps
    total = 0
    for event in events:
        total += len(b"data: " + dumps(event.to_dict()).encode() + b"\n\n")
    return total


def bare_dumps(chunks: List[Any]) -> Callable[[List[Any]], int]:
    """The baseline of one adapter: the same chunks, already made, through json.dumps."""
    def run(_events: List[Any]) -> int:
        dumps = json.dumps
        total = 0
        for chunk in chunks:
            total += len(b"data: " + dumps(chunk).encode() + b"\n\n")
        return total
    return run


def chunks_of(frames: Any) -> List[Any]:
    return [json.loads(frame[6:]) for frame in frames if frame != b"data: [DONE]\n\n"]


def ai_sdk(events: List[Any]) -> int:
    return sum(len(frame) for frame in to_ai_sdk(events, message_id="m1"))


def ag_ui(events: List[Any]) -> int:
    return sum(len(frame) for frame in to_ag_ui(events, thread_id="t", run_id="r"))


def timed(fn: Callable[[List[Any]], int], events: List[Any]) -> float:
    # CPU time of this thread: the work is CPU-bound, and other processes on a shared machine do not count.
    start = time.thread_time()
    fn(events)
    return time.thread_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    events = turn(args.events)
    n = len(events)
    candidates = {
        "to_ai_sdk": ai_sdk, "json.dumps of its chunks": bare_dumps(chunks_of(to_ai_sdk(events))),
        "to_ag_ui": ag_ui, "json.dumps of its chunks ": bare_dumps(chunks_of(to_ag_ui(events, thread_id="t",
                                                                                      run_id="r"))),
        "json.dumps(event.to_dict())": own_json,
    }
    samples = {name: [] for name in candidates}
    for _ in range(args.runs):
        for name, fn in candidates.items():
            samples[name].append(timed(fn, events) / n * 1e6)
    medians = {name: median(values) for name, values in samples.items()}
    rows = [
        ("AI SDK", medians["to_ai_sdk"], medians["json.dumps of its chunks"],
         medians["to_ai_sdk"] - medians["json.dumps of its chunks"]),
        ("AG-UI", medians["to_ag_ui"], medians["json.dumps of its chunks "],
         medians["to_ag_ui"] - medians["json.dumps of its chunks "]),
    ]
    print(f"{n} library events per turn, median of {args.runs} runs; "
          f"json.dumps(event.to_dict()) per event: {medians['json.dumps(event.to_dict())']:.2f} µs")
    print(table(["protocol", "adapter µs/event", "bare json.dumps µs/event", "adapter cost on top (µs)"],
                rows))


if __name__ == "__main__":
    main()
