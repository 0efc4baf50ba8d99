"""Hand-offs: a tool moves the rest of the turn, and the session, to another agent (issue 27)."""

from __future__ import annotations

import pytest

from agcore_sync import (
    AgentError,
    AgentSession,
    Approve,
    CycleConfig,
    MockProvider,
    OpenAIProvider,
    SqliteSessionStore,
    ToolExecutionCompleted,
    ToolRegistry,
    handoff,
    tool,
)
from agcore_sync.agent.subagents import AgentFactoryError
from tests.support.wire import openai_text_stream

CONFIG = CycleConfig(retry=None, tool_timeout_secs=None)


@tool
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


class Desk:
    """Triage, billing and refunds: one scripted provider each, shared by every session their factories make."""

    def __init__(self, *, triage=(), billing=(), refunds=(), billing_provider=None):
        self.triage_provider = MockProvider(list(triage), model="triage-model")
        self.billing_provider = billing_provider or MockProvider(list(billing), model="billing-model")
        self.refunds_provider = MockProvider(list(refunds), model="refunds-model")
        self.made = []

    def _agent(self, provider, prompt, *tools, model=None):
        agent = AgentSession(provider, CycleConfig(retry=None, tool_timeout_secs=None, model=model),
                             system_prompt=prompt)
        agent.registry.register_all(tools)
        self.made.append(agent)
        return agent

    def refunds(self):
        return self._agent(self.refunds_provider, "You do refunds.", refund)

    def billing(self):
        return self._agent(self.billing_provider, "You do billing.", handoff(self.refunds), model="billing-model")

    def triage(self, **kwargs):
        session = AgentSession(self.triage_provider, CONFIG, system_prompt="You triage.")
        session.registry.register(handoff(self.billing, **kwargs))
        return session


def test_a_handoff_moves_the_rest_of_the_turn_and_the_next_turns_to_the_target_agent():
    desk = Desk(triage=[MockProvider.tool_calls(("h1", "transfer_to_billing", {}))],
                billing=[MockProvider.text("Billing here: what is the order?"), MockProvider.text("Noted.")])
    with desk.triage() as session:
        assert desk.made == []  # the target is made only when the model hands off
        assert session.current_agent is None
        answer = session.submit_turn("I was charged twice")
        assert answer.message.text == "Billing here: what is the order?"
        assert session.current_agent == "billing"
        first = desk.billing_provider.requests[0]
        assert first.system == "You do billing." and first.model == "billing-model"
        assert [t.name for t in first.tools] == ["transfer_to_refunds"]
        # The same history: the user's message, triage's hand-off call and its result.
        assert [m.role.value for m in first.messages] == ["user", "assistant", "tool"]
        assert first.messages[0].text == "I was charged twice"
        assert "Transferred to billing" in first.messages[2].content[0].content
        session.submit_turn("order 42")
        assert len(desk.triage_provider.requests) == 1  # triage is not asked again
        assert desk.billing_provider.requests[1].messages[-1].text == "order 42"
        assert session.turn_index == 2 and len(session.messages()) == 6
        assert session.provider is desk.billing_provider and session.system_prompt == "You do billing."


def test_a_streamed_turn_hands_off_mid_stream():
    desk = Desk(triage=[MockProvider.tool_calls(("h1", "transfer_to_billing", {}))],
                billing=[MockProvider.text("Billing here.")])
    with desk.triage() as session:
        events = list(session.submit_turn_stream("help"))
    done = [e for e in events if isinstance(e, ToolExecutionCompleted)]
    assert [e.tool_name for e in done] == ["transfer_to_billing"]
    assert session.messages()[-1].text == "Billing here." and session.current_agent == "billing"


def test_a_handoff_chain_is_saved_and_loaded_with_to_dict_and_with_a_store(tmp_path):
    desk = Desk(triage=[MockProvider.tool_calls(("h1", "transfer_to_billing", {}))],
                billing=[MockProvider.tool_calls(("h2", "transfer_to_refunds", {}))],
                refunds=[MockProvider.tool_calls(("r1", "refund", {"order": "42"})), MockProvider.text("Refunded."),
                         MockProvider.text("After to_dict."), MockProvider.text("After the store.")])
    store = SqliteSessionStore(str(tmp_path / "s.db"))
    with desk.triage() as session:
        assert session.submit_turn("refund order 42").message.text == "Refunded."
        assert session.current_agent == "refunds"
        saved = session.to_dict()
        session.save(store, "chat-1")
    assert saved["agents"] == {"current": "refunds", "chain": ["transfer_to_billing", "transfer_to_refunds"]}
    # Rebuilt from the triage agent's parts: the hand-offs are replayed through the same tools.
    fresh = Desk(refunds=[MockProvider.text("After to_dict.")])
    loaded = AgentSession.from_dict(saved, provider=fresh.triage_provider, registry=fresh.triage().registry)
    with loaded:
        assert loaded.current_agent == "refunds" and loaded.system_prompt == "You do refunds."
        assert loaded.submit_turn("thanks").message.text == "After to_dict."
        assert loaded.registry.list_tools() == ["refund"]
    again = Desk(refunds=[MockProvider.text("After the store.")])
    with again.triage() as triage_parts:
        restored = AgentSession.load(store, "chat-1", provider=again.triage_provider, registry=triage_parts.registry)
        assert restored.current_agent == "refunds"
        assert restored.submit_turn("bye").message.text == "After the store."
        request = again.refunds_provider.requests[0]
        assert request.system == "You do refunds." and request.messages[0].text == "refund order 42"
        restored.close()
    store.close()


