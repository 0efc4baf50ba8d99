"""A triage agent that hands the customer off to billing, and the session that stays with billing.

``handoff(factory)`` makes a tool without arguments (``transfer_to_billing``
here). When the triage model calls it, ``factory()`` builds the billing agent
(an ``AgentSession`` used as its description: model, system prompt, tools),
and the rest of the turn runs as billing, on the same history. The session
stays with billing for the next turns, ``session.current_agent`` names it,
and ``to_dict()`` keeps it: ``from_dict()`` with the triage agent's parts
comes back at billing.

Scripted providers stand in for the models, so this runs without a key; the
two agents could as well use different providers.
"""

import json

from agcore_sync import AgentSession, MockProvider, ToolRegistry, handoff, tool

BILLING_MODEL = MockProvider([
    MockProvider.tool_calls(("b1", "refund", {"order": "A-1042", "amount": 19.99}), model="billing-model"),
    MockProvider.text("I refunded the duplicate charge of $19.99 on order A-1042.", model="billing-model"),
    MockProvider.text("You are welcome. Anything else about your invoice?", model="billing-model"),
])


@tool
def refund(order: str, amount: float) -> str:
    """Refund an amount on an order."""
    return f"refunded {amount:.2f} on {order}"


def billing() -> AgentSession:
    """The billing agent: its own model, prompt and tools (made when triage hands off)."""
    session = AgentSession(BILLING_MODEL, system_prompt="You are billing support. Refund duplicate charges.")
    session.registry.register(refund)
    return session


def triage_registry() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(handoff(billing, description="Hand the customer to billing for charges and refunds."))
    return registry


def main() -> None:
    triage_model = MockProvider([MockProvider.tool_calls(("t1", "transfer_to_billing", {}), model="triage-model")])
    with triage_registry() as registry:
        session = AgentSession(triage_model, registry=registry, system_prompt="You route customers to the right team.")
        answer = session.submit_turn("I was charged twice for order A-1042")
        print(f"[{session.current_agent}] {answer.message.text}")
        for message in session.messages():
            for call in message.tool_uses:
                print(f"  called {call.name} {json.dumps(call.input)}")

        saved = json.dumps(session.to_dict())  # a database row, a file...
        session.close()

    # Later, maybe in another process: load with the triage agent's parts; the hand-off is replayed.
    with triage_registry() as registry:
        session = AgentSession.from_dict(json.loads(saved), provider=MockProvider(), registry=registry)
        print(f"loaded at agent: {session.current_agent}")
        answer = session.submit_turn("Thanks!")
        print(f"[{session.current_agent}] {answer.message.text}")
        session.close()


if __name__ == "__main__":
    main()
