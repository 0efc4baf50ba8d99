"""Tool arguments checked against the tool's JSON Schema (Draft 2020-12).

:class:`~agcore_sync.tools.registry.ToolRegistry` compiles one
:class:`ArgumentValidator` per registered tool, on its first call, and keeps it
until the tool is unregistered.

jsonschema is imported by :func:`compile_validator`, not at import time: it
is slow to import, and ``import agcore_sync`` must stay cheap.

Speed: even compiled, a jsonschema check costs about 10 microseconds, a large
part of a tool round. Most tool schemas are flat (an object of typed
properties, ``required``, ``additionalProperties``), and for those a plain
Python pre-check proves validity in about one microsecond. The pre-check
only ever answers "valid" or "not sure"; on "not sure" jsonschema decides, so
every verdict on invalid arguments and every error message is jsonschema's.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from agcore_sync._http import peer_json
from agcore_sync.tools.error import InvalidArgumentsError, ToolError

__all__ = ["ArgumentValidator", "compile_validator"]

_Test = Callable[[Any], bool]

# Each test accepts a subset of what jsonschema's type checker accepts
# (``type(v) is int`` where jsonschema takes int subclasses too): a value it
# rejects only goes on to jsonschema.
_TYPE_TESTS: Dict[str, _Test] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: type(v) is int or (type(v) is float and v.is_integer()),
    "number": lambda v: type(v) is int or type(v) is float,
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
    "array": lambda v: type(v) is list,
    "object": lambda v: type(v) is dict,
}

# Keywords that never affect validity.
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly"})
_TOP_KEYWORDS = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties"}


def _any(value: Any) -> bool:
    return True


def _property_test(schema: Any) -> Optional[_Test]:
    """Return a test for a property schema made only of ``type`` and annotations, else None."""
    if not isinstance(schema, dict) or not schema.keys() <= _ANNOTATIONS | {"type"}:
        return None
    kind = schema.get("type")
    if kind is None:
        return None if "type" in schema else _any
    if isinstance(kind, str):
        return _TYPE_TESTS.get(kind)
    if isinstance(kind, list) and kind and all(isinstance(k, str) and k in _TYPE_TESTS for k in kind):
        tests = [_TYPE_TESTS[k] for k in kind]
        return lambda v: any(test(v) for test in tests)
    return None


def _quick_check(schema: Any) -> Optional[Callable[[Dict[str, Any]], bool]]:
    """Return a pre-check proving a dict valid against a flat ``schema``, or None for other schemas."""
    if not isinstance(schema, dict) or not schema.keys() <= _TOP_KEYWORDS or schema.get("type", "object") != "object":
        return None
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if not isinstance(properties, dict) or not isinstance(extra, bool):
        return None
    if not isinstance(required, list) or not all(isinstance(name, str) for name in required):
        return None
    tests = {}
    for name, subschema in properties.items():
        test = _property_test(subschema)
        if test is None:
            return None
        tests[name] = test

    def check(args: Dict[str, Any]) -> bool:
        for name in required:
            if name not in args:
                return False
        for name, value in args.items():
            test = tests.get(name)
            if test is None:
                if not extra:
                    return False
            elif not test(value):
                return False
        return True

    return check


class ArgumentValidator:
    """Validates one tool's arguments; built by :func:`compile_validator`."""

    __slots__ = ("tool_name", "_validator", "_quick")

    def __init__(self, tool_name: str, validator: Any, quick: Optional[Callable[[Dict[str, Any]], bool]]) -> None:
        self.tool_name = tool_name
        self._validator = validator
        self._quick = quick

    def validate(self, args: Any) -> None:
        """Return if ``args`` is a JSON object the schema accepts.

        Raises:
            InvalidArgumentsError: ``args`` is not a dict (it is never
                coerced: a JSON string stays a string; the model's text that
                was not JSON says why), holds ``NaN``/``Infinity`` or nests
                deeper than :data:`~agcore_sync._http.peer_json.MAX_DEPTH`,
                or the schema rejects it; the message gives the JSON path and
                jsonschema's message.
        """
        if isinstance(args, str):
            try:
                peer_json.loads(args)
            except ValueError as exc:
                raise InvalidArgumentsError(
                    f'arguments for tool "{self.tool_name}" are not valid JSON ({exc}); send a JSON object',
                    self.tool_name,
                ) from None
        if not isinstance(args, dict):
            raise InvalidArgumentsError(
                f'arguments for tool "{self.tool_name}" must be a JSON object, got {type(args).__name__}',
                self.tool_name,
            )
        try:
            peer_json.check_value(args)
        except ValueError as exc:
            raise InvalidArgumentsError(f'invalid arguments for tool "{self.tool_name}": {exc}',
                                        self.tool_name) from None
        if self._quick is not None and self._quick(args):
            return
        if self._validator.is_valid(args):
            return
        from jsonschema.exceptions import best_match

        error = best_match(self._validator.iter_errors(args))
        raise InvalidArgumentsError(
            f'invalid arguments for tool "{self.tool_name}" at {error.json_path}: {error.message}', self.tool_name
        )


def compile_validator(tool_name: str, schema: Any) -> ArgumentValidator:
    """Check ``schema`` and return a validator for it.

    Raises:
        ToolError: ``schema`` is not a valid Draft 2020-12 schema
            (``recoverable=False``: the tool's definition must be fixed).
    """
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise ToolError(
            f'tool "{tool_name}" has an invalid parameters schema: {exc.message}; fix the tool\'s definition',
            tool_name,
            recoverable=False,
        ) from exc
    return ArgumentValidator(tool_name, Draft202012Validator(schema), _quick_check(schema))
