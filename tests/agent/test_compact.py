"""Compaction: truncate and summarize, tool rounds kept whole, the system prompt kept, overflow refused."""

from __future__ import annotations

import itertools
import json
import math

import pytest

from agcore_sync.agent.compact import SUMMARY_PREFIX, CompactConfig
from agcore_sync.agent.session import AgentSession
from agcore_sync.errors import ContextOverflowError
from agcore_sync.llm.events import Error
from agcore_sync.llm.mock import MockProvider
from agcore_sync.llm.types import Message, MessageRequest, Role, ToolUseBlock
from agcore_sync.loop.cycle import CycleConfig, LlmCycle


def count_messages(request):
    """A token counter that makes each message one token: easy to reason about."""
    return len(request.messages)


def tool_round(call_ids, label):
    calls = tuple(ToolUseBlock(i, "add", {"a": 1, "b": 1}) for i in call_ids)
    return [Message("assistant", calls), *(Message.tool_result(i, f"{label}-{i}") for i in call_ids)]


HISTORY = [
    Message.user("u1"), Message.assistant("a1"),
    Message.user("u2"), *tool_round(["t1", "t2"], "r"), Message.assistant("a2"),
    Message.user("u3"), *tool_round(["t3"], "r"), Message.assistant("a3"),
    Message.user("u4"),
]

#: The lengths of the HISTORY suffixes that do not cut a tool round.
SUFFIXES = (0, 1, 2, 4, 5, 6, 9, 10, 11, 12)


def request_of(messages, system="You are terse."):
    return MessageRequest("m", tuple(messages), system=system)


def assert_tool_rounds_whole(messages):
    """Every tool_use has its results right after it, and every result its tool_use."""
    for i, message in enumerate(messages):
        if message.role is Role.TOOL:
            assert i > 0, "a tool result without its tool_use"
            owner = next(m for m in reversed(messages[:i]) if m.role is not Role.TOOL)
            assert message.content[0].tool_use_id in {b.id for b in owner.tool_uses}
        if message.tool_uses:
            following = list(itertools.takewhile(lambda m: m.role is Role.TOOL, messages[i + 1:]))
            assert {m.content[0].tool_use_id for m in following} == {b.id for b in message.tool_uses}


def test_a_request_under_the_limit_is_sent_as_it_is():
    request = request_of(HISTORY)
    assert CompactConfig(len(HISTORY), 2, token_counter=count_messages)(request) is request


def test_truncate_drops_the_oldest_messages_first_and_keeps_the_system_prompt():
    request = request_of(HISTORY)
    compacted = CompactConfig(6, keep_last_messages=2, token_counter=count_messages)(request)
    assert compacted.system == "You are terse."
    # Only as many as needed: the six newest fit.
    assert list(compacted.messages) == HISTORY[-6:]
    assert compacted.model == request.model


@pytest.mark.parametrize("keep", [0, 1, 2, 3, 5])
@pytest.mark.parametrize("limit", range(1, len(HISTORY) + 1))
def test_truncate_never_separates_a_tool_use_from_its_results_and_keeps_the_newest_messages(limit, keep):
    request = request_of(HISTORY)
    config = CompactConfig(limit, keep_last_messages=keep, token_counter=count_messages)
    protected = min(n for n in SUFFIXES if n >= keep)
    if protected > limit:  # the newest messages, with their whole tool rounds, do not fit
        with pytest.raises(ContextOverflowError):
            config(request)
        return
    compacted = config(request)
    messages = list(compacted.messages)
    assert len(messages) == max(n for n in SUFFIXES if n <= limit)  # drops no more than it must
    assert messages == HISTORY[len(HISTORY) - len(messages):]  # whole messages, oldest dropped first
    assert messages[-keep:] == HISTORY[-keep:] if keep else True
    assert_tool_rounds_whole(messages)
    assert compacted.system == request.system


def test_the_newest_messages_keep_their_whole_tool_round_even_past_keep_last_messages():
    history = [Message.user("u1"), Message.assistant("a1"), Message.user("u2"), *tool_round(["c1", "c2"], "r"),
               Message.user("u3")]
    # The newest three messages are r-c1, r-c2, u3; their tool_use comes with them.
    compacted = CompactConfig(4, keep_last_messages=3, token_counter=count_messages)(request_of(history))
    assert list(compacted.messages) == history[3:]
    with pytest.raises(ContextOverflowError, match="max_context_tokens=3"):
        CompactConfig(3, keep_last_messages=3, token_counter=count_messages)(request_of(history))


