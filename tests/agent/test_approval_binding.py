"""What a human approves is what runs: paused turns that disagree are refused, shared call ids are split.

DESIGN.md "Round 5 / Trust": a paused turn's pending requests must agree
with the assistant message's tool calls (id, name, arguments), else
``from_dict``/``load`` refuses it; tool calls sharing an id within one
response get distinct ids in the loop, for every provider, rewritten in the
assistant message the session keeps.
"""

from __future__ import annotations

import copy

import pytest

from agcore_sync import (
    AgentError,
    AgentSession,
    Approve,
    CycleConfig,
    Deny,
    Message,
    MockProvider,
    SessionStoreError,
    ToolRegistry,
    ToolUseBlock,
    tool,
)
from agcore_sync.agent.sqlite_store import SqliteSessionStore
from agcore_sync.llm.types import MessageResponse, Role, StopReason, Usage
from agcore_sync.loop.pause import PausedTurn, PausedTurnMismatch

CONFIG = CycleConfig(retry=None, tool_timeout_secs=None)


class Mailer:
    """``send_email`` needs approval and records every run; ``lookup`` does not."""

    def __init__(self):
        self.sent = []
        self.looked_up = []
        mailer = self

        @tool(requires_approval=True)
        def send_email(to: str) -> str:
            """Send an email."""
            mailer.sent.append(to)
            return f"sent to {to}"

        @tool(requires_approval=True)
        def delete_account(to: str) -> str:
            """Delete an account."""
            mailer.sent.append(("deleted", to))
            return "deleted"

        @tool
        def lookup(name: str) -> str:
            """Look a name up."""
            mailer.looked_up.append(name)
            return f"{name}@example.com"

        self.tools = [send_email, delete_account, lookup]


@pytest.fixture
def mailer():
    found = Mailer()
    with ToolRegistry() as registry:
        registry.register_all(found.tools)
        found.registry = registry
        yield found


def _paused_session(mailer, provider=None):
    provider = provider or MockProvider([MockProvider.tool_calls(("c1", "send_email", {"to": "ada@example.com"})),
                                         MockProvider.text("done")])
    session = AgentSession(provider, CONFIG, mailer.registry)
    session.submit_turn("Mail Ada.")
    assert [r.tool_call_id for r in session.pending_approvals] == ["c1"]
    return session, provider


def _assistant_call(saved):
    return saved["paused_turn"]["assistant"]["content"][0]


@pytest.mark.parametrize("tamper", ["arguments", "tool name", "extra call", "request id"])
def test_a_saved_paused_turn_whose_requests_disagree_with_its_calls_is_refused_on_load(mailer, tamper):
    session, provider = _paused_session(mailer)
    saved = copy.deepcopy(session.to_dict())
    if tamper == "arguments":
        _assistant_call(saved)["input"] = {"to": "mallory@example.com"}
    elif tamper == "tool name":
        _assistant_call(saved)["name"] = "delete_account"
    elif tamper == "extra call":
        saved["paused_turn"]["assistant"]["content"].append(
            {"type": "tool_use", "id": "c9", "name": "lookup", "input": {"name": "x"}})
    else:
        saved["paused_turn"]["requests"][0]["tool_call_id"] = "c2"

    with pytest.raises(AgentError, match="does not hold together"):
        AgentSession.from_dict(saved, provider=provider, registry=mailer.registry)
    assert mailer.sent == [] and mailer.looked_up == []


def test_a_tampered_paused_turn_in_a_store_is_a_store_error_and_nothing_runs(mailer, tmp_path):
    session, provider = _paused_session(mailer)
    saved = copy.deepcopy(session.to_dict())
    _assistant_call(saved)["input"] = {"to": "mallory@example.com"}
    with SqliteSessionStore(str(tmp_path / "s.db")) as store:
        store.save("s1", saved, None)
        with pytest.raises(SessionStoreError, match="does not hold together"):
            AgentSession.load(store, "s1", provider=provider, registry=mailer.registry)
    assert mailer.sent == []


