"""Context slots: named histories, the current slot, readonly slots, and what a turn reads and writes."""

from __future__ import annotations

import json

import pytest

from agcore_sync.agent.errors import AgentError, SlotNotFoundError, SlotReadonlyError
from agcore_sync.agent.session import AgentSession
from agcore_sync.llm.mock import MockProvider
from agcore_sync.llm.types import Message
from agcore_sync.loop.cycle import CycleConfig


@pytest.fixture
def session():
    with AgentSession(MockProvider([]), CycleConfig()) as s:
        yield s


def test_a_session_starts_in_the_default_slot_with_an_empty_history(session):
    assert session.slots == ["default"]
    assert session.current_slot == "default"
    assert session.messages() == []


def test_created_slots_are_listed_and_switching_changes_what_messages_returns(session):
    session.create_slot("research", messages=[Message.user("seed")])
    session.create_slot("archive", readonly=True)
    assert session.slots == ["default", "research", "archive"]
    assert session.current_slot == "default"  # creating does not switch
    session.switch_slot("research")
    assert session.current_slot == "research" and session.messages() == [Message.user("seed")]
    session.switch_slot("archive")
    assert session.current_slot == "archive" and session.messages() == []


def test_switching_to_a_missing_slot_raises_slot_not_found_and_stays_put(session):
    with pytest.raises(SlotNotFoundError, match="nowhere") as caught:
        session.switch_slot("nowhere")
    assert isinstance(caught.value, AgentError)
    assert session.current_slot == "default"


def test_creating_a_slot_with_an_existing_name_raises_agent_error(session):
    session.create_slot("notes")
    with pytest.raises(AgentError, match="notes"):
        session.create_slot("notes")
    with pytest.raises(AgentError):
        session.create_slot("default")
    assert session.slots == ["default", "notes"]


def test_readonly_errors_are_agent_errors():
    assert issubclass(SlotReadonlyError, AgentError) and issubclass(SlotNotFoundError, AgentError)


def test_a_turn_reads_and_writes_the_current_slot_only():
    provider = MockProvider([MockProvider.text("in default"), MockProvider.text("in side"),
                             MockProvider.text("default again")])
    with AgentSession(provider, CycleConfig()) as session:
        session.submit_turn("first")
        session.create_slot("side", messages=[Message.user("side context")])
        session.switch_slot("side")
        list(session.submit_turn_stream("second"))
        assert [m.text for m in session.messages()] == ["side context", "second", "in side"]
        session.switch_slot("default")
        assert [m.text for m in session.messages()] == ["first", "in default"]
        session.submit_turn("third")
        assert [m.text for m in session.messages()] == ["first", "in default", "third", "default again"]
    # Each request was built from its slot's history alone.
    assert [[m.text for m in r.messages] for r in provider.requests] == [
        ["first"],
        ["side context", "second"],
        ["first", "in default", "third"],
    ]


def test_a_readonly_slot_can_be_read_but_a_turn_on_it_is_refused():
    provider = MockProvider([MockProvider.text("unused")])
    with AgentSession(provider, CycleConfig()) as session:
        session.create_slot("policy", readonly=True, messages=[Message.user("rule 1")])
        session.switch_slot("policy")
        assert session.messages() == [Message.user("rule 1")]
        with pytest.raises(SlotReadonlyError, match="policy"):
            session.submit_turn("change the rules")
        assert session.messages() == [Message.user("rule 1")]
        assert provider.requests == []


def test_slots_their_flags_and_the_current_slot_survive_json():
    provider = MockProvider([MockProvider.text("answer")])
    with AgentSession(provider, CycleConfig()) as session:
        session.create_slot("policy", readonly=True, messages=[Message.user("rule 1")])
        session.create_slot("work")
        session.switch_slot("work")
        session.submit_turn("task")
        data = json.loads(json.dumps(session.to_dict()))
    with AgentSession.from_dict(data, provider=MockProvider([])) as resumed:
        assert resumed.slots == ["default", "policy", "work"]
        assert resumed.current_slot == "work"
        assert [m.text for m in resumed.messages()] == ["task", "answer"]
        resumed.switch_slot("policy")
        assert resumed.messages() == [Message.user("rule 1")]
        with pytest.raises(SlotReadonlyError):
            resumed.submit_turn("no")
