"""Paused turns: a round's calls that need a human pause the turn; resume_turn goes on, in any process."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agcore_sync import (
    AgentError,
    AgentSession,
    ApprovalDecisionError,
    ApprovalRequired,
    Approve,
    CompactConfig,
    CycleConfig,
    Defer,
    Deny,
    Error,
    HookEvent,
    Hooks,
    MaxToolTurnsExceeded,
    Message,
    MessageStart,
    MockProvider,
    ToolApprovalRequest,
    ToolError,
    ToolExecutionCompleted,
    ToolExecutionStarted,
    ToolRegistry,
    TurnNotPausedError,
    TurnPausedError,
    Usage,
    tool,
)
from agcore_sync.llm.partial import PartialMessageResponse

CHILD = Path(__file__).with_name("resume_child.py")
ROOT = Path(__file__).resolve().parents[2]
CONFIG = CycleConfig(retry=None, tool_timeout_secs=None)
#: Bound on every wait for something that must happen.
WAIT = 5.0


class Counter:
    """Tools that count their executions: ``send_email`` needs approval, ``lookup`` does not."""

    def __init__(self):
        self.runs = []
        counter = self

        @tool(requires_approval=True)
        def send_email(to: str) -> str:
            """Send an email."""
            counter.runs.append(("send_email", to))
            return f"sent to {to}"

        @tool
        def lookup(name: str) -> str:
            """Look a name up."""
            counter.runs.append(("lookup", name))
            return f"{name}@example.com"

        self.tools = [send_email, lookup]

    def count(self, name, arg=None):
        return sum(1 for tool_name, value in self.runs if tool_name == name and arg in (None, value))


@pytest.fixture
def tools():
    counter = Counter()
    with ToolRegistry() as registry:
        registry.register_all(counter.tools)
        counter.registry = registry
        yield counter


def mixed_round(usage=Usage(20, 10)):
    """One call that needs approval (c1) and one that does not (c2)."""
    return MockProvider.tool_calls(("c1", "send_email", {"to": "ada@example.com"}), ("c2", "lookup", {"name": "ada"}),
                                   usage=usage)


def counting_hooks():
    hooks = Hooks()
    fired = []
    for event in HookEvent:
        hooks.on(event, lambda ctx: fired.append((ctx.event, ctx.tool_call_id, ctx.turn_index)))
    return hooks, fired


def count(fired, event, call_id=None):
    return sum(1 for e, c, _ in fired if e is event and (call_id is None or c == call_id))


def tool_results(request):
    """``{tool_use_id: (content, is_error)}`` of every tool result a request carried."""
    return {block.tool_use_id: (block.content, block.is_error)
            for message in request.messages for block in message.content if block.type == "tool_result"}


# -- pausing ----------------------------------------------------------------------------------------------------


def test_the_other_call_runs_once_before_the_pause_and_the_approved_one_once_after(tools):
    provider = MockProvider([mixed_round(), MockProvider.text("Invited Ada.")])
    session = AgentSession(provider, CONFIG, tools.registry)

    paused_response = session.submit_turn("Invite Ada.")

    assert paused_response.has_tool_calls  # submit_turn returns the response whose calls wait
    assert session.pending_approvals == (ToolApprovalRequest("c1", "send_email", {"to": "ada@example.com"}),)
    assert tools.runs == [("lookup", "ada")]
    assert len(provider.requests) == 1

    answer = session.resume_turn({"c1": Approve()})

    assert answer.message.text == "Invited Ada."
    assert tools.count("send_email") == 1 and tools.count("lookup") == 1
    assert session.pending_approvals == ()
    # The user message was sent once; the round's results went back in call order.
    resumed_request = provider.requests[1]
    assert [m.text for m in resumed_request.messages if m.role.value == "user"] == ["Invite Ada."]
    assert list(tool_results(resumed_request)) == ["c1", "c2"]
    assert tool_results(resumed_request)["c1"] == ("sent to ada@example.com", False)


def test_a_streamed_turn_ends_with_approval_required_after_the_other_calls_completed(tools):
    provider = MockProvider([mixed_round(), MockProvider.text("Invited Ada.")])
    session = AgentSession(provider, CONFIG, tools.registry)

    with session.submit_turn_stream("Invite Ada.") as stream:
        events = list(stream)

    tail = events[events.index(next(e for e in events if e.type == "message_complete")) + 1:]
    assert [type(e) for e in tail] == [ToolExecutionStarted, ToolExecutionStarted, ToolExecutionCompleted,
                                       ApprovalRequired]
    assert tail[2].tool_call_id == "c2"
    assert tail[-1].requests == session.pending_approvals == stream.pending_approvals
    assert stream.new_messages == () and stream.final_response.has_tool_calls
    assert stream.worker.is_alive() is False  # nothing waits for the human
    assert tools.runs == [("lookup", "ada")]

    with session.resume_turn_stream({"c1": Approve()}) as resumed:
        more = list(resumed)

    started = [e for e in more if isinstance(e, ToolExecutionStarted)]
    completed = [e for e in more if isinstance(e, ToolExecutionCompleted)]
    assert [e.tool_call_id for e in started] == [e.tool_call_id for e in completed] == ["c1"]
    assert more.index(completed[0]) < more.index(next(e for e in more if isinstance(e, MessageStart)))
    assert not any(isinstance(e, (ApprovalRequired, Error)) for e in more)
    assert tools.count("send_email") == 1 and tools.count("lookup") == 1
    assert resumed.new_messages[0] == Message.user("Invite Ada.")
    assert resumed.new_messages == tuple(session.messages())
    assert resumed.worker.is_alive() is False


@pytest.mark.parametrize("first", ["plain", "stream"])
@pytest.mark.parametrize("then", ["plain", "stream"])
def test_a_turn_paused_one_way_resumes_the_other_way(tools, first, then):
    provider = MockProvider([mixed_round(), MockProvider.text("Done.")])
    session = AgentSession(provider, CONFIG, tools.registry)
    if first == "plain":
        session.submit_turn("Invite Ada.")
    else:
        assert isinstance(list(session.submit_turn_stream("Invite Ada."))[-1], ApprovalRequired)
    data = json.loads(json.dumps(session.to_dict()))
    again = AgentSession.from_dict(data, provider=provider, registry=tools.registry)
    if then == "plain":
        answer = again.resume_turn({"c1": Deny("Ada is on holiday")})
    else:
        stream = again.resume_turn_stream({"c1": Deny("Ada is on holiday")})
        list(stream)
        answer = stream.final_response
    assert answer.message.text == "Done."
    assert tools.count("send_email") == 0 and tools.count("lookup") == 1
    content, is_error = tool_results(provider.requests[1])["c1"]
    assert is_error and "Ada is on holiday" in content
    assert again.turn_index == 1


def test_a_paused_turn_survives_json_into_a_fresh_session_and_resumes_with_each_decision(tools):
    first = MockProvider([MockProvider.tool_calls(("c1", "send_email", {"to": "ada@example.com"}),
                                                  ("c2", "lookup", {"name": "ada"}),
                                                  ("c3", "send_email", {"to": "all@example.com"}))])
    session = AgentSession(first, CONFIG, tools.registry, system_prompt="Be careful.")
    session.submit_turn("Invite Ada and everyone.")
    data = json.loads(json.dumps(session.to_dict()))
    assert data["format_version"] == 2 and data["paused_turn"] is not None

    second = MockProvider([MockProvider.text("Invited Ada only.")])
    fresh = Counter()
    with ToolRegistry() as registry:
        registry.register_all(fresh.tools)
        restored = AgentSession.from_dict(data, provider=second, registry=registry)
        assert [r.tool_call_id for r in restored.pending_approvals] == ["c1", "c3"]
        restored.resume_turn({"c3": Deny("not everyone"), "c1": Approve()})

    assert fresh.runs == [("send_email", "ada@example.com")]  # the settled lookup is not run again
    results = tool_results(second.requests[0])
    assert results["c1"] == ("sent to ada@example.com", False)
    assert results["c2"] == ("ada@example.com", False)
    assert results["c3"][1] is True and "not everyone" in results["c3"][0]
    assert second.requests[0].system == "Be careful."


def test_a_paused_turn_resumes_in_another_process(tools):
    provider = MockProvider([MockProvider.tool_calls(("c1", "send_email", {"to": "ada@example.com"}),
                                                     ("c2", "lookup", {"name": "ada"}),
                                                     ("c3", "send_email", {"to": "all@example.com"}),
                                                     usage=Usage(20, 10))])
    session = AgentSession(provider, CONFIG, tools.registry)
    session.submit_turn("Invite Ada and everyone.")
    payload = json.dumps({"session": session.to_dict(),
                          "decisions": {"c1": "approve", "c3": "deny:the user said no"}})

    done = subprocess.run([sys.executable, str(CHILD)], input=payload, capture_output=True, text=True,
                          cwd=str(ROOT), timeout=60, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})

    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["pending_before"] == ["c1", "c3"] and out["pending_after"] == []
    assert out["runs"] == ["ada@example.com"]
    assert out["answer"] == "Done." and out["turn_index"] == 1
    sent = [Message.from_dict(m) for m in out["sent"]]
    results = {b.tool_use_id: (b.content, b.is_error) for m in sent for b in m.content if b.type == "tool_result"}
    assert results["c1"] == ("sent to ada@example.com", False)
    assert results["c3"][1] is True and "the user said no" in results["c3"][0]
    # The paused round's usage travelled with the session and was counted once, with the child's answer.
    assert Usage.from_dict(out["cost_so_far"]) == Usage(20, 10) + MockProvider.text("Done.").usage
    assert tools.count("send_email") == 0  # nothing ran twice: the parent never ran it


def test_a_turn_can_pause_twice_and_still_counts_once(tools):
    hooks, fired = counting_hooks()
    provider = MockProvider([
        mixed_round(usage=Usage(20, 10)),
        MockProvider.tool_calls(("c3", "send_email", {"to": "bob@example.com"}), usage=Usage(30, 10)),
        MockProvider.text("Both invited.", usage=Usage(40, 5)),
    ])
    session = AgentSession(provider, CONFIG, tools.registry, hooks=hooks)

    session.submit_turn("Invite Ada, then Bob.")
    assert [r.tool_call_id for r in session.pending_approvals] == ["c1"]
    stream = session.resume_turn_stream({"c1": Approve()})
    events = list(stream)
    assert isinstance(events[-1], ApprovalRequired) and events[-1].requests[0].tool_call_id == "c3"
    assert session.turn_index == 0 and session.cost_so_far == Usage()
    assert count(fired, HookEvent.ON_TURN_END) == 0

    session.resume_turn({"c3": Approve()})

    assert tools.count("send_email") == 2 and tools.count("lookup") == 1
    assert session.turn_index == 1
    assert session.cost_so_far == Usage(90, 25)
    assert count(fired, HookEvent.ON_TURN_START) == 1 and count(fired, HookEvent.ON_TURN_END) == 1
    assert {turn for _, _, turn in fired} == {0}  # every hook of the turn saw the same index
    # The decided calls did not pass PRE_TOOL_USE again.
    assert count(fired, HookEvent.PRE_TOOL_USE, "c1") == 1 and count(fired, HookEvent.PRE_TOOL_USE, "c3") == 1
    assert count(fired, HookEvent.POST_TOOL_USE) == 3
    kinds = [m.role.value for m in session.messages()]
    assert kinds == ["user", "assistant", "tool", "tool", "assistant", "tool", "assistant"]


def test_a_defer_from_a_hook_pauses_a_call_and_the_decided_call_skips_the_hook(tools):
    hooks, fired = counting_hooks()
    hooks.on(HookEvent.PRE_TOOL_USE, lambda ctx: Defer() if ctx.tool_name == "lookup" else None)
    provider = MockProvider([MockProvider.tool_calls(("c1", "lookup", {"name": "ada"})), MockProvider.text("ok")])
    session = AgentSession(provider, CONFIG, tools.registry, hooks=hooks)

    session.submit_turn("Find Ada.")
    assert session.pending_approvals == (ToolApprovalRequest("c1", "lookup", {"name": "ada"}),)
    assert tools.runs == []
    session.resume_turn({"c1": Approve()})

    assert tools.runs == [("lookup", "ada")]
    assert count(fired, HookEvent.PRE_TOOL_USE, "c1") == 1
    assert count(fired, HookEvent.ON_TURN_START) == 1 and count(fired, HookEvent.ON_TURN_END) == 1


def test_a_hook_may_approve_or_deny_a_call_that_needs_approval_without_a_pause(tools):
    hooks = Hooks()
    hooks.on(HookEvent.PRE_TOOL_USE,
             lambda ctx: Approve() if ctx.arguments.get("to") == "ada@example.com" else Deny("not that one"))
    provider = MockProvider([
        MockProvider.tool_calls(("c1", "send_email", {"to": "ada@example.com"}),
                                ("c2", "send_email", {"to": "all@example.com"})),
        MockProvider.text("ok"),
    ])
    session = AgentSession(provider, CONFIG, tools.registry, hooks=hooks)
    session.submit_turn("Invite.")
    assert session.pending_approvals == () and session.turn_index == 1
    assert tools.runs == [("send_email", "ada@example.com")]
    assert tool_results(provider.requests[1])["c2"][1] is True


# -- usage, max_tool_turns, compaction --------------------------------------------------------------------------


def test_usage_and_turn_index_are_counted_once_when_the_paused_turn_ends(tools):
    provider = MockProvider([mixed_round(usage=Usage(20, 10)), MockProvider.text("ok", usage=Usage(5, 1))])
    session = AgentSession(provider, CONFIG, tools.registry)
    session.submit_turn("Invite Ada.")
    assert session.cost_so_far == Usage() and session.turn_index == 0
    answer = session.resume_turn({"c1": Approve()})
    assert session.cost_so_far == Usage(25, 11) and session.turn_index == 1
    session.finalize_turn(answer)  # the seed's call after the loop: a no-op on an ended turn
    assert session.cost_so_far == Usage(25, 11) and session.turn_index == 1


def test_finalize_turn_with_the_paused_response_keeps_the_turn_paused(tools):
    provider = MockProvider([mixed_round(), MockProvider.text("ok")])
    session = AgentSession(provider, CONFIG, tools.registry)
    stream = session.submit_turn_stream("Invite Ada.")
    list(stream)
    session.finalize_turn(stream.final_response)  # seed-style code after the loop
    assert session.turn_index == 0 and len(session.pending_approvals) == 1
    with pytest.raises(TurnPausedError):
        session.finalize_turn(MockProvider.text("made by hand"))


def test_max_tool_turns_counts_provider_calls_across_the_pause(tools):
    config = CycleConfig(retry=None, tool_timeout_secs=None, max_tool_turns=1)
    provider = MockProvider([mixed_round()])
    session = AgentSession(provider, config, tools.registry)
    session.submit_turn("Invite Ada.")
    with pytest.raises(MaxToolTurnsExceeded):
        session.resume_turn({"c1": Approve()})
    # The tools of the last allowed response still ran; the turn ended, keeping that round.
    assert tools.count("send_email") == 1 and len(provider.requests) == 1
    assert session.turn_index == 1 and session.pending_approvals == ()
    assert [m.role.value for m in session.messages()] == ["user", "assistant", "tool", "tool"]


def test_compaction_never_splits_the_paused_assistant_message_from_its_results(tools):
    history = [Message.user("old question " * 20), Message.assistant("old answer " * 20)] * 3
    compact = CompactConfig(max_context_tokens=250, keep_last_messages=2)
    provider = MockProvider([mixed_round(), MockProvider.text("ok")])
    session = AgentSession(provider, CONFIG, tools.registry, compact=compact)
    session.create_slot("long", messages=history)
    session.switch_slot("long")
    session.submit_turn("Invite Ada.")
    session.resume_turn({"c1": Approve()})
    sent = provider.requests[1].messages
    assert len(sent) < len(history) + 4  # compaction did drop old messages
    uses = [b.id for m in sent for b in m.content if b.type == "tool_use"]
    answered = [b.tool_use_id for m in sent for b in m.content if b.type == "tool_result"]
    assert uses == answered == ["c1", "c2"]
    assert session.current_slot == "long" and session.messages()[-1].text == "ok"


# -- while paused ------------------------------------------------------------------------------------------------


def test_a_new_turn_while_paused_is_a_clear_error_and_changes_nothing(tools):
    hooks, fired = counting_hooks()
    provider = MockProvider([mixed_round()])
    session = AgentSession(provider, CONFIG, tools.registry, hooks=hooks)
    session.submit_turn("Invite Ada.")
    before = json.dumps(session.to_dict())

    for start in (lambda: session.submit_turn("again"), lambda: session.submit_turn_stream("again"),
                  lambda: session.switch_slot("default")):
        with pytest.raises(TurnPausedError, match=r"resume_turn\(decisions\) or cancel_pending\(\)") as info:
            start()
        assert info.value.pending_ids == ("c1",)
        assert isinstance(info.value, AgentError)

    assert json.dumps(session.to_dict()) == before
    assert count(fired, HookEvent.ON_TURN_START) == 1 and len(provider.requests) == 1


def test_cancel_pending_ends_the_turn_once_with_cancelled_results(tools):
    hooks, fired = counting_hooks()
    provider = MockProvider([mixed_round(usage=Usage(20, 10)), MockProvider.text("Hello again.")])
    session = AgentSession(provider, CONFIG, tools.registry, hooks=hooks)
    session.submit_turn("Invite Ada.")

    session.cancel_pending("the user changed their mind")

    assert len(provider.requests) == 1  # the model is not asked again
    assert session.pending_approvals == () and session.turn_index == 1
    assert session.cost_so_far == Usage(20, 10)
    assert count(fired, HookEvent.ON_TURN_END) == 1
    assert tools.count("send_email") == 0
    results = {b.tool_use_id: (b.content, b.is_error) for m in session.messages() for b in m.content
               if b.type == "tool_result"}
    assert results["c2"] == ("ada@example.com", False)
    assert results["c1"][1] is True and "cancelled" in results["c1"][0]
    assert "the user changed their mind" in results["c1"][0]
    # The next turn works and sends a valid history (every call answered).
    session.submit_turn("Hello?")
    assert list(tool_results(provider.requests[1])) == ["c1", "c2"]
    with pytest.raises(TurnNotPausedError):
        session.cancel_pending()


@pytest.mark.parametrize("decisions, message", [
    ({"c1": Approve(), "zz": Approve()}, r"do not wait: \['zz'\]"),
    ({}, r"no decision for calls \['c1'\]"),
    ({"c1": True}, r"Approve\(\) or Deny\(reason\)"),
    ([("c1", Approve())], "must be a dict"),
])
def test_decisions_that_do_not_match_are_an_error_and_change_nothing(tools, decisions, message):
    provider = MockProvider([mixed_round(), MockProvider.text("ok")])
    session = AgentSession(provider, CONFIG, tools.registry)
    session.submit_turn("Invite Ada.")
    before = json.dumps(session.to_dict())

    with pytest.raises(ApprovalDecisionError, match=message) as info:
        session.resume_turn(decisions)
    assert isinstance(info.value, ValueError) and isinstance(info.value, AgentError)
    assert "turn 0 waits for calls ['c1']" in str(info.value)
    with pytest.raises(ApprovalDecisionError):
        session.resume_turn_stream(decisions)

    assert json.dumps(session.to_dict()) == before
    assert tools.count("send_email") == 0 and len(provider.requests) == 1
    session.resume_turn({"c1": Approve()})  # still resumable
    assert session.turn_index == 1


def test_resuming_a_session_with_no_paused_turn_is_a_clear_error(tools):
    session = AgentSession(MockProvider([MockProvider.text("hi")]), CONFIG, tools.registry)
    for call in (lambda: session.resume_turn({}), lambda: session.resume_turn_stream({}), session.cancel_pending):
        with pytest.raises(TurnNotPausedError, match="no turn of this session is paused"):
            call()
    session.submit_turn("hi")
    with pytest.raises(TurnNotPausedError):
        session.resume_turn({"c1": Approve()})
    assert session.turn_index == 1


def test_a_format_1_session_still_loads(tools):
    data = AgentSession(MockProvider([]), CONFIG, tools.registry).to_dict()
    data["format_version"] = 1
    del data["paused_turn"]
    session = AgentSession.from_dict(data, provider=MockProvider([MockProvider.text("hi")]), registry=tools.registry)
    assert session.pending_approvals == ()
    assert session.submit_turn("hi").message.text == "hi"


def test_a_resumed_turn_that_fails_ends_once(tools):
    hooks, fired = counting_hooks()
    provider = MockProvider([mixed_round(usage=Usage(20, 10)), RuntimeError("provider down")])
    session = AgentSession(provider, CONFIG, tools.registry, hooks=hooks)
    session.submit_turn("Invite Ada.")
    stream = session.resume_turn_stream({"c1": Approve()})
    events = list(stream)
    assert isinstance(events[-1], Error)
    assert session.turn_index == 1 and session.pending_approvals == ()
    assert session.cost_so_far == Usage(20, 10)
    assert count(fired, HookEvent.ON_TURN_END) == 1
    # The completed round is kept: its assistant message with both results.
    assert [m.role.value for m in session.messages()] == ["user", "assistant", "tool", "tool"]


def test_the_accumulator_ignores_approval_required_as_a_meta_event():
    partial = PartialMessageResponse()
    assert partial.apply(ApprovalRequired((ToolApprovalRequest("c1", "t", {}),))) is True


def test_requires_approval_must_be_a_bool():
    with pytest.raises(TypeError, match="requires_approval"):
        @tool(requires_approval="yes")
        def f() -> str:
            """F."""
            return ""


@pytest.mark.parametrize("error", [
    TurnPausedError("paused", ("c1", "c2")),
    ApprovalDecisionError("bad", unknown=["zz"], missing=["c1"]),
    TurnNotPausedError("nothing paused"),
], ids=lambda e: type(e).__name__)
def test_the_new_errors_pickle_with_their_facts(error):
    restored = pickle.loads(pickle.dumps(error))
    assert type(restored) is type(error) and str(restored) == str(error)
    for name in ("pending_ids", "unknown", "missing"):
        assert getattr(restored, name, None) == getattr(error, name, None)


def test_a_resumed_stream_closed_early_ends_the_turn_once_and_sends_nothing_more(tools):
    hooks, fired = counting_hooks()
    entered, release = threading.Event(), threading.Event()
    provider = MockProvider([mixed_round(usage=Usage(20, 10)), MockProvider.text("never sent")])
    session = AgentSession(provider, CONFIG, tools.registry, hooks=hooks)
    session.submit_turn("Invite Ada.")

    def hold(ctx):
        entered.set()
        release.wait(WAIT)

    # Hold the worker in the POST_TOOL_USE of the approved call, then close the stream.
    hooks.on(HookEvent.POST_TOOL_USE, hold)
    stream = session.resume_turn_stream({"c1": Approve()})
    assert entered.wait(WAIT)
    stream.close()
    release.set()
    stream.worker.join(WAIT)
    assert not stream.worker.is_alive()
    assert session.turn_index == 1 and session.pending_approvals == ()
    assert count(fired, HookEvent.ON_TURN_END) == 1
    assert session.cost_so_far == Usage(20, 10)
    assert len(provider.requests) == 1 and tools.count("send_email") == 1


def test_an_unrecoverable_failure_in_a_pausing_round_ends_the_turn_and_closes_every_started_call(tools):
    @tool
    def broken() -> str:
        """Fail beyond repair."""
        raise ToolError("the disk is gone", recoverable=False)

    tools.registry.register(broken)
    provider = MockProvider([MockProvider.tool_calls(("c1", "send_email", {"to": "ada@example.com"}),
                                                     ("c2", "broken", {}))])
    session = AgentSession(provider, CONFIG, tools.registry)
    events = list(session.submit_turn_stream("Go."))

    assert isinstance(events[-1], Error) and "the disk is gone" in events[-1].message
    started = [e.tool_call_id for e in events if isinstance(e, ToolExecutionStarted)]
    completed = [e.tool_call_id for e in events if isinstance(e, ToolExecutionCompleted)]
    assert sorted(started) == sorted(completed) == ["c1", "c2"]
    assert not any(isinstance(e, ApprovalRequired) for e in events)
    assert session.pending_approvals == () and session.turn_index == 1
    assert tools.count("send_email") == 0
