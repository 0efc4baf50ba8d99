"""Human approval in a web app: the turn pauses, and a second request approves it.

A tool declared with ``requires_approval=True`` never runs until a human
says so. When the model calls it, the round's other calls run, then the
turn pauses: the stream ends with ``ApprovalRequired``, no thread waits, and
the paused turn is part of ``session.to_dict()``. A later request, in any
process, loads the session and calls ``resume_turn_stream(decisions)``:
approved calls run once, denied ones reach the model as errors with the
reason, and the turn goes on.

The two functions below are the bodies of two web requests; a dict stands
in for the database, a scripted provider for the model.
"""

import json

from agcore_sync import (
    AgentSession,
    ApprovalRequired,
    Approve,
    Deny,
    MockProvider,
    TextDelta,
    ToolExecutionCompleted,
    ToolRegistry,
    tool,
)

sent = []


@tool(requires_approval=True)
def send_email(to: str, subject: str) -> str:
    """Send an email.

    Args:
        to: the recipient's address.
        subject: the subject line.
    """
    sent.append(to)
    return f"sent to {to}"


@tool
def find_address(name: str) -> str:
    """Look up a colleague's email address."""
    return f"{name.lower()}@example.com"


DATABASE = {}  # session id -> the session's JSON
provider = MockProvider([
    MockProvider.tool_calls(("find_address", {"name": "Ada"}),
                            ("send_email", {"to": "ada@example.com", "subject": "Lunch?"}),
                            ("send_email", {"to": "everyone@example.com", "subject": "Lunch?"})),
    MockProvider.text("I emailed Ada; the email to everyone was declined."),
])
registry = ToolRegistry()
registry.register_all([send_email, find_address])


def post_message(session_id, text):
    """Request 1: start the turn, stream it, save the session; return what needs approval."""
    session = AgentSession(provider, registry=registry)
    pending = []
    for event in session.submit_turn_stream(text):
        if isinstance(event, ToolExecutionCompleted):
            print(f"  ran {event.tool_name}: {event.result_summary}")
        elif isinstance(event, ApprovalRequired):
            pending = [(r.tool_call_id, r.tool_name, r.arguments) for r in event.requests]
    DATABASE[session_id] = json.dumps(session.to_dict())
    return pending


def post_decisions(session_id, answers):
    """Request 2, maybe on another worker: load the session and go on with the human's answers."""
    session = AgentSession.from_dict(json.loads(DATABASE[session_id]), provider=provider, registry=registry)
    decisions = {call_id: Approve() if ok else Deny("the user declined this email") for call_id, ok in answers.items()}
    for event in session.resume_turn_stream(decisions):
        if isinstance(event, TextDelta):
            print(event.text, end="", flush=True)
    print()
    DATABASE[session_id] = json.dumps(session.to_dict())
    return session


pending = post_message("s-1", "Invite Ada, and everyone, to lunch.")
for _, name, arguments in pending:
    print(f"approve {name}({arguments})?")
answers = {call_id: arguments["to"] == "ada@example.com" for call_id, _, arguments in pending}  # the human
session = post_decisions("s-1", answers)

assert sent == ["ada@example.com"]
assert session.turn_index == 1 and session.pending_approvals == ()
registry.close()
