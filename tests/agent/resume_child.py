"""Resume a paused turn in a fresh process: the second half of a test in test_paused_turns.py.

Reads ``{"session": <to_dict>, "decisions": {id: "approve" | "deny:<reason>"}}`` on stdin,
resumes the turn with a new MockProvider and registry, and prints what happened as JSON.
"""

from __future__ import annotations

import json
import sys

from agcore_sync import AgentSession, Approve, Deny, MockProvider, ToolRegistry, tool

runs = []


@tool(requires_approval=True)
def send_email(to: str) -> str:
    """Send an email."""
    runs.append(to)
    return f"sent to {to}"


def main() -> None:
    data = json.load(sys.stdin)
    decisions = {call_id: Approve() if text == "approve" else Deny(text.split(":", 1)[1])
                 for call_id, text in data["decisions"].items()}
    provider = MockProvider([MockProvider.text("Done.")])
    with ToolRegistry() as registry:
        registry.register(send_email)
        session = AgentSession.from_dict(data["session"], provider=provider, registry=registry)
        pending = [request.tool_call_id for request in session.pending_approvals]
        answer = session.resume_turn(decisions)
    json.dump({
        "pending_before": pending,
        "runs": runs,
        "answer": answer.message.text,
        "sent": [message.to_dict() for message in provider.requests[0].messages],
        "turn_index": session.turn_index,
        "cost_so_far": session.cost_so_far.to_dict(),
        "pending_after": list(session.pending_approvals),
    }, sys.stdout)


if __name__ == "__main__":
    main()
