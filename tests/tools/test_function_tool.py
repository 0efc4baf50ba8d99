"""FunctionTool and @tool: schemas from hints, docstrings, conversion, refusals.

This module uses ``from __future__ import annotations`` on purpose: every
annotation below is a string that @tool must resolve.
"""

from __future__ import annotations

import doctest
import enum
import inspect
import subprocess
import sys
from typing import (
    Annotated,
    Any,
    Callable,
    Dict,
    FrozenSet,
    List,
    Literal,
    Optional,
    Sequence,
    Set,
    Tuple,
    Union,
)

import attrs
import jsonschema
import pytest

from agcore_sync.llm.types import ToolDef
from agcore_sync.tools import function as function_module
from agcore_sync.tools.base import BaseTool
from agcore_sync.tools.function import FunctionTool, tool
from agcore_sync.tools.permission import Permission


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@attrs.frozen
class Point:
    """A point on the plane.

    Attributes:
        x: the abscissa.
        y: the ordinate,
            zero by default.
    """

    x: float
    y: float = 0.0


@attrs.define
class Shape:
    color: Color
    corners: List[Point]
    label: Optional[str] = None
    tags: List[str] = attrs.Factory(list)


@attrs.define
class Node:
    children: List[Node]


class Plain:
    pass


class Weird(enum.Enum):
    PAIR = (1, 2)


def check(tool_: FunctionTool) -> jsonschema.Draft202012Validator:
    """Assert the tool's schema is valid Draft 2020-12; return a validator for it."""
    jsonschema.Draft202012Validator.check_schema(tool_.parameters)
    return jsonschema.Draft202012Validator(tool_.parameters)


def one_parameter(hint: Any) -> FunctionTool:
    """A tool whose single parameter ``x`` has the type object ``hint``."""

    def f(x):
        return x

    f.__annotations__ = {"x": hint}
    return tool(f)


# -- the decorator --------------------------------------------------------------------------------


def test_bare_decorator_makes_a_tool_named_after_the_function_and_described_by_its_summary():
    @tool
    def get_weather(city: str) -> str:
        """Return the weather for a city.

        Args:
            city: the city name.
        """
        return f"sunny in {city}"

    assert isinstance(get_weather, FunctionTool)
    assert isinstance(get_weather, BaseTool)
    assert get_weather.name == "get_weather"
    assert get_weather.description == "Return the weather for a city."
    assert get_weather.required_permissions == ()
    assert get_weather.parameters == {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "the city name."}},
        "required": ["city"],
        "additionalProperties": False,
    }
    assert get_weather.definition() == ToolDef("get_weather", "Return the weather for a city.", get_weather.parameters)
    assert get_weather.execute({"city": "Oslo"}) == "sunny in Oslo"


def test_decorator_with_arguments_sets_name_description_and_permissions():
    @tool(name="weather", description="Weather now.", permissions=(Permission.NETWORK, "geo:lookup"))
    def get_weather(city: str) -> str:
        """Ignored summary."""
        return city

    assert get_weather.name == "weather"
    assert get_weather.description == "Weather now."
    assert get_weather.required_permissions == (Permission.NETWORK, Permission.custom("geo:lookup"))
    assert isinstance(get_weather.required_permissions, tuple)


def test_a_single_permission_name_is_one_permission_not_its_characters():
    @tool(permissions="read")
    def peek() -> None:
        pass

    assert peek.required_permissions == (Permission.READ,)


def test_a_permission_that_is_neither_a_permission_nor_a_name_is_refused():
    with pytest.raises(TypeError):

        @tool(permissions=[42])
        def peek() -> None:
            pass


def test_the_tool_is_still_callable_like_the_function():
    @tool
    def add(a: int, b: int = 1) -> int:
        """Add."""
        return a + b

    assert add(2, 3) == 5
    assert add(2) == 3
    assert add(a=2, b=5) == 7
    assert add.__wrapped__(1, 1) == 2
    assert add.__doc__ == "Add."
    assert add.__name__ == "add"
    assert str(inspect.signature(add)) == "(a: 'int', b: 'int' = 1) -> 'int'"


