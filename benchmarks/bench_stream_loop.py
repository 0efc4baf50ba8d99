"""The streaming tool loop: cost per round, throughput, hand-off latency, threads.

Workload: the 50-round ``add(a, b)`` script of bench_tool_loop.py, through
``LlmCycle.submit_with_tools_stream``. In the same run:

- microseconds per round, default config and ``tool_timeout_secs=None``;
- events/s through the stream against ``provider.chat_stream`` alone on the
  same responses (the cost of the worker thread and queue), and the ratio;
- latency from an event leaving the provider to the consumer receiving it
  (p50, p99), measured on a text-heavy response;
- threads per stream: while open, and after close.

Run: ``python benchmarks/bench_stream_loop.py``.
"""

from __future__ import annotations

import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import median, table  # noqa: E402

from agcore_sync import (  # noqa: E402
    CycleConfig,
    LlmCycle,
    Message,
    MessageRequest,
    MockProvider,
    ToolRegistry,
    tool,
)

ROUNDS = 50
REPEATS = 21


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first addend.
        b: the second addend.
    """
    return a + b


def script():
    calls = [MockProvider.tool_calls(("add", {"a": i, "b": i + 1})) for i in range(ROUNDS)]
    return [*calls, MockProvider.text("done")]


def per_round(registry, config):
    cycle = LlmCycle(MockProvider(script()), config)
    start = time.perf_counter()
    for _ in cycle.submit_with_tools_stream("go", registry):
        pass
    return (time.perf_counter() - start) / ROUNDS * 1e6


TEXT = "word " * 4000  # about 2,500 TextDelta events


def text_rate_alone():
    provider = MockProvider([MockProvider.text(TEXT)])
    start = time.perf_counter()
    count = sum(1 for _ in provider.chat_stream(MessageRequest(None, [Message.user("go")])))
    return count / (time.perf_counter() - start)


def text_rate_stream(registry):
    cycle = LlmCycle(MockProvider([MockProvider.text(TEXT)]), CycleConfig())
    start = time.perf_counter()
    count = sum(1 for _ in cycle.submit_with_tools_stream("go", registry))
    return count / (time.perf_counter() - start)


class PacedProvider(MockProvider):
    """Sends one event every PACE_S, as a network would, and stamps when it leaves."""

    PACE_S = 0.0005

    def __init__(self, responses):
        super().__init__(responses)
        self.sent = {}
        self._never = threading.Event()

    def chat_stream(self, request):
        for event in super().chat_stream(request):
            self._never.wait(self.PACE_S)  # the gap between two network reads
            self.sent[id(event)] = time.perf_counter()
            yield event


def latencies(registry):
    provider = PacedProvider([MockProvider.text("word " * 400)])
    received = []
    for event in LlmCycle(provider, CycleConfig()).submit_with_tools_stream("go", registry):
        received.append((id(event), time.perf_counter()))
    return [(t - provider.sent[i]) * 1e6 for i, t in received if i in provider.sent]


class GatedProvider(MockProvider):
    """Holds its stream open until the gate is set."""

    def __init__(self, responses, gate):
        super().__init__(responses)
        self.gate = gate

    def chat_stream(self, request):
        for event in super().chat_stream(request):
            yield event
            self.gate.wait(5)


def threads_per_stream(registry):
    before = threading.active_count()
    gate = threading.Event()
    cycle = LlmCycle(GatedProvider([MockProvider.text("x" * 100)], gate), CycleConfig())
    stream = cycle.submit_with_tools_stream("go", registry)
    next(stream)
    open_threads = threading.active_count() - before
    stream.close()
    gate.set()
    stream.worker.join(5)
    return open_threads, threading.active_count() - before


def main() -> None:
    configs = {
        "default config": CycleConfig(max_tool_turns=ROUNDS + 1),
        "tool_timeout_secs=None": CycleConfig(max_tool_turns=ROUNDS + 1, tool_timeout_secs=None),
    }
    with ToolRegistry() as registry:
        registry.register(add)
        rounds = {name: [] for name in configs}
        alone, through = [], []
        for _ in range(REPEATS):
            for name, config in configs.items():
                rounds[name].append(per_round(registry, config))
            alone.append(text_rate_alone())
            through.append(text_rate_stream(registry))
        lat = []
        for _ in range(3):
            lat.extend(latencies(registry))
        open_threads, after_close = threads_per_stream(registry)
    print(f"streaming tool loop: {ROUNDS} rounds of add(a, b) + a final answer, median of {REPEATS} runs")
    print(table(["variant", "us/round"], [(name, median(rounds[name])) for name in configs]))
    print()
    print(table(["text-only response, ~2,500 events", "events/s", "ratio"], [
        ("provider.chat_stream alone", f"{median(alone):,.0f}", 1.0),
        ("submit_with_tools_stream", f"{median(through):,.0f}", median(through) / median(alone)),
    ]))
    lat.sort()
    print()
    print(table([f"hand-off latency, one event every {PacedProvider.PACE_S * 1e6:.0f} us", "us"], [
        ("p50", statistics.median(lat)), ("p99", lat[int(len(lat) * 0.99)]), ("events measured", str(len(lat)))]))
    print()
    print(table(["threads per stream", "count"],
                [("while open", str(open_threads)), ("after close", str(after_close))]))


if __name__ == "__main__":
    main()
