"""ToolCall: the one shape of a tool call, taken by invoke_all beside the old tuples."""

from __future__ import annotations

import attrs
import pytest

from agcore_sync.tools.function import tool
from agcore_sync.tools.invocation import ToolCall
from agcore_sync.tools.registry import ToolRegistry


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first addend.
        b: the second addend.
    """
    return a + b


def test_a_tool_call_is_a_frozen_value():
    call = ToolCall("add", {"a": 1, "b": 2}, id="call_1")
    assert call == ToolCall("add", {"a": 1, "b": 2}, "call_1")
    assert call != ToolCall("add", {"a": 1, "b": 2})
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        call.name = "other"  # type: ignore[misc]
    assert "add" in repr(call) and "call_1" in repr(call)


def test_of_reads_both_tuple_spellings_and_keeps_a_tool_call():
    call = ToolCall("add", {"a": 1}, "call_1")
    assert ToolCall.of(call) is call
    assert ToolCall.of(("add", {"a": 1})) == ToolCall("add", {"a": 1})
    assert ToolCall.of(("call_1", "add", {"a": 1})) == call
    assert ToolCall.of(["call_1", "add", {"a": 1}]) == call


@pytest.mark.parametrize("bad", [("add",), ("a", "b", "c", "d"), "add", 3])
def test_of_refuses_anything_else_with_a_value_error(bad):
    with pytest.raises(ValueError, match="tool_call_id, name, args"):
        ToolCall.of(bad)


def test_invoke_all_takes_tool_calls_and_tuples_in_one_batch():
    with ToolRegistry() as registry:
        registry.register(add)
        results = registry.invoke_all([ToolCall("add", {"a": 1, "b": 2}, "call_1"), ("add", {"a": 2, "b": 3}),
                                        ("call_3", "add", {"a": 3, "b": 4}), ToolCall("missing", {})])
    assert [r.output for r in results[:3]] == [3, 5, 7]
    assert [r.tool_call_id for r in results] == ["call_1", None, "call_3", None]
    assert results[3].error is not None and results[3].tool_name == "missing"


def test_tool_call_is_importable_from_the_registry_module_as_before():
    from agcore_sync.tools import registry as registry_module

    assert registry_module.ToolCall is ToolCall