def test_a_name_providers_refuse_is_an_error_at_decoration_time():
    with pytest.raises(ValueError, match="1 to 64"):
        tool(lambda: None)
    with pytest.raises(ValueError, match="weather.now"):

        @tool(name="weather.now")
        def f() -> None:
            pass


def test_the_example_in_the_function_tool_docstring_is_true():
    finder = doctest.DocTestFinder()
    tests = [t for t in finder.find(function_module) if t.name.endswith("FunctionTool")]
    assert tests and tests[0].examples
    runner = doctest.DocTestRunner()
    for test in tests:
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


def test_importing_the_module_does_not_import_jsonschema():
    code = "import sys, agcore_sync.tools.function; print('jsonschema' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "False"


# -- schemas from hints ---------------------------------------------------------------------------

POINT_SCHEMA = {
    "type": "object",
    "properties": {
        "x": {"type": "number", "description": "the abscissa."},
        "y": {"type": "number", "description": "the ordinate, zero by default.", "default": 0.0},
    },
    "required": ["x"],
    "additionalProperties": False,
    "description": "A point on the plane.",
}

HINTS = [
    # hint, expected schema of x, values accepted, values refused
    (str, {"type": "string"}, ["a", ""], [1, None]),
    (int, {"type": "integer"}, [3, -1], [3.5, "3", True, None]),
    (float, {"type": "number"}, [1.5, 2], ["1.5", True]),
    (bool, {"type": "boolean"}, [True, False], [1, "true"]),
    (None, {"type": "null"}, [None], [0, ""]),
    (Any, {}, [1, "a", None, [1]], []),
    (Optional[int], {"type": ["integer", "null"]}, [1, None], ["1"]),
    (Optional[Color], {"type": ["string", "null"], "enum": ["red", "green", None]}, ["red", None], ["blue"]),
    (List[int], {"type": "array", "items": {"type": "integer"}}, [[], [1, 2]], [[1, "a"], 1]),
    (list, {"type": "array"}, [[1, "a"]], [{}]),
    (Sequence[str], {"type": "array", "items": {"type": "string"}}, [["a"]], [[1]]),
    (Set[int], {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}, [[1, 2]], [[1, 1]]),
    (
        Tuple[int, str],
        {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "minItems": 2, "maxItems": 2},
        [[1, "a"]],
        [[1], [1, "a", 2], ["a", 1]],
    ),
    (Tuple[int, ...], {"type": "array", "items": {"type": "integer"}}, [[], [1, 2, 3]], [["a"]]),
    (Dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}, [{}, {"a": 1}], [{"a": "1"}]),
    (dict, {"type": "object"}, [{"a": [1]}], [[1]]),
    (Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}, ["a", "b"], ["c"]),
    (Literal[1, "one"], {"enum": [1, "one"]}, [1, "one"], ["1", 2]),
    (Color, {"type": "string", "enum": ["red", "green"]}, ["red", "green"], ["RED", "blue"]),
    (Level, {"type": "integer", "enum": [1, 2]}, [1, 2], [3, "1"]),
    (Point, POINT_SCHEMA, [{"x": 1}, {"x": 1.5, "y": 2}], [{}, {"y": 1}, {"x": 1, "z": 0}, {"x": "1"}]),
    (Annotated[int, "how many"], {"type": "integer", "description": "how many"}, [1], ["1"]),
    (Union[int, str], {"anyOf": [{"type": "integer"}, {"type": "string"}]}, [1, "a"], [None, 1.5]),
    (
        Union[int, List[str], None],
        {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"type": "string"}}, {"type": "null"}]},
        [1, ["a"], None],
        ["a"],
    ),
    (
        Optional[List[Point]],
        {"type": ["array", "null"], "items": POINT_SCHEMA},
        [None, [{"x": 1}]],
        [[{"y": 1}]],
    ),
]


