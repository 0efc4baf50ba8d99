"""Three agents for the nested-approval tests: parent -> assistant (middle) -> mailer (inner, needs approval)."""

from __future__ import annotations

from agcore_sync import AgentSession, CycleConfig, MockProvider, agent_tool, tool

CONFIG = CycleConfig(retry=None, tool_timeout_secs=None)


class Agents:
    """Scripted providers (one per agent, shared by every session its factory makes) and the factories."""

    def __init__(self, *, parent, middle, inner):
        self.parent_provider = MockProvider(parent)
        self.middle_provider = MockProvider(middle)
        self.inner_provider = MockProvider(inner)
        self.emails = []
        agents = self

        @tool(requires_approval=True)
        def send_email(to: str, body: str) -> str:
            """Send an email."""
            agents.emails.append((to, body))
            return f"sent to {to}"

        self.send_email = send_email

    def inner(self) -> AgentSession:
        session = AgentSession(self.inner_provider, CONFIG, system_prompt="You send emails.")
        session.registry.register(self.send_email)  # the session's own registry, closed with it
        return session

    def middle(self) -> AgentSession:
        session = AgentSession(self.middle_provider, CONFIG, system_prompt="You run errands.")
        session.registry.register(agent_tool(self.inner, name="mailer", description="Sends emails."))
        return session
