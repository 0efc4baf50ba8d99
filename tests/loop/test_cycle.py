"""LlmCycle: history, requests, retry inside the cycle, hooks around provider calls."""

from __future__ import annotations

import pickle

import attrs
import pytest

from agcore_sync.errors import AgcoreError
from agcore_sync.hooks import Deny, HookError, HookEvent, Hooks
from agcore_sync.llm import provider as provider_module
from agcore_sync.llm.errors import LlmError, ServerError
from agcore_sync.llm.events import MessageComplete, TextDelta
from agcore_sync.llm.mock import MockProvider
from agcore_sync.llm.retry import RetryConfig
from agcore_sync.llm.types import Message, Role
from agcore_sync.loop.cycle import CycleConfig, LlmCycle

FAST_RETRY = RetryConfig(max_retries=2, initial_backoff=0.0, jitter=False)


def test_submit_sends_the_history_and_system_prompt_and_keeps_both_messages():
    provider = MockProvider([MockProvider.text("first"), MockProvider.text("second")])
    cycle = LlmCycle(provider, CycleConfig("m", max_tokens=50, temperature=0.2), system_prompt="Be brief.")
    assert cycle.submit("one").message.text == "first"
    cycle.submit("two")
    second = provider.requests[1]
    assert second.system == "Be brief." and second.model == "m" and second.max_tokens == 50
    assert [m.role for m in second.messages] == [Role.USER, Role.ASSISTANT, Role.USER]
    assert [m.text for m in cycle.messages()] == ["one", "first", "two", "second"]
    assert all(m.role is not Role.SYSTEM for m in cycle.messages())


def test_messages_is_a_copy_and_push_and_clear_change_the_history():
    cycle = LlmCycle(MockProvider([]), CycleConfig())
    cycle.messages().append(Message.user("lost"))
    assert cycle.messages() == []
    cycle.push_message(Message.user("kept"))
    assert [m.text for m in cycle.messages()] == ["kept"]
    cycle.clear()
    assert cycle.messages() == []
    with pytest.raises(TypeError):
        cycle.push_message("not a message")


def test_a_failed_submit_leaves_the_history_as_it_was():
    cycle = LlmCycle(MockProvider([LlmError("nope")]), CycleConfig(retry=None))
    with pytest.raises(LlmError):
        cycle.submit("hi")
    assert cycle.messages() == []


def test_submit_retries_with_the_cycle_retry_config(monkeypatch):
    provider = MockProvider([ServerError("down", status_code=503), MockProvider.text("ok")])
    cycle = LlmCycle(provider, CycleConfig(retry=FAST_RETRY))
    assert cycle.submit("hi").message.text == "ok"
    assert len(provider.requests) == 2


def test_retry_none_turns_retry_off():
    provider = MockProvider([ServerError("down", status_code=503), MockProvider.text("ok")])
    with pytest.raises(ServerError):
        LlmCycle(provider, CycleConfig(retry=None)).submit("hi")


def test_submit_stream_is_lazy_and_appends_the_turn_once_exhausted():
    provider = MockProvider([MockProvider.text("streamed answer")])
    cycle = LlmCycle(provider, CycleConfig())
    stream = cycle.submit_stream("hi")
    assert provider.requests == []
    events = list(stream)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "streamed answer"
    assert isinstance(events[-1], MessageComplete)
    assert [m.text for m in cycle.messages()] == ["hi", "streamed answer"]


def test_an_abandoned_stream_leaves_the_history_as_it_was():
    cycle = LlmCycle(MockProvider([MockProvider.text("a long streamed answer")]), CycleConfig())
    stream = cycle.submit_stream("hi")
    next(stream)
    stream.close()
    assert cycle.messages() == []


def test_submit_stream_raises_llm_errors_from_the_iterator():
    cycle = LlmCycle(MockProvider([LlmError("broken")]), CycleConfig(retry=None))
    with pytest.raises(LlmError, match="broken"):
        list(cycle.submit_stream("hi"))


def test_pre_and_post_request_hooks_fire_around_every_call_in_order():
    seen = []
    hooks = Hooks()
    hooks.on(HookEvent.PRE_REQUEST, lambda ctx: seen.append(("pre", ctx.request.messages[-1].text)))
    hooks.on(HookEvent.POST_REQUEST, lambda ctx: seen.append(("post", ctx.response.message.text)))
    cycle = LlmCycle(MockProvider([MockProvider.text("a"), MockProvider.text("b")]), CycleConfig(), hooks=hooks)
    cycle.submit("x")
    list(cycle.submit_stream("y"))
    assert seen == [("pre", "x"), ("post", "a"), ("pre", "y"), ("post", "b")]


def test_post_request_does_not_fire_when_the_call_failed():
    seen = []
    hooks = Hooks()
    hooks.on(HookEvent.POST_REQUEST, seen.append)
    with pytest.raises(LlmError):
        LlmCycle(MockProvider([LlmError("x")]), CycleConfig(retry=None), hooks=hooks).submit("hi")
    assert seen == []


def test_a_hook_that_raises_becomes_a_hook_error_with_the_cause_and_is_logged(caplog):
    def broken(ctx):
        raise RuntimeError("hook bug")

    hooks = Hooks()
    hooks.on(HookEvent.PRE_REQUEST, broken)
    provider = MockProvider([MockProvider.text("never")])
    with pytest.raises(HookError) as info:
        LlmCycle(provider, CycleConfig(), hooks=hooks).submit("hi")
    assert isinstance(info.value.__cause__, RuntimeError)
    assert info.value.event is HookEvent.PRE_REQUEST
    assert provider.requests == []
    assert any(r.name == "agcore_sync.hooks" for r in caplog.records)


def test_deny_from_a_hook_other_than_pre_tool_use_is_ignored_with_a_warning(caplog):
    hooks = Hooks()
    hooks.on(HookEvent.PRE_REQUEST, lambda ctx: Deny("no"))
    assert LlmCycle(MockProvider([MockProvider.text("ok")]), CycleConfig(), hooks=hooks).submit("hi")
    assert "ignored" in caplog.text


def test_a_request_with_no_model_anywhere_is_refused_before_sending():
    from agcore_sync.llm.openai import OpenAIProvider

    with pytest.raises(LlmError, match="no model"):
        LlmCycle(OpenAIProvider(api_key="k"), CycleConfig(retry=None)).submit("hi")


def test_cycle_config_round_trips_and_max_turns_wins():
    config = CycleConfig("m", max_turns=2, max_tool_turns=7)
    assert config.tool_turn_limit == 2
    assert attrs.evolve(config, max_turns=None).tool_turn_limit == 7
    assert CycleConfig(max_tool_turns=None).tool_turn_limit == 10
    assert CycleConfig.from_dict(config.to_dict()) == config


@pytest.mark.parametrize("name", provider_module.__all__[1:])
def test_llm_errors_pickle_with_their_facts(name):
    cls = getattr(provider_module, name)
    error = cls("went wrong", status_code=429, retryable=True, retry_after=3.0, body={"error": "x"})
    restored = pickle.loads(pickle.dumps(error))
    assert type(restored) is cls and isinstance(restored, AgcoreError)
    assert (restored.message, restored.status_code, restored.retryable, restored.retry_after, restored.body) == (
        "went wrong", 429, True, 3.0, {"error": "x"})
