"""CPU microseconds per round of a session turn with telemetry off and on.

Workload: an ``AgentSession`` turn of 50 rounds of one ``add(a, b)`` call and
a final answer (MockProvider), blocking (``submit_turn``) and streamed
(``submit_turn_stream``), with tools inline (``tool_timeout_secs=None``) and
on the pool (the default). Variants, interleaved so noise hits each alike:
telemetry off; ``instrument()`` with the API's no-op providers (the
library's own share: attributes, context, bookkeeping); with the OpenTelemetry SDK (a
``SimpleSpanProcessor`` into an in-memory exporter, cleared after each run,
and an in-memory metric reader); the same with ``capture_content=True``.
Each round makes a ``chat`` and an ``execute_tool`` span, each turn an
``invoke_agent`` span. Needs the ``otel`` extra and ``opentelemetry-sdk``.
The figure is the process's CPU time (all threads: the stream worker and the
tool pool included) per round, not wall time: on a shared machine a longer
critical path is preempted more often, and wall-clock medians then overstate
small differences. Run: ``python benchmarks/bench_telemetry.py``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import median, table  # noqa: E402
from opentelemetry import metrics, trace  # noqa: E402
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from agcore_sync import AgentSession, CycleConfig, MockProvider, ToolRegistry, telemetry, tool  # noqa: E402

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


def per_round(registry, config, streamed: bool) -> float:
    session = AgentSession(MockProvider(script()), config, registry)
    start = time.process_time()
    if streamed:
        for _ in session.submit_turn_stream("go"):
            pass
    else:
        session.submit_turn("go")
    return (time.process_time() - start) / ROUNDS * 1e6


def main() -> None:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    variants = {
        "off": None,
        "on, no-op providers": "noop",
        "on, SDK": False,
        "on, SDK, capture_content": True,
    }
    loops = {
        "submit_turn, tools inline": (CycleConfig(max_tool_turns=ROUNDS + 1, tool_timeout_secs=None), False),
        "submit_turn, tools on the pool": (CycleConfig(max_tool_turns=ROUNDS + 1), False),
        "submit_turn_stream, tools inline": (CycleConfig(max_tool_turns=ROUNDS + 1, tool_timeout_secs=None), True),
        "submit_turn_stream, tools on the pool": (CycleConfig(max_tool_turns=ROUNDS + 1), True),
    }
    samples = {(loop, variant): [] for loop in loops for variant in variants}
    with ToolRegistry() as registry:
        registry.register(add)
        for _ in range(REPEATS):
            for loop, (config, streamed) in loops.items():
                for variant, capture in variants.items():
                    if capture is None:
                        telemetry.uninstrument()
                    elif capture == "noop":
                        telemetry.instrument(tracer_provider=trace.NoOpTracerProvider(),
                                             meter_provider=metrics.NoOpMeterProvider())
                    else:
                        telemetry.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider,
                                             capture_content=capture)
                    samples[loop, variant].append(per_round(registry, config, streamed))
                    exporter.clear()
    telemetry.uninstrument()
    rows = []
    for loop in loops:
        off = median(samples[loop, "off"])
        for variant in variants:
            value = median(samples[loop, variant])
            rows.append((loop, variant, value, value - off))
    print(f"session turn: {ROUNDS} rounds of add(a, b) + a final answer, process CPU, median of {REPEATS} runs")
    print(table(["loop", "telemetry", "CPU us/round", "cost us/round"], rows))
    tracer_provider.shutdown()
    meter_provider.shutdown()


if __name__ == "__main__":
    main()
