"""LlmCycle.submit_with_tools: the synchronous tool loop (history, limits, tool errors, cutting, guard, hooks)."""

from __future__ import annotations

import threading

import pytest

from agcore_sync.hooks import Deny, HookEvent, Hooks
from agcore_sync.llm.errors import MaxToolTurnsExceeded
from agcore_sync.llm.events import ToolExecutionCompleted
from agcore_sync.llm.mock import MockProvider
from agcore_sync.llm.types import Message, Role, StopReason, ToolUseBlock
from agcore_sync.loop.cycle import CycleConfig, LlmCycle
from agcore_sync.tools.error import ToolTimeoutError
from agcore_sync.tools.function import tool
from agcore_sync.tools.permission import Permission, PermissionChecker, PermissionConfig
from agcore_sync.tools.registry import ToolRegistry
from tests.support.tools import add

#: Bound on every wait for something that must happen.
WAIT = 5.0


@tool
def echo(text: str) -> str:
    """Return the text."""
    return text


@pytest.fixture
def registry():
    reg = ToolRegistry()
    reg.register_all([add, echo])
    yield reg
    reg.close()


def results_of(request):
    """The tool results at the end of a request, as (id, content, is_error)."""
    out = []
    for message in reversed(request.messages):
        if message.role is not Role.TOOL:
            break
        block = message.content[0]
        out.append((block.tool_use_id, block.content, block.is_error))
    return out[::-1]


def single_error(provider, registry, call, config=None, hooks=None):
    """Run one round with ``call`` and return the (content, is_error) the model got for it."""
    provider.add(MockProvider.tool_calls(call), MockProvider.text("noted"))
    LlmCycle(provider, config or CycleConfig(), hooks=hooks).submit_with_tools("go", registry)
    [(_, content, is_error)] = results_of(provider.requests[1])
    return content, is_error


def test_a_turn_keeps_the_user_message_each_round_in_call_order_and_the_final_answer(registry):
    provider = MockProvider([
        MockProvider.tool_calls(("c1", "add", {"a": 1, "b": 2}), ("c2", "echo", {"text": "hi"}), text="Working."),
        MockProvider.tool_calls(("c3", "add", {"a": 3, "b": 4})),
        MockProvider.text("3, hi and 7."),
    ])
    cycle = LlmCycle(provider, CycleConfig())
    response = cycle.submit_with_tools("go", registry)
    assert response.message.text == "3, hi and 7." and response.stop_reason is StopReason.STOP
    history = cycle.messages()
    assert [m.role for m in history] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.TOOL, Role.ASSISTANT, Role.TOOL,
                                         Role.ASSISTANT]
    assert history[0] == Message.user("go")
    assert history[1] == provider.requests[1].messages[1]
    assert [(m.content[0].tool_use_id, m.content[0].content) for m in (history[2], history[3], history[5])] == [
        ("c1", "3"), ("c2", "hi"), ("c3", "7")]
    assert history[-1] == response.message
    # Each request carries the tool definitions and the whole history so far.
    assert [d.name for d in provider.requests[0].tools] == ["add", "echo"]
    assert list(provider.requests[2].messages) == history[:-1]


def test_more_rounds_than_max_tool_turns_raise_after_the_last_rounds_tools_ran(registry):
    ran = []

    @tool
    def count(n: int) -> int:
        ran.append(n)
        return n

    registry.register(count)
    provider = MockProvider([MockProvider.tool_calls(("c1", "count", {"n": 1})),
                             MockProvider.tool_calls(("c2", "count", {"n": 2})),
                             MockProvider.tool_calls(("c3", "count", {"n": 3}))])
    cycle = LlmCycle(provider, CycleConfig(max_tool_turns=2))
    with pytest.raises(MaxToolTurnsExceeded):
        cycle.submit_with_tools("go", registry)
    assert ran == [1, 2]
    assert len(provider.requests) == 2 and provider.remaining == 1
    history = cycle.messages()
    assert [m.role for m in history] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT, Role.TOOL]
    assert history[4].content[0].tool_use_id == "c2"


def test_max_tool_turns_none_means_ten_and_max_turns_wins_when_given(registry):
    looping = [MockProvider.tool_calls(("add", {"a": i, "b": 0})) for i in range(11)]
    provider = MockProvider(looping)
    with pytest.raises(MaxToolTurnsExceeded):
        LlmCycle(provider, CycleConfig(max_tool_turns=None, max_repeated_tool_calls=None)).submit_with_tools(
            "go", registry)
    assert len(provider.requests) == 10
    provider = MockProvider(looping)
    with pytest.raises(MaxToolTurnsExceeded):
        LlmCycle(provider, CycleConfig(max_turns=1, max_tool_turns=5)).submit_with_tools("go", registry)
    assert len(provider.requests) == 1


