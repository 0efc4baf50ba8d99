"""An OpenTelemetry SDK with in-memory exporters, installed with ``instrument()`` for one test."""

from __future__ import annotations

from typing import Any, Dict, List

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from agcore_sync import telemetry  # noqa: E402


class Otel:
    """The finished spans and the metric points of one test."""

    def __init__(self, exporter: InMemorySpanExporter, reader: InMemoryMetricReader,
                 tracer_provider: TracerProvider) -> None:
        self.exporter = exporter
        self.reader = reader
        self.tracer_provider = tracer_provider
        self.tracer = tracer_provider.get_tracer("tests")

    def spans(self) -> List[Any]:
        return list(self.exporter.get_finished_spans())

    def span(self, name: str) -> Any:
        found = [s for s in self.spans() if s.name == name]
        assert len(found) == 1, (name, [s.name for s in self.spans()])
        return found[0]

    def tree(self) -> str:
        """Render the finished spans as an indented tree (parallel tool spans sorted by name)."""
        spans = self.spans()
        ids = {s.context.span_id for s in spans}
        children: Dict[Any, List[Any]] = {}
        for s in spans:
            parent = s.parent.span_id if s.parent is not None and s.parent.span_id in ids else None
            children.setdefault(parent, []).append(s)
        lines: List[str] = []

        def walk(parent: Any, depth: int) -> None:
            kids = sorted(children.get(parent, []), key=lambda s: s.start_time)
            ordered: List[Any] = []
            for s in kids:  # a run of sibling tool spans ran in parallel: order them by name
                if ordered and s.name.startswith("execute_tool") and ordered[-1][-1].name.startswith("execute_tool"):
                    ordered[-1].append(s)
                else:
                    ordered.append([s])
            for run in ordered:
                for s in sorted(run, key=lambda s: s.name) if len(run) > 1 else run:
                    lines.append("  " * depth + s.name)
                    walk(s.context.span_id, depth + 1)

        walk(None, 0)
        return "\n".join(lines)

    def metric_points(self, name: str) -> List[Any]:
        data = self.reader.get_metrics_data()
        points: List[Any] = []
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        points.extend(metric.data.data_points)
        return points


@pytest.fixture
def otel():
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    telemetry.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
    try:
        yield Otel(exporter, reader, tracer_provider)
    finally:
        telemetry.uninstrument()
        tracer_provider.shutdown()
        meter_provider.shutdown()
