"""Human approval in a streamed turn: the UI answers, the worker's hook waits.

In a streamed turn the loop runs on a worker thread. Every tool call is
announced by a ``ToolExecutionStarted`` event before its PRE_TOOL_USE hook
fires, so the thread reading the events (a web request, a UI) can show the
call, ask the human and hand the answer to the hook, which waits for it,
with a time limit, on the worker thread.
"""

import queue

from agcore_sync import (
    AgentSession,
    Deny,
    HookEvent,
    Hooks,
    MockProvider,
    TextDelta,
    ToolExecutionCompleted,
    ToolExecutionStarted,
    ToolRegistry,
    tool,
)

#: How long a call waits for the human before it is denied.
APPROVAL_TIMEOUT_S = 60.0


class Approvals:
    """Answers from the UI thread to the hook on the worker thread, by tool call id."""

    def __init__(self):
        self._answers = {}

    def _queue(self, call_id):
        return self._answers.setdefault(call_id, queue.Queue(maxsize=1))

    def answer(self, call_id, allowed):
        """Called by the UI thread."""
        self._queue(call_id).put(allowed)

    def hook(self, ctx):
        """The PRE_TOOL_USE hook: wait for the UI's answer to this call."""
        try:
            allowed = self._queue(ctx.tool_call_id).get(timeout=APPROVAL_TIMEOUT_S)
        except queue.Empty:
            return Deny("nobody approved this call in time")
        finally:
            self._answers.pop(ctx.tool_call_id, None)
        return None if allowed else Deny("the user said no")


@tool
def delete_branch(name: str) -> str:
    """Delete a git branch."""
    return f"deleted {name}"


approvals = Approvals()
hooks = Hooks()
hooks.on(HookEvent.PRE_TOOL_USE, approvals.hook)
provider = MockProvider([
    MockProvider.tool_calls(("delete_branch", {"name": "old-feature"}), ("delete_branch", {"name": "main"})),
    MockProvider.text("Deleted old-feature; you kept main."),
])

with ToolRegistry() as registry:
    registry.register(delete_branch)
    session = AgentSession(provider, registry=registry, hooks=hooks)
    with session.submit_turn_stream("Clean up old-feature and main.") as stream:
        for event in stream:
            if isinstance(event, ToolExecutionStarted):
                allowed = event.arguments != '{"name": "main"}'   # the human's decision, scripted here
                print(f"asked: {event.tool_name}({event.arguments}) -> {'yes' if allowed else 'no'}")
                approvals.answer(event.tool_call_id, allowed)
            elif isinstance(event, ToolExecutionCompleted):
                print(f"  {event.tool_name}: {event.result_summary} (is_error={event.is_error})")
            elif isinstance(event, TextDelta):
                print(event.text, end="", flush=True)
    print()
