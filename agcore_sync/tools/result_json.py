"""How a tool's result becomes the text the model reads.

A str is itself. Anything else is JSON (``ensure_ascii=False``), with the
everyday Python values a tool returns (a Django query, a dataclass, a date)
written the way a reader expects:

=============================================  =====================================
value                                          JSON
=============================================  =====================================
``datetime``, ``date``, ``time``               ISO 8601 string (``isoformat()``)
``timedelta``                                  seconds, as a number
``Decimal``, ``UUID``, ``Path``                string (``str()``)
``Enum`` member                                its value (converted again)
``set``, ``frozenset``                         array (sorted when the items sort)
``tuple``                                      array; a ``NamedTuple`` is an object
dataclass, attrs, pydantic instance            object of its fields
dict keys that are not str                     converted as above, then ``str()``
=============================================  =====================================

Anything else (bytes, arbitrary objects) has no obvious form: it raises
:class:`~agcore_sync.tools.error.ToolExecutionError` naming the type.
"""

from __future__ import annotations

import datetime
import enum
import json
import pathlib
import sys
from typing import Any, List

import attrs

from agcore_sync.tools.error import ToolExecutionError

__all__ = ["result_text"]

_SCALARS = (str, int, float, bool, type(None))
# Types shown as their str(), by module and name: a module nobody loaded
# (decimal, uuid) cannot have made the value, so it is never imported here.
_AS_STRING = (("decimal", "Decimal"), ("uuid", "UUID"))
_ISO = (datetime.datetime, datetime.date, datetime.time)


class _NoJsonForm(TypeError):
    """A value inside the result has no JSON form; the message names its type."""


def result_text(output: Any) -> str:
    """Return the text the model gets for a tool's ``output``.

    Raises:
        ToolExecutionError: a value inside ``output`` has no JSON form; the
            message names its type (no tool name: the caller adds it once).
    """
    if isinstance(output, str):
        return output
    try:
        return json.dumps(_plain(output), ensure_ascii=False)
    except (_NoJsonForm, ValueError, RecursionError) as exc:
        raise ToolExecutionError(
            f"the result is not JSON-serialisable ({exc}); return str, numbers, bool, None, lists and dicts "
            "of them, or dates, Decimal, UUID, Enum, sets, dataclasses, attrs or pydantic objects"
        ) from exc


def _plain(value: Any) -> Any:
    """Return ``value`` made of JSON's own types (see the module docstring)."""
    if isinstance(value, _SCALARS) and not isinstance(value, enum.Enum):
        return value
    if isinstance(value, dict):
        return {_key(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, tuple):
        fields = getattr(value, "_fields", None)
        if fields is not None:  # a NamedTuple
            return {name: _plain(item) for name, item in zip(fields, value)}
        return [_plain(item) for item in value]
    if isinstance(value, enum.Enum):
        return _plain(value.value)
    if isinstance(value, _ISO):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, pathlib.PurePath) or _is_loaded_type(value, _AS_STRING):
        return str(value)
    if isinstance(value, (set, frozenset)):
        return _sorted_if_possible([_plain(item) for item in value])
    if hasattr(type(value), "__dataclass_fields__"):  # a dataclass instance (the module is loaded)
        dataclasses = sys.modules["dataclasses"]
        return {field.name: _plain(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if attrs.has(type(value)):
        return {field.name: _plain(getattr(value, field.name)) for field in attrs.fields(type(value))}
    if _is_pydantic_model(value):
        return value.model_dump(mode="json")
    raise _NoJsonForm(f"a value of type {type(value).__name__} has no JSON form")


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    plain = _plain(key)
    return plain if isinstance(plain, str) else json.dumps(plain, ensure_ascii=False)


def _sorted_if_possible(items: List[Any]) -> List[Any]:
    try:
        return sorted(items)
    except TypeError:
        return items


def _is_loaded_type(value: Any, names: Any) -> bool:
    for module_name, type_name in names:
        module = sys.modules.get(module_name)
        if module is not None and isinstance(value, getattr(module, type_name)):
            return True
    return False


def _is_pydantic_model(value: Any) -> bool:
    # Never import pydantic: if it is not loaded, no value can be one of its models.
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and isinstance(value, pydantic.BaseModel)