def test_an_input_filter_trims_the_history_the_target_goes_on_with():
    def last_user_message_only(history):
        return [m for m in history if m.role.value == "user"][-1:]

    desk = Desk(triage=[MockProvider.text("Hello!"), MockProvider.tool_calls(("h1", "transfer_to_billing", {}))],
                billing=[MockProvider.text("Billing here.")])
    with desk.triage(input_filter=last_user_message_only) as session:
        session.submit_turn("hi")
        session.submit_turn("my invoice is wrong")
        sent = desk.billing_provider.requests[0].messages
        assert [m.text for m in sent] == ["my invoice is wrong"]
        assert [m.text for m in session.messages()] == ["my invoice is wrong", "Billing here."]


def test_a_handoff_to_an_agent_on_another_provider_sends_the_history_in_that_providers_wire_format(stream_server):
    stream_server.add_response(openai_text_stream("chatcmpl-1", ["OpenAI billing here."], usage=(40, 5)))
    billing = OpenAIProvider(model="gpt-4o-mini", api_key="sk-test", base_url=f"{stream_server.url}/v1")
    desk = Desk(triage=[MockProvider.tool_calls(("h1", "transfer_to_billing", {}), text="Let me transfer you.")],
                billing_provider=billing)
    with desk.triage() as session:
        events = list(session.submit_turn_stream("charged twice"))
        assert session.messages()[-1].text == "OpenAI billing here.", events[-1]
    body = stream_server.requests[0].json
    assert body["model"] == "billing-model"
    assert body["messages"][0] == {"role": "system", "content": "You do billing."}
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "tool"]
    assistant = body["messages"][2]
    assert assistant["tool_calls"][0]["id"] == "h1"
    assert assistant["tool_calls"][0]["function"]["name"] == "transfer_to_billing"
    assert body["messages"][3]["tool_call_id"] == "h1"
    assert [t["function"]["name"] for t in body["tools"]] == ["transfer_to_refunds"]


def test_bad_handoffs_are_typed_errors():
    with pytest.raises(TypeError):
        handoff("billing")
    with pytest.raises(TypeError):
        handoff(lambda: None, name="")
    registry = ToolRegistry()
    registry.register(handoff(lambda: "no session", name="transfer"))
    provider = MockProvider([MockProvider.tool_calls(("h1", "transfer", {}))])
    with registry, AgentSession(provider, CONFIG, registry) as session, pytest.raises(AgentFactoryError):
        session.submit_turn("go")
    # A chain that breaks after its first step (refunds' hand-off missing from billing's tools) is refused.
    desk = Desk(triage=[MockProvider.tool_calls(("h1", "transfer_to_billing", {}))],
                billing=[MockProvider.tool_calls(("h2", "transfer_to_refunds", {}))],
                refunds=[MockProvider.text("Refunds.")])
    with desk.triage() as session:
        session.submit_turn("x")
        saved = session.to_dict()
    broken = Desk()

    def billing():  # no hand-off to refunds any more
        return AgentSession(MockProvider(), CONFIG)

    broken.billing = billing
    with pytest.raises(AgentError, match="transfer_to_refunds"):
        AgentSession.from_dict(saved, provider=MockProvider(), registry=broken.triage().registry)


def test_a_session_loaded_with_the_current_agents_own_parts_stays_at_that_agent():
    desk = Desk(triage=[MockProvider.tool_calls(("h1", "transfer_to_billing", {}))],
                billing=[MockProvider.text("Billing here."), MockProvider.text("Still billing.")])
    with desk.triage() as session:
        session.submit_turn("x")
        saved = session.to_dict()
    billing = desk.billing()  # the current agent's provider and tools, not the first agent's
    with billing, AgentSession.from_dict(saved, provider=billing.provider, registry=billing.registry) as loaded:
        assert loaded.current_agent == "billing" and loaded.system_prompt == "You do billing."
        assert loaded.submit_turn("y").message.text == "Still billing."


def test_a_handoff_in_a_round_that_pauses_for_approval_is_taken_when_the_turn_resumes():
    @tool(requires_approval=True)
    def close_ticket(ticket: str) -> str:
        """Close a ticket."""
        return f"closed {ticket}"

    desk = Desk(triage=[MockProvider.tool_calls(("c1", "close_ticket", {"ticket": "T-1"}),
                                                ("h1", "transfer_to_billing", {}))],
                billing=[MockProvider.text("Billing here; the ticket is closed.")])
    with desk.triage() as session:
        session.registry.register(close_ticket)
        session.submit_turn("close T-1 and get me billing")
        assert [r.tool_call_id for r in session.pending_approvals] == ["c1"]
        assert session.current_agent is None  # the round is not over: no hand-off yet
        saved = session.to_dict()
    # Resumed in a fresh session (as in another process): the hand-off is taken once the round is over.
    fresh = Desk(billing=[MockProvider.text("Billing here; the ticket is closed.")])
    with fresh.triage() as parts:
        parts.registry.register(close_ticket)
        with AgentSession.from_dict(saved, provider=parts.provider, registry=parts.registry) as loaded:
            answer = loaded.resume_turn({"c1": Approve()})
            assert answer.message.text == "Billing here; the ticket is closed."
            assert loaded.current_agent == "billing"
    sent = fresh.billing_provider.requests[0].messages
    assert [m.role.value for m in sent] == ["user", "assistant", "tool", "tool"]
