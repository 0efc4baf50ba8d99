"""hooks.py on its own: order, Deny, errors, registration (the loops' use of hooks is tested in tests/loop)."""

from __future__ import annotations

import logging
import pickle

import attrs
import pytest

from agcore_sync.errors import AgcoreError
from agcore_sync.hooks import Approve, Defer, Deny, HookContext, HookError, HookEvent, Hooks


def ctx(event=HookEvent.PRE_TOOL_USE, **kwargs):
    return HookContext(event=event, **kwargs)


def test_hooks_of_an_event_run_in_registration_order_with_the_context_given():
    hooks = Hooks()
    seen = []
    hooks.on(HookEvent.PRE_REQUEST, lambda c: seen.append(("first", c.turn_index)))
    hooks.on(HookEvent.PRE_REQUEST, lambda c: seen.append(("second", c.turn_index)))
    hooks.on(HookEvent.POST_REQUEST, lambda c: seen.append(("other event", c.turn_index)))
    assert hooks.fire(ctx(HookEvent.PRE_REQUEST, turn_index=3)) is None
    assert seen == [("first", 3), ("second", 3)]


def test_the_first_deny_of_a_pre_tool_use_hook_wins_and_later_hooks_do_not_run():
    hooks = Hooks()
    later = []
    hooks.on(HookEvent.PRE_TOOL_USE, lambda c: None)
    hooks.on(HookEvent.PRE_TOOL_USE, lambda c: Deny("no shell") if c.tool_name == "sh" else None)
    hooks.on(HookEvent.PRE_TOOL_USE, lambda c: later.append(c.tool_name) or Deny("second"))
    assert hooks.fire(ctx(tool_name="sh")) == Deny("no shell")
    assert later == []
    assert hooks.fire(ctx(tool_name="ls")) == Deny("second")
    assert later == ["ls"]


@pytest.mark.parametrize("event", [e for e in HookEvent if e is not HookEvent.PRE_TOOL_USE])
def test_deny_from_any_other_event_is_ignored_with_a_warning(event, caplog):
    hooks = Hooks()
    after = []
    hooks.on(event, lambda c: Deny("not here"))
    hooks.on(event, lambda c: after.append(True))
    with caplog.at_level(logging.WARNING, logger="agcore_sync.hooks"):
        assert hooks.fire(ctx(event)) is None
    assert after == [True]
    assert [r.getMessage() for r in caplog.records] == [f"Deny returned by a {event.value} hook is ignored"]


def test_a_hook_that_raises_is_logged_and_wrapped_with_its_cause_and_later_hooks_do_not_run(caplog):
    hooks = Hooks()
    later = []

    def broken(c):
        raise KeyError("missing")

    hooks.on(HookEvent.POST_TOOL_USE, broken)
    hooks.on(HookEvent.POST_TOOL_USE, lambda c: later.append(True))
    with caplog.at_level(logging.ERROR, logger="agcore_sync.hooks"), pytest.raises(HookError) as info:
        hooks.fire(ctx(HookEvent.POST_TOOL_USE))
    error = info.value
    assert isinstance(error, AgcoreError)
    assert isinstance(error.__cause__, KeyError)
    assert error.event is HookEvent.POST_TOOL_USE
    assert "broken" in str(error) and "post_tool_use" in str(error) and "KeyError" in str(error)
    assert later == []
    [record] = caplog.records
    assert record.name == "agcore_sync.hooks" and record.exc_info[0] is KeyError


def test_a_hook_error_pickles_with_its_event():
    error = pickle.loads(pickle.dumps(HookError("hook x raised", HookEvent.ON_TURN_END)))
    assert str(error) == "hook x raised" and error.event is HookEvent.ON_TURN_END


def test_on_returns_the_function_accepts_the_event_value_and_refuses_an_unknown_event():
    hooks = Hooks()

    def fn(c):
        return None

    assert hooks.on("pre_request", fn) is fn
    assert hooks.has(HookEvent.PRE_REQUEST) and not hooks.has(HookEvent.POST_REQUEST)
    with pytest.raises(ValueError):
        hooks.on("before_everything", fn)


def test_an_empty_hooks_object_is_false_and_one_with_a_hook_is_true():
    hooks = Hooks()
    assert not hooks
    hooks.on(HookEvent.ON_TURN_START, lambda c: None)
    assert hooks


def test_the_context_is_a_frozen_keyword_only_value_and_deny_has_a_default_reason():
    context = ctx(tool_name="add", tool_call_id="c1", arguments={"a": 1})
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        context.tool_name = "other"
    with pytest.raises(TypeError):
        HookContext(HookEvent.PRE_TOOL_USE)  # positional: refused
    assert (context.turn_index, context.request, context.response, context.invocation) == (None, None, None, None)
    assert Deny().reason == "denied by a PRE_TOOL_USE hook"


@pytest.mark.parametrize("decision", [Deny("no"), Defer(), Approve()], ids=lambda d: type(d).__name__)
def test_the_first_decision_of_any_kind_wins_in_pre_tool_use(decision):
    hooks = Hooks()
    later = []
    hooks.on(HookEvent.PRE_TOOL_USE, lambda c: None)
    hooks.on(HookEvent.PRE_TOOL_USE, lambda c: decision)
    hooks.on(HookEvent.PRE_TOOL_USE, lambda c: later.append(c) or Deny("later"))
    assert hooks.fire(ctx()) is decision
    assert later == []


@pytest.mark.parametrize("decision", [Defer(), Approve()], ids=lambda d: type(d).__name__)
def test_defer_and_approve_from_another_event_are_ignored_with_a_warning(decision, caplog):
    hooks = Hooks()
    hooks.on(HookEvent.POST_TOOL_USE, lambda c: decision)
    with caplog.at_level(logging.WARNING, logger="agcore_sync.hooks"):
        assert hooks.fire(ctx(HookEvent.POST_TOOL_USE)) is None
    assert f"{type(decision).__name__} returned by a post_tool_use hook is ignored" in caplog.text
