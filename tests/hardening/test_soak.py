"""Soak: many tool-loop streams closed at random points leave no thread and little memory behind.

Each stream runs ``LlmCycle(MockProvider(...)).submit_with_tools_stream`` over
one shared :class:`ToolRegistry` whose tool can block on an Event, and is
closed at a point picked by a seeded random generator:

- ``before``: right after it was opened, before reading any event;
- ``mid-text``: after the first ``TextDelta`` of the first response;
- ``tool``: while its tool is running (closed from another thread while the
  consumer is blocked in ``next()``, then the tool is released);
- ``end``: after it was read to the end.

Size: ``AGCORE_SOAK_STREAMS`` (default 1000, which .ci/run uses; it takes
a few seconds on 2 cores). A longer manual run::

    AGCORE_SOAK_STREAMS=20000 python -m pytest tests/hardening/test_soak.py -m soak -s

Run with ``-s`` to see the measured numbers; they are in the assertion
messages too.
"""

from __future__ import annotations

import gc
import os
import queue
import random
import threading
import time
from typing import Any, Dict, List, Optional

import pytest

from agcore_sync.llm.events import MessageComplete, TextDelta, ToolExecutionStarted
from agcore_sync.llm.mock import MockProvider
from agcore_sync.loop.cycle import CycleConfig, LlmCycle
from agcore_sync.tools.base import BaseTool
from agcore_sync.tools.registry import ToolRegistry

pytestmark = pytest.mark.soak

#: Streams per run; override with the AGCORE_SOAK_STREAMS environment variable.
DEFAULT_STREAMS = 1000
#: Streams run before the baseline is measured, so one-off allocations
#: (imports, caches, the registry's pool) are not counted as growth.
WARM_UP_STREAMS = 50
#: Allowed growth of the resident set over the whole run, in MiB. Measured on
#: 2 cores: +0.15 MiB for 1000 streams, +0.2 MiB for 20000 (allocator noise).
#: A stream that kept one joined Thread object alive showed +42 MiB for 20000.
RSS_GROWTH_BOUND_MIB = 4.0
#: Bound on every wait of the test (a tool's gate, a closer hand-off, a join).
WAIT = 10.0
SEED = 20260807

CLOSE_POINTS = ("before", "mid-text", "tool", "end")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def rss_mib() -> float:
    """The current resident set size of this process, in MiB."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE_SIZE / (1024 * 1024)


class _Gate:
    """One stream's tool gate: the tool says it entered, then waits to be released."""

    __slots__ = ("entered", "release")

    def __init__(self, open_: bool) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        if open_:
            self.release.set()


class BlockingTool(BaseTool):
    """Waits on the gate named by its ``key`` argument (bounded), then answers."""

    name = "block"
    description = "Wait until released."
    parameters = {"type": "object", "properties": {"key": {"type": "integer"}}, "required": ["key"]}

    def __init__(self) -> None:
        self.gates: Dict[int, _Gate] = {}
        self.timed_out = 0

    def execute(self, args: Dict[str, Any]) -> Any:
        gate = self.gates[args["key"]]
        gate.entered.set()
        if not gate.release.wait(WAIT):
            self.timed_out += 1
        return {"released": args["key"]}


def script(key: int) -> List[Any]:
    """A turn: some text and a call of the blocking tool, then a long answer."""
    return [
        MockProvider.tool_calls(("block", {"key": key}), text="Let me check that for you, one moment please. " * 3),
        MockProvider.text("All done: the tool was released and answered \u2713. " * 4),
    ]


class _Closer:
    """A thread that closes streams while their consumer waits in ``next()``, then releases the tool."""

    def __init__(self) -> None:
        self.jobs: queue.Queue[Optional[tuple]] = queue.Queue()
        self.errors: List[str] = []
        self.thread = threading.Thread(target=self._run, name="soak-closer")

    def _run(self) -> None:
        while True:
            try:
                job = self.jobs.get(timeout=WAIT)
            except queue.Empty:
                continue  # no stream closed at a tool for a while; the None sentinel ends the loop
            if job is None:
                return
            stream, gate = job
            if not gate.entered.wait(WAIT):
                self.errors.append("a tool never started")
            stream.close()
            gate.release.set()


