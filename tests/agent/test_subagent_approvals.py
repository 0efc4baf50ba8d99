"""A sub-agent's approval pause pauses its parent; resume_turn resumes both, here or in another process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agcore_sync import (
    AgentSession,
    ApprovalRequired,
    Approve,
    CycleConfig,
    Deny,
    MockProvider,
    SqliteSessionStore,
    SubagentEvent,
    ToolApprovalRequest,
    ToolExecutionCompleted,
    ToolRegistry,
    agent_tool,
)
from agcore_sync.loop.tool_loop import ToolLoop
from tests.agent.subagent_agents import Agents

CHILD = Path(__file__).with_name("subagent_resume_child.py")
ROOT = Path(__file__).resolve().parents[2]
CONFIG = CycleConfig(retry=None, tool_timeout_secs=None)
PAUSING = dict(parent=[MockProvider.tool_calls(("a1", "assistant", {"input": "email bob"}))],
               middle=[MockProvider.tool_calls(("m1", "mailer", {"input": "email bob: hi"}))],
               inner=[MockProvider.tool_calls(("e1", "send_email", {"to": "bob", "body": "hi"}))])


def parent_session(agents):
    session = AgentSession(agents.parent_provider, CONFIG)
    session.registry.register(agent_tool(agents.middle, name="assistant", description="Runs errands."))
    return session


def test_a_pause_two_agents_deep_lists_the_inner_call_under_its_path_and_resumes_in_place():
    agents = Agents(parent=PAUSING["parent"] + [MockProvider.text("All done.")],
                    middle=PAUSING["middle"] + [MockProvider.text("The mailer sent it.")],
                    inner=PAUSING["inner"] + [MockProvider.text("Sent.")])
    with parent_session(agents) as session:
        paused = session.submit_turn("Email bob")
        assert paused.message.tool_uses[0].id == "a1"
        assert session.pending_approvals == (
            ToolApprovalRequest("a1/m1/e1", "send_email", {"to": "bob", "body": "hi"}),)
        assert agents.emails == []
        assert session.turn_index == 0  # a paused turn has not ended
        answer = session.resume_turn({"a1/m1/e1": Approve()})
        assert answer.message.text == "All done."
        assert agents.emails == [("bob", "hi")]
        assert session.pending_approvals == () and session.turn_index == 1
    # Each level's model got its own call's result.
    assert agents.middle_provider.requests[-1].messages[-1].content[0].content == "Sent."
    assert agents.parent_provider.requests[-1].messages[-1].content[0].content == "The mailer sent it."
    # The inner turn went on from its pause: its user message was not sent again.
    assert [m.role.value for m in agents.inner_provider.requests[-1].messages] == ["user", "assistant", "tool"]
    assert session.usage.requests == 6 and session.usage.tool_calls == 3
    assert session.usage_by_agent["assistant"].requests == 4
    assert session.usage_by_agent["assistant/mailer"].requests == 2


def test_a_denied_inner_call_reaches_the_inner_agent_as_an_error_and_every_level_goes_on():
    agents = Agents(parent=PAUSING["parent"] + [MockProvider.text("Not sent.")],
                    middle=PAUSING["middle"] + [MockProvider.text("The mailer was refused.")],
                    inner=PAUSING["inner"] + [MockProvider.text("Refused.")])
    with parent_session(agents) as session:
        session.submit_turn("Email bob")
        assert session.resume_turn({"a1/m1/e1": Deny("not today")}).message.text == "Not sent."
    result = agents.inner_provider.requests[-1].messages[-1].content[0]
    assert result.is_error and "not today" in result.content and agents.emails == []


def test_a_streamed_nested_pause_ends_with_approval_required_and_resumes_on_a_stream():
    agents = Agents(parent=PAUSING["parent"] + [MockProvider.text("All done.")],
                    middle=PAUSING["middle"] + [MockProvider.text("The mailer sent it.")],
                    inner=PAUSING["inner"] + [MockProvider.text("Sent.")])
    with parent_session(agents) as session:
        events = list(session.submit_turn_stream("Email bob"))
        assert isinstance(events[-1], ApprovalRequired)
        assert [r.tool_call_id for r in events[-1].requests] == ["a1/m1/e1"]
        # The paused agent call gets no Completed (the ApprovalRequired answers it), at any level.
        assert not [e for e in events if isinstance(e, ToolExecutionCompleted)]
        inner_pause = [e for e in events if isinstance(e, SubagentEvent) and isinstance(e.innermost, ApprovalRequired)]
        assert [e.innermost.requests[0].tool_call_id for e in inner_pause] == ["e1", "m1/e1"]
        resumed = list(session.resume_turn_stream({"a1/m1/e1": Approve()}))
        done = [e for e in resumed if isinstance(e, ToolExecutionCompleted)]
        assert [(e.tool_call_id, e.output) for e in done] == [("a1", "The mailer sent it.")]
        assert session.messages()[-1].text == "All done." and agents.emails == [("bob", "hi")]


def test_decisions_that_do_not_name_the_nested_ids_are_refused_before_anything_runs():
    from agcore_sync import ApprovalDecisionError

    agents = Agents(**PAUSING)
    with parent_session(agents) as session:
        session.submit_turn("Email bob")
        with pytest.raises(ApprovalDecisionError):
            session.resume_turn({"a1": Approve()})
        assert session.pending_approvals[0].tool_call_id == "a1/m1/e1"
        session.cancel_pending("changed my mind")
        assert session.turn_index == 1 and agents.emails == []


def test_a_loop_that_cannot_pause_gets_the_sub_agents_approval_need_as_a_tool_error():
    agents = Agents(parent=[], middle=PAUSING["middle"] + [MockProvider.text("It needs approval.")],
                    inner=PAUSING["inner"])
    provider = MockProvider([MockProvider.tool_calls(("a1", "assistant", {"input": "email bob"})),
                             MockProvider.text("Could not.")])
    cycle_session = AgentSession(provider, CONFIG)
    with ToolRegistry() as registry:
        registry.register(agent_tool(agents.middle, name="assistant", description="Runs errands."))
        loop = ToolLoop(cycle_session._cycle, registry, pausable=False)
        assert loop.run("Email bob").message.text == "Could not."
    # The middle agent's loop could pause, so it did; the top loop could not: an error result, nothing sent.
    result = provider.requests[-1].messages[-1].content[0]
    assert result.is_error and "cannot pause" in result.content and agents.emails == []


def test_approvals_nested_two_deep_resume_in_another_process_from_a_store(tmp_path):
    path = str(tmp_path / "sessions.db")
    agents = Agents(**PAUSING)
    store = SqliteSessionStore(path)
    with parent_session(agents) as session:
        session.submit_turn("Email bob")
        session.save(store, "s1")
    store.close()
    done = subprocess.run([sys.executable, str(CHILD), path, "s1"], capture_output=True, text=True,
                          cwd=str(ROOT), timeout=60, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["pending"] == [{"tool_call_id": "a1/m1/e1", "tool_name": "send_email",
                               "arguments": {"to": "bob", "body": "hi"}}]
    assert out["answer"] == "All done: the email went out."
    assert out["emails"] == [["bob", "hi"]]
    # The inner agent's history came back from the store: its user message, its call, the approved result.
    sent = out["inner_sent"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    assert out["pending_after"] == []
    assert out["usage"]["requests"] == 6 and out["usage"]["tool_calls"] == 3
    assert out["usage_by_agent"]["assistant/mailer"]["requests"] == 2
    store = SqliteSessionStore(path)
    try:
        loaded = AgentSession.load(store, "s1", provider=MockProvider())
        assert loaded.turn_index == 1 and loaded.messages()[-1].text == "All done: the email went out."
    finally:
        store.close()


def _walk_inner_requests(data):
    """Yield every saved ``requests`` list of the paused turn and of its sub-agents' saved turns."""
    paused = data["paused_turn"]
    yield paused["requests"]
    for entry in (paused.get("subagents") or {}).get("waiting", {}).values():
        yield entry["requests"]
        yield from _walk_inner_requests(entry["state"])


@pytest.mark.parametrize("level", [0, 1, 2, 3, 4])
def test_a_saved_nested_pause_whose_shown_and_run_calls_disagree_is_refused_on_load(level):
    """What the human approves must be what runs, at every level of a nested pause (issue 21, item 5)."""
    from agcore_sync import AgentError

    agents = Agents(**PAUSING)
    with parent_session(agents) as session:
        session.submit_turn("Email bob")
        data = json.loads(json.dumps(session.to_dict()))
    saved = [requests for requests in _walk_inner_requests(data) if requests]
    assert len(saved) == 5  # parent, its entry for a1, the middle's turn, its entry for m1, the inner turn
    saved[level][0]["arguments"] = {"to": "mallory", "body": "hi"}
    with pytest.raises(AgentError):
        AgentSession.from_dict(data, provider=MockProvider([]))
