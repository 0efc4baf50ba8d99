"""The schema-from-type builder shared by @tool and structured output: dataclasses, TypedDicts, recursion."""

from __future__ import annotations

import dataclasses
import enum
from typing import List, TypedDict

import pytest

from agcore_sync import tool
from agcore_sync.llm._schema_from_type import SchemaBuilder


class Unit(enum.Enum):
    C = "celsius"
    F = "fahrenheit"


@dataclasses.dataclass
class Place:
    """A place on the map.

    Args:
        city: the city's English name.
    """

    city: str
    unit: Unit = Unit.C


class Window(TypedDict):
    start: str
    days: int


@dataclasses.dataclass
class Loop:
    next: List[Loop]


def test_a_tool_takes_a_dataclass_and_a_typeddict_and_gets_them_converted():
    @tool
    def forecast(place: Place, window: Window) -> str:
        """Forecast the weather.

        Args:
            place: where.
            window: when.
        """
        assert isinstance(place, Place) and isinstance(place.unit, Unit)
        return f"{place.city} {place.unit.value} {window['days']}"

    properties = forecast.parameters["properties"]
    assert properties["place"]["properties"]["city"]["description"] == "the city's English name."
    assert properties["place"]["properties"]["unit"]["default"] == "celsius"
    assert properties["window"]["required"] == ["start", "days"]
    assert forecast.execute({"place": {"city": "Oslo", "unit": "fahrenheit"},
                             "window": {"start": "2026-12-01", "days": 3}}) == "Oslo fahrenheit 3"


def test_a_recursive_class_is_refused_for_tools_and_allowed_for_output():
    with pytest.raises(TypeError, match=r"@tool cannot express the recursive class Loop"):
        SchemaBuilder().build(Loop, "parameter 'x'")
    schema, convert = SchemaBuilder(owner="output=", recursive=True).root(Loop, "output")
    assert schema["properties"]["next"]["items"] == {"$ref": "#"}
    assert convert({"next": [{"next": []}]}) == Loop([Loop([])])


def test_the_owner_names_the_caller_in_errors():
    with pytest.raises(TypeError, match=r"^output= cannot express"):
        SchemaBuilder(owner="output=").build(bytes, "field")
