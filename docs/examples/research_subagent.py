"""A research agent used as a tool: its turn streams inside the parent's, drawn indented.

``agent_tool(factory, name=..., description=...)`` makes a tool that runs one
turn of the session ``factory()`` builds (its own model, tools and system
prompt) and returns its final text. In the parent's stream the research
agent's events arrive wrapped in ``SubagentEvent``; the printer below draws
them indented, one level per agent. Its cost counts in the parent's, with a
breakdown per agent in ``session.usage_by_agent``.

Scripted providers stand in for the models, so this runs without a key.
"""

from agcore_sync import (
    AgentSession,
    CycleConfig,
    MockProvider,
    SubagentEvent,
    TextDelta,
    ToolExecutionCompleted,
    ToolExecutionStarted,
    Usage,
    agent_tool,
    tool,
)

CONFIG = CycleConfig(tool_timeout_secs=120)  # a sub-agent's turn runs inside one tool call: give it time


@tool
def search(query: str) -> str:
    """Search the archive."""
    return "The Eiffel Tower is 330 m tall (2022 survey)."


def research_agent() -> AgentSession:
    """A new research session per call: its own (here scripted) model, tools and prompt."""
    model = MockProvider([
        MockProvider.tool_calls(("s1", "search", {"query": "Eiffel Tower height"}), usage=Usage(120, 15),
                                model="gpt-4o-mini"),
        MockProvider.text("It is 330 m tall, per a 2022 survey.", usage=Usage(180, 12), model="gpt-4o-mini"),
    ])
    session = AgentSession(model, CONFIG, system_prompt="You research facts and cite them.")
    session.registry.register(search)  # the session made this registry: it closes it with the session
    return session


class Printer:
    """Print a stream as lines; a sub-agent's events indented two spaces per level."""

    def __init__(self) -> None:
        self.open_text = None  # the depth whose answer is being written, or None

    def show(self, event) -> None:
        depth, name = 0, "assistant"
        while isinstance(event, SubagentEvent):
            depth, name, event = depth + 1, event.agent_name, event.event
        pad = "  " * depth
        if isinstance(event, TextDelta):
            if self.open_text != depth:
                self.end_line()
                print(f"{pad}{name}> ", end="")
                self.open_text = depth
            print(event.text, end="")
        elif isinstance(event, ToolExecutionStarted):
            self.end_line()
            print(f"{pad}[tool] {event.tool_name} {event.arguments}")
        elif isinstance(event, ToolExecutionCompleted):
            self.end_line()
            print(f"{pad}[done] {event.tool_name} -> {event.result_summary}")

    def end_line(self) -> None:
        if self.open_text is not None:
            print()
            self.open_text = None


def main() -> None:
    parent_model = MockProvider([
        MockProvider.tool_calls(("r1", "research", {"input": "How tall is the Eiffel Tower?"}),
                                usage=Usage(200, 20), model="gpt-4o"),
        MockProvider.text("The Eiffel Tower is 330 m tall.", usage=Usage(260, 10), model="gpt-4o"),
    ])
    prompt = "Answer briefly; ask the research agent for facts."
    with AgentSession(parent_model, CONFIG, system_prompt=prompt) as session:
        session.registry.register(agent_tool(research_agent, name="research",
                                             description="Research a factual question and answer with sources."))
        printer = Printer()
        for event in session.submit_turn_stream("How tall is the Eiffel Tower?"):
            printer.show(event)
        printer.end_line()
        print(f"cost: ${session.cost_usd:.6f} for {session.usage.requests} requests")
        for path, used in session.usage_by_agent.items():
            print(f"  of which {path}: {used.requests} requests, ${used.cost_usd:.6f}")


if __name__ == "__main__":
    main()