@pytest.mark.parametrize(("hint", "expected", "good", "bad"), HINTS, ids=[repr(h[0]) for h in HINTS])
def test_each_hint_becomes_the_expected_valid_schema_that_accepts_good_and_refuses_bad_values(
    hint, expected, good, bad
):
    made = one_parameter(hint)
    assert made.parameters["properties"]["x"] == expected
    validator = check(made)
    for value in good:
        assert validator.is_valid({"x": value}), value
    for value in bad:
        assert not validator.is_valid({"x": value}), value


def test_nested_attrs_classes_become_nested_objects_with_their_defaults():
    made = one_parameter(Shape)
    shape = made.parameters["properties"]["x"]
    assert shape["required"] == ["color", "corners"]
    assert shape["properties"]["color"] == {"type": "string", "enum": ["red", "green"]}
    assert shape["properties"]["corners"] == {"type": "array", "items": POINT_SCHEMA}
    assert shape["properties"]["label"] == {"type": ["string", "null"], "default": None}
    assert shape["properties"]["tags"] == {"type": "array", "items": {"type": "string"}}  # a factory: no default
    validator = check(made)
    assert validator.is_valid({"x": {"color": "red", "corners": [{"x": 0}]}})
    assert not validator.is_valid({"x": {"color": "red", "corners": [{"x": "0"}]}})


def test_string_annotations_from_future_import_resolve():
    @tool
    def f(a: int, b: Optional[Color] = None) -> None:
        pass

    assert f.func.__annotations__["a"] == "int"  # this module's hints are strings
    assert f.parameters["properties"]["a"] == {"type": "integer"}
    assert f.parameters["properties"]["b"]["enum"] == ["red", "green", None]


def test_classes_local_to_the_calling_function_resolve():
    class Mood(enum.Enum):
        HAPPY = "happy"

    @attrs.frozen
    class Entry:
        mood: Mood

    @tool
    def log(entry: Entry) -> Mood:
        return entry.mood

    assert log.parameters["properties"]["entry"]["properties"]["mood"] == {"type": "string", "enum": ["happy"]}
    assert log.execute({"entry": {"mood": "happy"}}) is Mood.HAPPY


