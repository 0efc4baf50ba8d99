"""A streaming tool loop: events arrive while the worker thread runs the tools."""

from agcore_sync import (
    CycleConfig,
    LlmCycle,
    MockProvider,
    TextDelta,
    ToolExecutionCompleted,
    ToolExecutionStarted,
    ToolRegistry,
    tool,
)


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers.

    Args:
        a: the first factor.
        b: the second factor.
    """
    return a * b


model = MockProvider([
    MockProvider.tool_calls(("multiply", {"a": 17, "b": 23})),
    MockProvider.text("17 * 23 = 391"),
])
with ToolRegistry() as registry:
    registry.register(multiply)
    cycle = LlmCycle(model, CycleConfig())
    with cycle.submit_with_tools_stream("What is 17 * 23?", registry) as stream:
        for event in stream:
            if isinstance(event, TextDelta):
                print(event.text, end="", flush=True)
            elif isinstance(event, ToolExecutionStarted):
                print(f"[{event.tool_name}({event.arguments})]")
            elif isinstance(event, ToolExecutionCompleted):
                print(f"[-> {event.result_summary} in {event.duration_s * 1000:.1f} ms]")
    print()
    assert stream.final_response.message.text == "17 * 23 = 391"