def test_the_default_token_count_is_a_quarter_of_the_requests_json_characters():
    request = request_of(HISTORY)
    estimate = math.ceil(len(json.dumps(request.to_dict(), ensure_ascii=False)) / 4)
    assert CompactConfig(estimate, 2)(request) is request
    assert len(CompactConfig(estimate - 1, 2)(request).messages) < len(HISTORY)


def test_the_system_prompt_is_counted_and_never_dropped():
    request = request_of([Message.user("hi")], system="x" * 4000)
    with pytest.raises(ContextOverflowError):
        CompactConfig(500, keep_last_messages=0)(request)


def test_an_unknown_strategy_is_refused():
    with pytest.raises(ValueError, match="strategy"):
        CompactConfig(100, 2, strategy="forget")


# -- in the loops ------------------------------------------------------------------------------------------------


def seeded_cycle(provider, compact, history=HISTORY):
    cycle = LlmCycle(provider, CycleConfig(), system_prompt="You are terse.", compact=compact)
    cycle.extend_messages(history)
    return cycle


def test_compaction_applies_before_every_provider_call_of_both_loops_and_leaves_the_history_alone(registry):
    compact = CompactConfig(5, keep_last_messages=2, token_counter=count_messages)
    for streamed in (False, True):
        provider = MockProvider([MockProvider.tool_calls(("k1", "add", {"a": 1, "b": 2})), MockProvider.text("3")])
        cycle = seeded_cycle(provider, compact)
        if streamed:
            assert not any(isinstance(e, Error) for e in cycle.submit_with_tools_stream("go", registry))
        else:
            cycle.submit_with_tools("go", registry)
        first, second = provider.requests
        assert list(first.messages) == [*HISTORY[-4:], Message.user("go")]
        assert list(second.messages[:3]) == [*HISTORY[-2:], Message.user("go")] and len(second.messages) == 5
        assert all(r.system == "You are terse." for r in provider.requests)
        assert_tool_rounds_whole(list(provider.requests[1].messages))
        assert cycle.messages()[:len(HISTORY)] == HISTORY and len(cycle.messages()) == len(HISTORY) + 4


def test_a_request_that_cannot_fit_is_an_error_and_nothing_is_sent(registry):
    compact = CompactConfig(2, keep_last_messages=3, token_counter=count_messages)
    provider = MockProvider([MockProvider.text("never")])
    with pytest.raises(ContextOverflowError):
        seeded_cycle(provider, compact).submit_with_tools("go", registry)
    events = list(seeded_cycle(provider, compact).submit_with_tools_stream("go", registry))
    assert len(events) == 1 and isinstance(events[0].error, ContextOverflowError)
    assert provider.requests == []


def test_summarize_makes_one_provider_call_and_reuses_the_summary_on_the_next_request(registry):
    compact = CompactConfig(5, keep_last_messages=1, strategy="summarize", token_counter=count_messages)
    provider = MockProvider([MockProvider.text("They added numbers twice."),
                             MockProvider.tool_calls(("k1", "add", {"a": 1, "b": 2})),
                             MockProvider.text("3")])
    cycle = seeded_cycle(provider, compact)
    final = cycle.submit_with_tools("go", registry)
    assert final.message.text == "3"
    summary_request, first, second = provider.requests
    assert list(summary_request.messages[:-1]) == HISTORY
    assert summary_request.messages[-1].role is Role.USER
    summary = Message.user(SUMMARY_PREFIX + "They added numbers twice.")
    assert list(first.messages) == [summary, Message.user("go")]
    assert list(second.messages[:2]) == [summary, Message.user("go")] and len(second.messages) == 4
    assert first.system == second.system == "You are terse."
    assert cycle.messages()[:len(HISTORY)] == HISTORY


def test_a_session_compacts_its_requests_but_keeps_its_whole_history():
    provider = MockProvider([MockProvider.text(f"answer {i}") for i in range(4)])
    compact = CompactConfig(3, keep_last_messages=1, token_counter=count_messages)
    with AgentSession(provider, CycleConfig(), compact=compact) as session:
        for i in range(4):
            session.submit_turn(f"question {i}")
        assert len(session.messages()) == 8
    assert [len(r.messages) for r in provider.requests] == [1, 3, 3, 3]
    assert provider.requests[-1].messages[-1] == Message.user("question 3")