def test_an_untampered_paused_turn_still_round_trips_and_runs_what_was_shown(mailer):
    session, provider = _paused_session(mailer)
    again = AgentSession.from_dict(session.to_dict(), provider=provider, registry=mailer.registry)
    again.resume_turn({"c1": Approve()})
    assert mailer.sent == ["ada@example.com"]


def test_a_paused_turn_cannot_even_be_built_with_a_request_the_calls_do_not_have(mailer):
    session, _ = _paused_session(mailer)
    paused = session._paused
    with pytest.raises(PausedTurnMismatch):
        PausedTurn(messages=paused.messages, assistant=paused.assistant, results=paused.results,
                   requests=[type(paused.requests[0])("c1", "send_email", {"to": "eve@example.com"})],
                   provider_calls=1, usage_by_model=paused.usage_by_model, final_response=paused.final_response)


def _shared_id_round():
    return MockProvider.tool_calls(("dup", "send_email", {"to": "ada@example.com"}),
                                   ("dup", "send_email", {"to": "bob@example.com"}))


def test_two_calls_sharing_an_id_wait_under_distinct_ids_and_one_approval_runs_one_call(mailer):
    provider = MockProvider([_shared_id_round(), MockProvider.text("done")])
    session = AgentSession(provider, CONFIG, mailer.registry)

    session.submit_turn("Mail both.")

    pending = session.pending_approvals
    ids = [request.tool_call_id for request in pending]
    assert len(ids) == 2 and len(set(ids)) == 2 and ids[0] == "dup"
    assert [request.arguments["to"] for request in pending] == ["ada@example.com", "bob@example.com"]
    session.resume_turn({ids[0]: Approve(), ids[1]: Deny("not Bob")})

    assert mailer.sent == ["ada@example.com"]
    # The assistant message the session keeps carries the same distinct ids, and one result each.
    kept = [m for m in session.messages() if m.role is Role.ASSISTANT and m.tool_uses][0]
    assert [call.id for call in kept.tool_uses] == ids
    results = [block.tool_use_id for m in session.messages() for block in m.content if block.type == "tool_result"]
    assert sorted(results) == sorted(ids)


@pytest.mark.parametrize("stream", [False, True])
def test_calls_sharing_an_id_run_once_each_with_their_own_result_streamed_or_not(mailer, stream):
    shared = MockProvider.tool_calls(("same", "lookup", {"name": "ada"}), ("same", "lookup", {"name": "bob"}),
                                     ("", "lookup", {"name": "cy"}))
    provider = MockProvider([shared, MockProvider.text("done")])
    session = AgentSession(provider, CONFIG, mailer.registry)

    if stream:
        with session.submit_turn_stream("Look them up.") as events:
            list(events)
    else:
        session.submit_turn("Look them up.")

    assert sorted(mailer.looked_up) == ["ada", "bob", "cy"]
    sent_back = provider.requests[1].messages
    calls = [call.id for m in sent_back for call in m.tool_uses]
    results = [block.tool_use_id for m in sent_back for block in m.content if block.type == "tool_result"]
    assert len(set(calls)) == 3 and calls[0] == "same" and all(calls)
    assert results == calls
    assert session.to_dict()  # the kept history is what went back to the model
    kept = [call.id for m in session.messages() for call in m.tool_uses]
    assert kept == calls


def test_a_response_whose_ids_are_distinct_is_kept_as_the_same_object(mailer):
    response = MockProvider.tool_calls(("a", "lookup", {"name": "ada"}))
    from agcore_sync.loop._results import runnable_calls

    assert runnable_calls(response) is response
    hand_made = MessageResponse("r", "m", Message(Role.ASSISTANT, [ToolUseBlock("x", "lookup", {}),
                                                                    ToolUseBlock("x", "lookup", {})]),
                                StopReason.TOOL_USE, Usage(1, 1))
    assert [c.id for c in runnable_calls(hand_made).message.tool_uses][0] == "x"
    assert len({c.id for c in runnable_calls(hand_made).message.tool_uses}) == 2
