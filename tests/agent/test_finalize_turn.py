"""finalize_turn: ends only the streamed turn still open, never counts a turn twice, records hand-built turns once."""

from __future__ import annotations

import threading

import pytest

from agcore_sync.agent.errors import SlotReadonlyError
from agcore_sync.agent.session import AgentSession
from agcore_sync.hooks import HookEvent, Hooks
from agcore_sync.llm.events import MessageComplete, StreamEvent, TextDelta
from agcore_sync.llm.mock import MockProvider
from agcore_sync.llm.partial import PartialMessageResponse
from agcore_sync.llm.types import Message, MessageResponse, Usage
from agcore_sync.loop.cycle import CycleConfig
from agcore_sync.tools.function import tool

#: Bound on every wait for something that must happen.
WAIT = 5.0


def tool_turn():
    """A two-round turn: add(1, 2), then the answer; 15 + 5 prompt and 2 + 1 completion tokens."""
    return [MockProvider.tool_calls(("add", {"a": 1, "b": 2}), usage=Usage(15, 2)),
            MockProvider.text("3", usage=Usage(5, 1))]


def new_session(registry, script):
    hooks = Hooks()
    ended = []
    hooks.on(HookEvent.ON_TURN_END, lambda ctx: ended.append(ctx.turn_index))
    return AgentSession(MockProvider(script), CycleConfig(), registry, hooks=hooks), ended


def state(session, ended):
    return session.turn_index, session.cost_so_far, session.messages(), list(ended)


def seed_style(stream):
    """The seed's consumer: keep the last MessageComplete's response while iterating."""
    response = None
    for event in stream:
        if isinstance(event, MessageComplete):
            response = event.full_response
    return response


def copy_of(response: MessageResponse) -> MessageResponse:
    return MessageResponse.from_dict(response.to_dict())


def rebuilt(events):
    partial = PartialMessageResponse()
    for event in events:
        if not isinstance(event, MessageComplete):
            partial.apply(event)
    return partial.finalize()


# -- seed-style code after an exhausted stream --------------------------------------------------------------------


@pytest.mark.parametrize("how", ["the same object", "an equal copy", "an earlier round's response"])
def test_seed_style_finalize_after_the_loop_does_not_count_the_turn_twice(registry, how):
    session, ended = new_session(registry, tool_turn())
    stream = session.submit_turn_stream("what is 1 + 2?")
    events = list(stream)
    last = seed_style(iter(events))
    assert last is stream.final_response
    after_stream = state(session, ended)
    assert after_stream[:2] == (1, Usage(20, 3)) and after_stream[3] == [0] and len(after_stream[2]) == 4
    first = next(e.full_response for e in events if isinstance(e, MessageComplete))
    response = {"the same object": last, "an equal copy": copy_of(last), "an earlier round's response": first}[how]
    for _ in range(3):
        session.finalize_turn(response)
        session.finalize_turn(response, [Message.user("what is 1 + 2?"), response.message])
    assert state(session, ended) == after_stream


def test_finalize_with_a_response_rebuilt_from_the_events_is_harmless_too(registry):
    session, ended = new_session(registry, [MockProvider.text("hello there", usage=Usage(3, 2))])
    events = list(session.submit_turn_stream("hi"))
    before = state(session, ended)
    session.finalize_turn(rebuilt(events))
    assert state(session, ended) == before


def test_finalize_after_a_closed_stream_does_nothing(registry):
    session, ended = new_session(registry, tool_turn())
    stream = session.submit_turn_stream("go")
    response = None
    for event in stream:
        if isinstance(event, MessageComplete):
            response = event.full_response
            stream.close()
    assert response is not None and stream.closed
    before = state(session, ended)
    assert before[0] == 1 and before[3] == [0]
    session.finalize_turn(response)
    session.finalize_turn(copy_of(response))
    assert state(session, ended) == before


# -- the streamed turn that is still open ---------------------------------------------------------------------------


def test_finalize_on_an_open_streamed_turn_ends_it_once(registry):
    session, ended = new_session(registry, [MockProvider.text("never read", usage=Usage(4, 4))])
    stream = session.submit_turn_stream("go")
    stream.worker.join(WAIT)  # the worker has done everything; nothing was read
    assert not stream.worker.is_alive() and session.turn_index == 0
    argument = MockProvider.text("whatever", usage=Usage(100, 100))
    session.finalize_turn(argument)
    assert stream.closed
    assert list(stream) == []
    after = state(session, ended)
    assert after[0] == 1 and after[3] == [0]
    assert after[1] == Usage(4, 4)  # the stream's own usage, not the argument's
    session.finalize_turn(argument)  # the same call again: that turn has ended
    session.finalize_turn(stream.final_response)
    assert state(session, ended) == after