# -- recoverable errors go back to the model -------------------------------------------------------------------


def test_an_unknown_tool_goes_back_as_an_error_result_naming_it(registry):
    content, is_error = single_error(MockProvider(), registry, ("c1", "nope", {}))
    assert is_error and '"nope"' in content and "no tool named" in content


def test_arguments_that_are_a_json_string_go_back_as_an_error_and_are_not_coerced(registry):
    content, is_error = single_error(MockProvider(), registry, ToolUseBlock("c1", "add", '{"a": 1, "b": 2}'))
    assert is_error and '"add"' in content and "must be a JSON object" in content and "str" in content


def test_arguments_that_fail_the_schema_go_back_with_the_json_path_and_the_validator_message(registry):
    content, is_error = single_error(MockProvider(), registry, ("c1", "add", {"a": 1, "b": "two"}))
    assert is_error and '"add"' in content
    assert "$.b" in content and "'two' is not of type 'integer'" in content


def test_a_tool_that_raises_goes_back_as_an_error_result_and_the_loop_goes_on(registry):
    @tool
    def explode() -> str:
        raise KeyError("missing-thing")

    registry.register(explode)
    provider = MockProvider()
    content, is_error = single_error(provider, registry, ("c1", "explode", {}))
    assert is_error and '"explode"' in content and "KeyError" in content and "missing-thing" in content
    assert len(provider.requests) == 2


def test_a_call_the_permission_checker_denies_goes_back_as_an_error_and_never_runs():
    ran = []

    @tool(permissions=Permission.SHELL)
    def sh(cmd: str) -> str:
        ran.append(cmd)
        return "done"

    with ToolRegistry(PermissionChecker(PermissionConfig())) as reg:
        reg.register(sh)
        content, is_error = single_error(MockProvider(), reg, ("c1", "sh", {"cmd": "rm -rf /"}))
    assert ran == []
    assert is_error and '"sh"' in content and "shell" in content.lower()


def test_a_pre_tool_use_deny_goes_back_with_its_reason_and_the_tool_never_runs(registry):
    ran = []

    @tool
    def rm(path: str) -> str:
        ran.append(path)
        return "removed"

    registry.register(rm)
    hooks = Hooks()
    hooks.on(HookEvent.PRE_TOOL_USE, lambda ctx: Deny("the operator declined") if ctx.tool_name == "rm" else None)
    content, is_error = single_error(MockProvider(), registry, ("c1", "rm", {"path": "/"}), hooks=hooks)
    assert ran == []
    assert is_error and '"rm"' in content and "the operator declined" in content


# -- unrecoverable errors raise ----------------------------------------------------------------------------------


def test_a_tool_timeout_raises_and_the_round_whose_tools_failed_is_not_kept(registry):
    release = threading.Event()

    @tool
    def slow() -> str:
        release.wait(WAIT)
        return "late"

    registry.register(slow)
    provider = MockProvider([MockProvider.tool_calls(("c1", "add", {"a": 1, "b": 1})),
                             MockProvider.tool_calls(("c2", "slow", {}), ("c3", "add", {"a": 2, "b": 2})),
                             MockProvider.text("never requested")])
    cycle = LlmCycle(provider, CycleConfig(tool_timeout_secs=0.2))
    try:
        with pytest.raises(ToolTimeoutError) as caught:
            cycle.submit_with_tools("go", registry)
    finally:
        release.set()
    assert caught.value.tool_name == "slow" and not caught.value.recoverable
    assert len(provider.requests) == 2
    history = cycle.messages()
    assert [m.role for m in history] == [Role.USER, Role.ASSISTANT, Role.TOOL]
    assert history[1].tool_uses[0].id == "c1"


# -- cutting long results ----------------------------------------------------------------------------------------


def test_a_long_result_is_cut_on_a_utf8_boundary_and_everyone_sees_the_cut_text(registry):
    @tool
    def euros() -> str:
        return "€" * 5  # 15 bytes of UTF-8, three per character

    registry.register(euros)
    seen_by_hook = []
    hooks = Hooks()
    hooks.on(HookEvent.POST_TOOL_USE, lambda ctx: seen_by_hook.append(ctx.invocation.content()))
    config = CycleConfig(max_tool_result_bytes=10)  # 10 falls inside the fourth character
    provider = MockProvider([MockProvider.tool_calls(("c1", "euros", {})), MockProvider.text("ok")] * 2)
    LlmCycle(provider, config, hooks=hooks).submit_with_tools("go", registry)
    [(_, to_model, is_error)] = results_of(provider.requests[1])
    assert not is_error
    head, marker = to_model.split("\n", 1)
    assert head == "€€€" and "\ufffd" not in to_model
    assert "6 bytes" in marker
    assert seen_by_hook == [to_model]
    # The streaming loop cuts the same way, and result_summary shows the cut text.
    events = list(LlmCycle(provider, config, hooks=hooks).submit_with_tools_stream("go", registry))
    [done] = [e for e in events if isinstance(e, ToolExecutionCompleted)]
    assert done.result_summary == to_model[:200]
    assert results_of(provider.requests[3]) == [("c1", to_model, False)]
    assert seen_by_hook == [to_model, to_model]


