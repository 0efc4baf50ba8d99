"""Spans of agents used as tools: the sub-agent's invoke_agent span sits inside the execute_tool span that ran it."""

from __future__ import annotations

from agcore_sync import AgentSession, CycleConfig, MockProvider, ToolRegistry, agent_tool

CONFIG = CycleConfig(retry=None, tool_timeout_secs=None)


def test_a_sub_agents_turn_span_nests_inside_its_tool_span_sync_and_streamed(otel):
    def checker():
        return AgentSession(MockProvider([MockProvider.text("checked")]), CONFIG)

    def research():
        session = AgentSession(MockProvider([MockProvider.tool_calls(("r1", "check", {"input": "q"})),
                                             MockProvider.text("found")]), CONFIG)
        session.registry.register(agent_tool(checker, name="check", description="Check."))
        return session

    expected = """\
invoke_agent
  chat mock-model
  execute_tool research
    invoke_agent
      chat mock-model
      execute_tool check
        invoke_agent
          chat mock-model
      chat mock-model
  chat mock-model"""
    with ToolRegistry() as registry:
        registry.register(agent_tool(research, name="research", description="Research."))
        parent = MockProvider([MockProvider.tool_calls(("c1", "research", {"input": "q"})), MockProvider.text("ok")])
        with AgentSession(parent, CONFIG, registry) as session:
            session.submit_turn("q")
            assert otel.tree() == expected
            otel.exporter.clear()
            parent.add(MockProvider.tool_calls(("c2", "research", {"input": "q"})), MockProvider.text("ok"))
            list(session.submit_turn_stream("again"))
    assert otel.tree() == expected
