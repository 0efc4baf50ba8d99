"""Trace a streamed tool turn with OpenTelemetry and print its span tree.

Needs the ``otel`` extra and the OpenTelemetry SDK (``pip install -e
".[otel]" opentelemetry-sdk``). A real app sends the spans to a
collector instead of keeping them in memory.
"""

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agcore_sync import AgentSession, MockProvider, ToolRegistry, Usage, telemetry, tool

exporter = InMemorySpanExporter()
tracer_provider = TracerProvider()
tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
telemetry.instrument(tracer_provider=tracer_provider)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def mul(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


provider = MockProvider([
    MockProvider.tool_calls(("call_a", "add", {"a": 2, "b": 3}), ("call_m", "mul", {"a": 4, "b": 5}),
                            usage=Usage(20, 10)),
    MockProvider.text("5 and 20", usage=Usage(40, 5)),
])
with ToolRegistry() as registry:
    registry.register(add)
    registry.register(mul)
    session = AgentSession(provider, registry=registry)
    # The span current where the turn starts (a web request's, say) is its parent.
    with tracer_provider.get_tracer("app").start_as_current_span("request"):
        stream = session.submit_turn_stream("What are 2+3 and 4*5?")
    for _event in stream:  # the worker and tool threads keep the turn's span as parent
        pass

telemetry.uninstrument()
spans = exporter.get_finished_spans()
children = {}
for span in spans:
    children.setdefault(span.parent.span_id if span.parent else None, []).append(span)


def show(parent_id, depth):
    for span in sorted(children.get(parent_id, []), key=lambda s: (s.start_time, s.name)):
        kind = trace.SpanKind(span.kind).name
        print(f"{'  ' * depth}{span.name} [{kind}]")
        for key, value in sorted(span.attributes.items()):
            print(f"{'  ' * depth}    {key} = {value!r}")
        show(span.context.span_id, depth + 1)


show(None, 0)