def test_finalize_from_inside_the_consumers_loop_ends_the_turn_and_the_iteration(registry):
    session, ended = new_session(registry, [MockProvider.text("a long answer in pieces", usage=Usage(2, 5))])
    stream = session.submit_turn_stream("go")
    seen = []
    for event in stream:
        seen.append(event)
        if isinstance(event, TextDelta):
            session.finalize_turn(stream.final_response or MockProvider.text("x"))
    assert sum(isinstance(e, TextDelta) for e in seen) == 1
    assert session.turn_index == 1 and ended == [0]
    assert session.messages()[0] == Message.user("go")


def test_finalize_from_another_thread_while_the_consumer_waits_ends_the_turn_in_the_consumers_thread(registry):
    entered, release = threading.Event(), threading.Event()

    @tool
    def held() -> str:
        """Wait to be released."""
        entered.set()
        release.wait(WAIT)
        return "released"

    registry.register(held)
    session, ended = new_session(registry, [MockProvider.tool_calls(("held", {})), MockProvider.text("done")])
    stream = session.submit_turn_stream("go")
    events: list = []
    consumer = threading.Thread(target=lambda: events.extend(stream), name="test-consumer")
    consumer.start()
    try:
        assert entered.wait(WAIT)
        session.finalize_turn(MockProvider.text("x"))
    finally:
        release.set()
    consumer.join(WAIT)
    assert not consumer.is_alive()
    stream.worker.join(WAIT)
    assert session.turn_index == 1 and ended == [0]
    assert all(isinstance(e, StreamEvent) for e in events)


# -- turns built by hand ---------------------------------------------------------------------------------------------


def test_a_hand_built_turn_is_recorded_once_however_often_finalize_is_called(registry):
    session, ended = new_session(registry, [])
    response = MockProvider.text("made elsewhere", usage=Usage(7, 3))
    turn = [Message.user("question"), response.message]
    for _ in range(3):
        session.finalize_turn(response, turn)
        session.finalize_turn(copy_of(response), turn)
    assert state(session, ended) == (1, Usage(7, 3), turn, [0])


def test_a_hand_built_turn_without_messages_appends_the_answer_only(registry):
    session, ended = new_session(registry, [])
    response = MockProvider.text("answer", usage=Usage(1, 1))
    session.finalize_turn(response)
    assert state(session, ended) == (1, Usage(1, 1), [response.message], [0])


def test_a_hand_built_turn_after_a_streamed_turn_is_recorded(registry):
    session, ended = new_session(registry, [MockProvider.text("streamed", usage=Usage(2, 2))])
    list(session.submit_turn_stream("one"))
    by_hand = MockProvider.text("by hand", usage=Usage(3, 3))
    session.finalize_turn(by_hand, [Message.user("two"), by_hand.message])
    session.finalize_turn(by_hand)
    assert session.turn_index == 2 and ended == [0, 1]
    assert session.cost_so_far == Usage(5, 5)
    assert [m.text for m in session.messages()] == ["one", "streamed", "two", "by hand"]


def test_a_hand_built_turn_into_a_readonly_slot_raises_and_changes_nothing(registry):
    session, ended = new_session(registry, [])
    session.create_slot("archive", readonly=True)
    session.switch_slot("archive")
    with pytest.raises(SlotReadonlyError):
        session.finalize_turn(MockProvider.text("x", usage=Usage(1, 1)))
    assert state(session, ended) == (0, Usage(), [], [])
    session.switch_slot("default")
    session.finalize_turn(MockProvider.text("y", usage=Usage(1, 1)))
    assert session.turn_index == 1


# -- DESIGN "Round 5 / Trust": the settled rules -------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_any_round_of_an_earlier_turn_passed_again_as_the_same_object_does_nothing(registry, stream):
    session, ended = new_session(registry, [*tool_turn(), MockProvider.text("later", usage=Usage(1, 1))])
    if stream:
        events = list(session.submit_turn_stream("what is 1 + 2?"))
        first_round = next(e.full_response for e in events if isinstance(e, MessageComplete))
    else:
        session.submit_turn("what is 1 + 2?")
        first_round = session._ended._last[0]
    assert first_round.has_tool_calls  # the first round of turn 0, not its answer
    session.submit_turn("and then?")  # turn 1 is the last turn now
    before = state(session, ended)
    session.finalize_turn(first_round)
    session.finalize_turn(first_round, [Message.user("x"), first_round.message])
    assert state(session, ended) == before


def test_an_equal_copy_of_an_older_turns_response_is_a_turn_made_by_hand(registry):
    session, ended = new_session(registry, [MockProvider.text("one", usage=Usage(1, 1)),
                                            MockProvider.text("two", usage=Usage(1, 1))])
    old = session.submit_turn("first")
    session.submit_turn("second")
    session.finalize_turn(copy_of(old))  # an equal copy matches the last turn's responses only
    assert session.turn_index == 3 and ended == [0, 1, 2]
    session.finalize_turn(copy_of(old))  # and the copy now names that recorded turn: once
    assert session.turn_index == 3
