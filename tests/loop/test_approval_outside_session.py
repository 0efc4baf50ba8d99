"""The LlmCycle loops cannot pause: a call that needs approval gets a PermissionDeniedError result."""

from __future__ import annotations

import pytest

from agcore_sync import (
    ApprovalRequired,
    Approve,
    CycleConfig,
    Defer,
    HookEvent,
    Hooks,
    LlmCycle,
    MockProvider,
    ToolExecutionCompleted,
    ToolExecutionStarted,
    ToolRegistry,
    tool,
)

CONFIG = CycleConfig(retry=None, tool_timeout_secs=None)


@pytest.fixture
def tools():
    runs = []

    @tool(requires_approval=True)
    def wipe(path: str) -> str:
        """Delete a directory."""
        runs.append(path)
        return "wiped"

    @tool
    def ls(path: str) -> str:
        """List a directory."""
        runs.append(("ls", path))
        return "a b c"

    with ToolRegistry() as reg:
        reg.register_all([wipe, ls])
        yield reg, runs


def script():
    return MockProvider([MockProvider.tool_calls(("c1", "wipe", {"path": "/tmp/x"}), ("c2", "ls", {"path": "/"})),
                         MockProvider.text("I could not wipe it.")])


def results(request):
    return {b.tool_use_id: (b.content, b.is_error) for m in request.messages for b in m.content
            if b.type == "tool_result"}


def test_submit_with_tools_answers_a_call_that_needs_approval_with_a_permission_error(tools):
    registry, runs = tools
    provider = script()
    answer = LlmCycle(provider, CONFIG).submit_with_tools("wipe /tmp/x", registry)
    assert answer.message.text == "I could not wipe it."
    assert runs == [("ls", "/")]
    content, is_error = results(provider.requests[1])["c1"]
    assert is_error and "PermissionDenied" not in content  # the model gets words, not a class name
    assert 'tool "wipe" needs a human\'s approval and was not run' in content
    assert results(provider.requests[1])["c2"] == ("a b c", False)


def test_the_streaming_loop_does_the_same_and_never_emits_approval_required(tools):
    registry, runs = tools
    provider = script()
    with LlmCycle(provider, CONFIG).submit_with_tools_stream("wipe /tmp/x", registry) as stream:
        events = list(stream)
    assert not any(isinstance(e, ApprovalRequired) for e in events)
    completed = {e.tool_call_id: e for e in events if isinstance(e, ToolExecutionCompleted)}
    assert completed["c1"].is_error and "needs a human's approval" in completed["c1"].result_summary
    assert [e.tool_call_id for e in events if isinstance(e, ToolExecutionStarted)] == ["c1", "c2"]
    assert runs == [("ls", "/")]
    assert stream.pending_approvals == ()


def test_a_defer_from_a_hook_is_refused_the_same_way(tools):
    registry, runs = tools
    hooks = Hooks()
    hooks.on(HookEvent.PRE_TOOL_USE, lambda ctx: Defer() if ctx.tool_name == "ls" else Approve())
    provider = script()
    LlmCycle(provider, CONFIG, hooks=hooks).submit_with_tools("wipe /tmp/x", registry)
    # Approve from a hook lets the call that needs approval run; the deferred one is refused.
    assert runs == ["/tmp/x"]
    content, is_error = results(provider.requests[1])["c2"]
    assert is_error and "needs a human's approval" in content


def test_a_decision_returned_by_another_hook_event_is_ignored_with_a_warning(tools, caplog):
    hooks = Hooks()
    hooks.on(HookEvent.PRE_REQUEST, lambda ctx: Defer())
    LlmCycle(MockProvider([MockProvider.text("hi")]), CONFIG, hooks=hooks).submit("hi")
    assert "Defer returned by a pre_request hook is ignored" in caplog.text
