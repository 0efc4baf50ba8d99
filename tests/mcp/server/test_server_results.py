"""Structured output as FastMCP gives it: objects as they are, other annotated values as ``{"result": ...}``."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional

import pytest

from agcore_sync import tool
from agcore_sync.mcp.server._results import call_result, output_plan


@dataclasses.dataclass
class Point:
    x: int
    label: str = "origin"


@tool
def as_dict() -> Dict[str, int]:
    """A dict."""
    return {"a": 1}


@tool
def as_dataclass() -> Point:
    """A dataclass."""
    return Point(1)


@tool
def as_list() -> List[int]:
    """A list."""
    return [1, 2]


@tool
def as_optional() -> Optional[int]:
    """None, as an optional int."""
    return None


@tool
def as_text() -> str:
    """A str."""
    return "hi"


@tool
def unannotated():  # type: ignore[no-untyped-def]
    """No return annotation."""
    return {"a": 1}


@pytest.mark.parametrize(("made", "text", "structured"), [
    (as_dict, '{"a": 1}', {"a": 1}),
    (as_dataclass, '{"x": 1, "label": "origin"}', {"x": 1, "label": "origin"}),
    (as_list, "[1, 2]", {"result": [1, 2]}),
    (as_optional, "null", {"result": None}),
    (as_text, "hi", {"result": "hi"}),
])
def test_a_tools_value_is_its_text_and_its_structured_content(made: Any, text: str, structured: Any) -> None:
    plan = output_plan(made)
    result = call_result(made.func(), plan)
    assert result["content"] == [{"type": "text", "text": text}]
    assert result["structuredContent"] == structured
    assert plan.schema is not None and plan.schema["type"] == "object"


def test_an_unannotated_tool_declares_no_output_schema_and_sends_no_structured_content() -> None:
    plan = output_plan(unannotated)
    assert plan.schema is None
    assert "structuredContent" not in call_result(unannotated.func(), plan)


def test_a_wrapped_output_schema_names_the_value_result() -> None:
    assert output_plan(as_list).schema == {"type": "object", "required": ["result"],
                                           "properties": {"result": {"type": "array", "items": {"type": "integer"}}}}