def test_pipe_union_with_none_is_optional():
    @tool
    def f(a: int | None, b: int | str) -> None:
        pass

    assert f.parameters["properties"]["a"] == {"type": ["integer", "null"]}
    assert f.parameters["properties"]["b"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert f.parameters["required"] == ["a", "b"]


# -- required and defaults ------------------------------------------------------------------------


def test_parameters_with_defaults_are_not_required_and_record_json_defaults():
    @tool
    def f(
        a: int,
        b: str = "x",
        c: Color = Color.GREEN,
        d: Tuple[int, int] = (1, 2),
        e: Point = Point(1.0),
        g: float = float("nan"),
        h: FrozenSet[str] = frozenset({"b", "a"}),
    ) -> None:
        pass

    props = f.parameters["properties"]
    assert f.parameters["required"] == ["a"]
    assert props["b"]["default"] == "x"
    assert props["c"]["default"] == "green"  # an Enum default is recorded as its value
    assert props["d"]["default"] == [1, 2]
    assert props["e"]["default"] == {"x": 1.0, "y": 0.0}
    assert "default" not in props["g"]  # NaN is not JSON
    assert props["h"]["default"] == ["a", "b"]
    check(f)


def test_optional_without_default_is_required_and_accepts_null():
    @tool
    def f(a: Optional[str]) -> Optional[str]:
        return a

    assert f.parameters["required"] == ["a"]
    validator = check(f)
    assert validator.is_valid({"a": None})
    assert not validator.is_valid({})
    assert f.execute({"a": None}) is None


def test_a_none_default_lets_a_plain_parameter_accept_null():
    @tool
    def f(a: int = None) -> Optional[int]:  # type: ignore[assignment]
        return a

    assert f.parameters["properties"]["a"] == {"type": ["integer", "null"], "default": None}
    assert check(f).is_valid({"a": None})


def test_the_top_level_schema_refuses_unknown_and_missing_arguments():
    @tool
    def f(a: int, b: int = 0) -> int:
        return a + b

    validator = check(f)
    assert validator.is_valid({"a": 1})
    assert not validator.is_valid({"a": 1, "c": 2})
    assert not validator.is_valid({"b": 1})


# -- parameter kinds ------------------------------------------------------------------------------


def test_keyword_only_parameters_are_described_and_passed_by_keyword():
    @tool
    def f(*, a: int, b: str = "z") -> str:
        return f"{a}{b}"

    assert f.parameters["required"] == ["a"]
    assert set(f.parameters["properties"]) == {"a", "b"}
    assert f.execute({"a": 1}) == "1z"
    assert f.execute({"b": "y", "a": 2}) == "2y"


def test_positional_only_parameters_are_passed_positionally_with_their_defaults_filled_in():
    @tool
    def f(a: int, b: int = 10, c: Color = Color.RED, /, d: int = 100, *, e: int = 1000) -> tuple:
        return a, b, c, d, e

    assert f.parameters["required"] == ["a"]
    assert f.execute({"a": 1}) == (1, 10, Color.RED, 100, 1000)
    assert f.execute({"a": 1, "b": 2, "c": "green", "d": 3, "e": 4}) == (1, 2, Color.GREEN, 3, 4)
    assert f.execute({"a": 1, "c": "green"}) == (1, 10, Color.GREEN, 100, 1000)  # b's default fills the gap
    assert f.execute({"a": 1, "d": 3}) == (1, 10, Color.RED, 3, 1000)


def test_star_args_is_refused_at_decoration_time_naming_function_and_parameter():
    def spread(*numbers: int) -> int:
        return sum(numbers)

    with pytest.raises(TypeError, match=r"\*numbers of .*spread"):
        tool(spread)


def test_star_star_kwargs_is_refused_at_decoration_time_naming_function_and_parameter():
    def options(name: str, **extra: str) -> None:
        pass

    with pytest.raises(TypeError, match=r"\*\*extra of .*options"):
        tool(options)


def test_a_parameter_without_annotation_is_refused_at_decoration_time():
    def f(a: int, b):  # noqa: ANN001
        pass

    with pytest.raises(TypeError, match=r"annotation on parameter 'b' of .*f"):
        tool(f)


@pytest.mark.parametrize(
    "hint",
    [bytes, Plain, Callable[[int], int], Dict[int, str], List[bytes], Optional[Plain], Node, Weird],
    ids=["bytes", "plain class", "Callable", "int keys", "list of bytes", "Optional plain", "recursive", "tuple enum"],
)
def test_a_type_the_schema_cannot_express_is_refused_at_decoration_time(hint):
    with pytest.raises(TypeError, match=r"parameter 'x' of .*one_parameter"):
        one_parameter(hint)


def test_an_annotation_that_does_not_resolve_is_refused_at_decoration_time():
    def f(a: NoSuchType) -> None:  # noqa: F821
        pass

    with pytest.raises(TypeError, match="cannot resolve the type hints of function .*f.*NoSuchType"):
        tool(f)


# -- conversion in execute ------------------------------------------------------------------------


def test_execute_converts_enum_and_attrs_arguments_including_nested_ones_and_list_items():
    seen = {}

    @tool
    def draw(
        shape: Shape,
        colors: List[Color],
        by_name: Dict[str, Point],
        maybe: Optional[Point] = None,
        pair: Tuple[Color, int] = (Color.RED, 0),
        either: Union[Level, str] = "none",
        unique: Set[Level] = frozenset(),
        pick: Literal[Color.RED, "other"] = "other",
    ) -> str:
        seen.update(locals())
        return "ok"

    assert (
        draw.execute(
            {
                "shape": {"color": "green", "corners": [{"x": 1}, {"x": 2, "y": 3}], "label": None},
                "colors": ["red", "green"],
                "by_name": {"origin": {"x": 0}},
                "maybe": {"x": 5},
                "pair": ["green", 7],
                "either": 2,
                "unique": [1, 2],
                "pick": "red",
            }
        )
        == "ok"
    )
    assert seen["shape"] == Shape(Color.GREEN, [Point(1), Point(2, 3)])
    assert seen["colors"] == [Color.RED, Color.GREEN]
    assert seen["by_name"] == {"origin": Point(0)}
    assert seen["maybe"] == Point(5)
    assert seen["pair"] == (Color.GREEN, 7)
    assert seen["either"] is Level.HIGH
    assert seen["unique"] == {Level.LOW, Level.HIGH}
    assert seen["pick"] is Color.RED

    draw.execute({"shape": {"color": "red", "corners": []}, "colors": [], "by_name": {}, "either": "free"})
    assert seen["maybe"] is None
    assert seen["either"] == "free"
    assert seen["pick"] == "other"


def test_execute_passes_plain_json_values_through_untouched():
    @tool
    def echo(items: List[int], table: Dict[str, Any]) -> tuple:
        return items, table

    items, table = [1, 2], {"k": [1]}
    got_items, got_table = echo.execute({"items": items, "table": table})
    assert got_items is items
    assert got_table is table


def test_execute_keeps_an_attrs_instance_given_directly():
    @tool
    def move(p: Point) -> Point:
        return p

    point = Point(1.0, 2.0)
    assert move.execute({"p": point}) is point


# -- docstrings -----------------------------------------------------------------------------------


def test_google_docstring_gives_the_summary_and_multi_line_argument_descriptions():
    @tool
    def f(city: str, days: int = 1) -> str:
        """Forecast the weather
        for a city.

        More detail that is not the summary.

        Args:
            city (str): the city,
                in English.
            days: how many days.

        Returns:
            days: not an argument.
        """
        return city

    assert f.description == "Forecast the weather for a city."
    assert f.parameters["properties"]["city"]["description"] == "the city, in English."
    assert f.parameters["properties"]["days"]["description"] == "how many days."


def test_numpy_docstring_gives_argument_descriptions():
    @tool
    def f(city: str, days: int = 1) -> str:
        """Forecast the weather.

        Parameters
        ----------
        city : str
            the city,
            in English.
        days : int, optional
            how many days.

        Returns
        -------
        str
            the forecast.
        """
        return city

    assert f.description == "Forecast the weather."
    assert f.parameters["properties"]["city"]["description"] == "the city, in English."
    assert f.parameters["properties"]["days"]["description"] == "how many days."


def test_sphinx_docstring_gives_argument_descriptions():
    @tool
    def f(city: str, days: int = 1) -> str:
        """Forecast the weather.

        :param city: the city,
            in English.
        :param int days: how many days.
        :returns: the forecast.
        """
        return city

    assert f.description == "Forecast the weather."
    assert f.parameters["properties"]["city"]["description"] == "the city, in English."
    assert f.parameters["properties"]["days"]["description"] == "how many days."


def test_a_summary_stops_at_a_section_without_a_blank_line_and_no_docstring_means_no_description():
    @tool
    def f(a: int) -> None:
        """Do one thing.
        Args:
            a: the thing.
        """

    @tool
    def g(a: int) -> None:
        pass

    assert f.description == "Do one thing."
    assert f.parameters["properties"]["a"]["description"] == "the thing."
    assert g.description == ""
    assert g.parameters["properties"]["a"] == {"type": "integer"}


def test_an_annotated_description_wins_over_the_docstring():
    @tool
    def f(a: Annotated[int, "from the hint"]) -> None:
        """Do.

        Args:
            a: from the docstring.
        """

    assert f.parameters["properties"]["a"]["description"] == "from the hint"


def test_a_tool_without_a_docstring_warns_that_the_model_gets_an_empty_description(caplog):
    import logging

    with caplog.at_level(logging.WARNING, logger="agcore_sync"):
        @tool
        def mystery(x: int) -> int:
            return x

    assert mystery.description == ""
    [record] = caplog.records
    assert '"mystery"' in record.getMessage() and "empty description" in record.getMessage()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="agcore_sync"):
        @tool(description="Return x.")
        def described(x: int) -> int:
            return x
    assert caplog.records == []