def run_streams(count: int, rng: random.Random, registry: ToolRegistry, tool: BlockingTool, closer: _Closer,
                workers: List[threading.Thread], tally: Dict[str, int], first_key: int) -> None:
    for key in range(first_key, first_key + count):
        point = rng.choice(CLOSE_POINTS)
        tally[point] += 1
        gate = tool.gates[key] = _Gate(open_=point != "tool")
        cycle = LlmCycle(MockProvider(script(key)), CycleConfig(retry=None))
        stream = cycle.submit_with_tools_stream(f"request {key}", registry)
        workers.append(stream.worker)
        if point == "before":
            stream.close()
        elif point == "mid-text":
            for event in stream:
                if isinstance(event, TextDelta):
                    stream.close()
        elif point == "tool":
            for event in stream:
                if isinstance(event, ToolExecutionStarted):
                    closer.jobs.put((stream, gate))
            assert stream.closed
        else:
            seen = list(stream)
            assert isinstance(seen[-1], MessageComplete), seen[-1]
            stream.close()
            assert len(cycle.messages()) == 4  # user, assistant call, tool result, answer
        del tool.gates[key]
        if key % 100 == 0:  # keep only the workers still running: the test must not hold thousands of threads
            workers[:] = [w for w in workers if w.is_alive()]


def test_a_thousand_tool_loop_streams_closed_at_random_points_leave_no_thread_and_little_memory():
    count = int(os.environ.get("AGCORE_SOAK_STREAMS", DEFAULT_STREAMS))
    rng = random.Random(SEED)
    threads_before = threading.active_count()
    tally = {point: 0 for point in CLOSE_POINTS}
    tool = BlockingTool()
    registry = ToolRegistry()
    registry.register(tool)
    closer = _Closer()
    closer.thread.start()
    workers: List[threading.Thread] = []
    try:
        run_streams(WARM_UP_STREAMS, rng, registry, tool, closer, workers, tally, 0)
        for worker in workers:
            worker.join(WAIT)
        workers.clear()
        gc.collect()
        rss_start = rss_mib()
        started = time.perf_counter()
        run_streams(count, rng, registry, tool, closer, workers, tally, WARM_UP_STREAMS)
        elapsed = time.perf_counter() - started
    finally:
        closer.jobs.put(None)
        closer.thread.join(WAIT)
    for worker in workers:
        worker.join(WAIT)
    stuck_workers = [w.name for w in workers if w.is_alive()]
    registry.close()
    tool_threads = [t for t in threading.enumerate() if t.name.startswith("agcore-tool")]
    for thread in tool_threads:
        thread.join(WAIT)
    gc.collect()
    rss_end = rss_mib()
    growth = rss_end - rss_start
    threads_after = threading.active_count()
    per_stream = growth * 1024 * 1024 / count
    report = (f"{count} streams (+{WARM_UP_STREAMS} warm-up) in {elapsed:.1f} s, closes {tally}; "
              f"RSS {rss_start:.1f} -> {rss_end:.1f} MiB (growth {growth:+.2f} MiB = {per_stream:+.0f} B per stream, "
              f"bound {RSS_GROWTH_BOUND_MIB} MiB); threads {threads_before} -> {threads_after}")
    print("\nsoak:", report)
    assert not closer.thread.is_alive() and not closer.errors, f"{closer.errors}; {report}"
    assert not stuck_workers, f"stream workers still running: {stuck_workers[:5]}; {report}"
    assert not [t.name for t in tool_threads if t.is_alive()], f"registry threads outlived close(); {report}"
    assert tool.timed_out == 0, f"{tool.timed_out} tools waited out their gate; {report}"
    assert threads_after == threads_before, f"thread count changed; {report}"
    assert growth < RSS_GROWTH_BOUND_MIB, report
    assert all(tally[point] for point in CLOSE_POINTS), report
