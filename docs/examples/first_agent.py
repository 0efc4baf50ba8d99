"""A first agent: one tool, one streamed turn. Runs offline on a scripted model."""

from agcore_sync import AgentSession, MockProvider, TextDelta, ToolRegistry, tool


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


# A scripted model (no key, no network). For a real one: OpenAIProvider(model="gpt-4o-mini")
provider = MockProvider([MockProvider.tool_calls(("multiply", {"a": 17, "b": 23})), MockProvider.text("17 * 23 = 391")])

with ToolRegistry() as registry:
    registry.register(multiply)
    for event in AgentSession(provider, registry=registry).submit_turn_stream("What is 17 * 23?"):
        if isinstance(event, TextDelta):
            print(event.text, end="", flush=True)
print()