def test_a_result_within_the_limit_is_not_cut_and_none_disables_the_limit(registry):
    provider = MockProvider([MockProvider.tool_calls(("c1", "echo", {"text": "é" * 5})), MockProvider.text("ok"),
                             MockProvider.tool_calls(("c2", "echo", {"text": "x" * 500})), MockProvider.text("ok")])
    LlmCycle(provider, CycleConfig(max_tool_result_bytes=10)).submit_with_tools("go", registry)
    assert results_of(provider.requests[1])[0][1] == "é" * 5
    LlmCycle(provider, CycleConfig(max_tool_result_bytes=None)).submit_with_tools("go", registry)
    assert results_of(provider.requests[3])[0][1] == "x" * 500


# -- the repeated-call guard -------------------------------------------------------------------------------------


def _repeating(n, call=("add", {"a": 1, "b": 1})):
    return [MockProvider.tool_calls(call) for _ in range(n)] + [MockProvider.text("done")]


def test_the_third_identical_call_in_a_row_is_refused_when_the_guard_allows_two(registry):
    ran = []

    @tool
    def ping(n: int) -> int:
        ran.append(n)
        return n

    registry.register(ping)
    provider = MockProvider(_repeating(3, ("ping", {"n": 1})))
    LlmCycle(provider, CycleConfig(max_repeated_tool_calls=2)).submit_with_tools("go", registry)
    assert ran == [1, 1]
    [(_, content, is_error)] = results_of(provider.requests[3])
    assert is_error and '"ping"' in content and "3 times in a row" in content
    assert [results_of(provider.requests[i])[0][2] for i in (1, 2)] == [False, False]


def test_a_different_call_in_between_resets_the_guard_and_none_turns_it_off(registry):
    provider = MockProvider([MockProvider.tool_calls(("add", {"a": 1, "b": 1})),
                             MockProvider.tool_calls(("add", {"b": 1, "a": 1})),  # same canonical JSON
                             MockProvider.tool_calls(("add", {"a": 2, "b": 2})),
                             MockProvider.tool_calls(("add", {"a": 1, "b": 1})),
                             MockProvider.text("done")])
    LlmCycle(provider, CycleConfig(max_repeated_tool_calls=1)).submit_with_tools("go", registry)
    assert [results_of(provider.requests[i])[0][2] for i in (1, 2, 3, 4)] == [False, True, False, False]
    provider = MockProvider(_repeating(5))
    LlmCycle(provider, CycleConfig(max_repeated_tool_calls=None)).submit_with_tools("go", registry)
    assert all(not results_of(provider.requests[i])[0][2] for i in range(1, 6))


# -- hooks -------------------------------------------------------------------------------------------------------


def test_hooks_fire_in_order_around_every_request_and_every_tool_call(registry):
    hooks = Hooks()
    fired = []
    for event in (HookEvent.PRE_REQUEST, HookEvent.POST_REQUEST, HookEvent.PRE_TOOL_USE, HookEvent.POST_TOOL_USE):
        hooks.on(event, lambda ctx: fired.append(ctx))
    provider = MockProvider([MockProvider.tool_calls(("c1", "add", {"a": 1, "b": 2}), ("c2", "echo", {"text": "x"})),
                             MockProvider.text("done")])
    final = LlmCycle(provider, CycleConfig(), hooks=hooks).submit_with_tools("go", registry)
    assert [(c.event, c.tool_call_id) for c in fired] == [
        (HookEvent.PRE_REQUEST, None), (HookEvent.POST_REQUEST, None),
        (HookEvent.PRE_TOOL_USE, "c1"), (HookEvent.PRE_TOOL_USE, "c2"),
        (HookEvent.POST_TOOL_USE, "c1"), (HookEvent.POST_TOOL_USE, "c2"),
        (HookEvent.PRE_REQUEST, None), (HookEvent.POST_REQUEST, None),
    ]
    assert fired[0].request is provider.requests[0] and fired[1].response.message.tool_uses[0].id == "c1"
    assert fired[-1].response is final
    assert fired[2].arguments == {"a": 1, "b": 2} and fired[2].tool_name == "add"
    assert fired[4].invocation.output == 3 and fired[5].invocation.output == "x"
    assert all(c.turn_index is None for c in fired)
