"""Tool results of everyday Python types reach the model as a reader expects; failures are logged."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import json
import logging
import pathlib
import uuid
from typing import NamedTuple

import attrs
import pytest

from agcore_sync.tools.error import ToolError, ToolExecutionError
from agcore_sync.tools.function import tool
from agcore_sync.tools.registry import ToolRegistry


class Colour(enum.Enum):
    RED = "red"


class Point(NamedTuple):
    x: int
    y: int


@dataclasses.dataclass
class Row:
    when: datetime.date
    price: decimal.Decimal


@attrs.define
class Item:
    name: str
    tags: frozenset


def returning(value):
    @tool(name="when")
    def when() -> object:
        """Return the value under test."""
        return value

    return when


@pytest.fixture
def registry():
    with ToolRegistry() as reg:
        yield reg


@pytest.mark.parametrize("value, expected", [
    (datetime.datetime(2026, 12, 1, 18, 30, tzinfo=datetime.timezone.utc), '"2026-12-01T18:30:00+00:00"'),
    (datetime.date(2026, 12, 1), '"2026-12-01"'),
    (datetime.time(9, 5), '"09:05:00"'),
    (datetime.timedelta(minutes=1, seconds=30), "90.0"),
    (decimal.Decimal("19.99"), '"19.99"'),
    (uuid.UUID("12345678-1234-5678-1234-567812345678"), '"12345678-1234-5678-1234-567812345678"'),
    (Colour.RED, '"red"'),
    ({3, 1, 2}, "[1, 2, 3]"),
    ((1, "a"), '[1, "a"]'),
    (Point(1, 2), '{"x": 1, "y": 2}'),
    (pathlib.PurePosixPath("/tmp/a.txt"), '"/tmp/a.txt"'),
    (Row(datetime.date(2026, 1, 2), decimal.Decimal("1.50")), '{"when": "2026-01-02", "price": "1.50"}'),
    (Item("pen", frozenset({"b", "a"})), '{"name": "pen", "tags": ["a", "b"]}'),
    ({"rows": [Point(0, 1)], 7: Colour.RED}, '{"rows": [{"x": 0, "y": 1}], "7": "red"}'),
], ids=lambda v: type(v).__name__)
def test_everyday_values_are_serialised_as_a_reader_expects(registry, value, expected):
    registry.register(returning(value))
    invocation = registry.invoke("when", {})
    assert invocation.ok, invocation.error
    assert invocation.content() == expected
    json.loads(invocation.content())


def test_a_pydantic_model_is_its_json_object(registry):
    pydantic = pytest.importorskip("pydantic")

    class City(pydantic.BaseModel):
        name: str
        founded: datetime.date

    registry.register(returning(City(name="Rome", founded=datetime.date(753, 4, 21))))
    assert json.loads(registry.invoke("when", {}).content()) == {"name": "Rome", "founded": "0753-04-21"}


def test_a_value_with_no_obvious_form_is_a_clear_error_naming_its_type_and_the_tool_once(registry, caplog):
    registry.register(returning({"blob": b"\x00\x01"}))
    invocation = registry.invoke("when", {})
    assert isinstance(invocation.error, ToolExecutionError)
    assert "bytes" in str(invocation.error)
    assert invocation.content().count('"when"') == 1


def test_an_unexpected_exception_is_logged_with_its_traceback_and_the_model_reads_the_name_once(registry, caplog):
    @tool
    def divide(a: int, b: int) -> float:
        """Divide a by b."""
        return a / b

    registry.register(divide)
    with caplog.at_level(logging.DEBUG, logger="agcore_sync"):
        invocation = registry.invoke("divide", {"a": 1, "b": 0})
    assert invocation.content() == 'Error in tool "divide": ZeroDivisionError: division by zero'
    [record] = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert record.name.startswith("agcore_sync.tools")
    assert 'tool "divide" raised ZeroDivisionError' in record.getMessage()
    assert record.exc_info is not None and record.exc_info[0] is ZeroDivisionError


def test_a_tool_error_raised_on_purpose_is_logged_at_debug_only(registry, caplog):
    @tool
    def weather(city: str) -> str:
        """Tell the weather of a city."""
        raise ToolError(f"no such city: {city}")

    registry.register(weather)
    with caplog.at_level(logging.DEBUG, logger="agcore_sync"):
        invocation = registry.invoke("weather", {"city": "Atlantis"})
    assert invocation.content() == 'Error in tool "weather": no such city: Atlantis'
    levels = [r.levelno for r in caplog.records if r.name.startswith("agcore_sync.tools")]
    assert levels == [logging.DEBUG]
    assert caplog.records[-1].exc_info is not None
