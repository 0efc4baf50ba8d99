"""Human approval in a terminal: a PRE_TOOL_USE hook asks, and the turn never pauses.

When a person sits at the terminal, the loop can simply ask: a PRE_TOOL_USE
hook runs just before each call, in the thread running the loop. For a tool
with ``requires_approval=True`` it returns ``Approve()`` to let the call run
or ``Deny(reason)`` to refuse it (the model gets an error result carrying the
reason). A hook that returns None leaves the call to the tool's own rule,
which would pause the turn.
"""

from agcore_sync import AgentSession, Approve, Deny, HookEvent, Hooks, MockProvider, ToolRegistry, tool

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


SCRIPTED_ANSWERS = ["y", "n"]  # a scripted human, so that this example runs unattended


def ask(question: str) -> str:
    """Ask the human; in a terminal this is ``input(question)``."""
    answer = SCRIPTED_ANSWERS.pop(0)
    print(question + answer)
    return answer


def approve(ctx):
    if ctx.tool_name != "send_email":
        return None
    if ask(f"Allow {ctx.tool_name}({ctx.arguments})? [y/N] ").strip().lower() == "y":
        return Approve()
    return Deny("the user declined this email")


hooks = Hooks()
hooks.on(HookEvent.PRE_TOOL_USE, approve)

provider = MockProvider([
    MockProvider.tool_calls(("send_email", {"to": "ada@example.com", "subject": "Lunch?"}),
                            ("send_email", {"to": "everyone@example.com", "subject": "Lunch?"})),
    MockProvider.text("I emailed Ada; you declined the email to everyone."),
])
with ToolRegistry() as registry:
    registry.register(send_email)
    session = AgentSession(provider, registry=registry, hooks=hooks)
    answer = session.submit_turn("Invite Ada, and everyone, to lunch.")

print(answer.message.text)
for message in session.messages():
    for block in message.content:
        if block.type == "tool_result":
            print(f"  tool result for {block.tool_use_id}: {block.content!r} (is_error={block.is_error})")
assert sent == ["ada@example.com"]
assert session.pending_approvals == ()
