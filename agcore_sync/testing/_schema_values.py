"""A value valid against a JSON Schema, made deterministically from a random generator.

Used by :class:`~agcore_sync.testing.TestModel` for tool arguments and
structured answers. The rule: walk the schema (``$ref`` into the same
document, ``allOf`` merged, the first fitting branch of ``anyOf`` /
``oneOf`` in an order the generator picks), make the smallest value each
keyword allows (required properties only, ``minItems`` items or one, a
string of ``minLength`` letters or a few, a number inside its bounds),
then check the whole value with ``jsonschema``; a value that fails (a
``pattern``, a ``not``) is made again from the next draws, a bounded
number of times. The same schema and the same generator state give the
same value.
"""

from __future__ import annotations

import math
import random
import string
from typing import Any, Dict, List, Optional

__all__ = ["ATTEMPTS", "SchemaValueError", "value_for"]

#: How many values are made before giving up on a schema whose keywords
#: this walk does not produce directly (``pattern``, ``not``...).
ATTEMPTS = 25
#: Deepest nesting followed (a recursive ``$ref`` stops at its optional parts).
_MAX_DEPTH = 12
_FORMATS = {
    "date": "2026-01-15", "date-time": "2026-01-15T09:30:00Z", "time": "09:30:00Z", "email": "ada@example.com",
    "uri": "https://example.com/a", "url": "https://example.com/a", "uuid": "123e4567-e89b-42d3-a456-426614174000",
    "hostname": "example.com", "ipv4": "192.0.2.1", "ipv6": "2001:db8::1",
}


class SchemaValueError(ValueError):
    """No valid value could be made for a schema (its message says why)."""


def value_for(schema: Any, rng: random.Random) -> Any:
    """Return a value valid against ``schema``, drawn from ``rng``.

    Raises:
        SchemaValueError: the schema is invalid, or no draw of
            :data:`ATTEMPTS` made a valid value.
    """
    import jsonschema  # a runtime dependency, loaded with the first generated value

    try:
        validator_cls = jsonschema.validators.validator_for(schema)
        validator_cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise SchemaValueError(f"not a valid JSON Schema: {exc.message}") from None
    validator = validator_cls(schema)
    last = ""
    for _ in range(ATTEMPTS):
        value = _Walk(schema, rng).value(schema, 0)
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
        if error is None:
            return value
        last = error.message
    raise SchemaValueError(f"no value made in {ATTEMPTS} draws is valid: {last}")


class _Walk:
    def __init__(self, root: Any, rng: random.Random) -> None:
        self.root = root
        self.rng = rng

    def value(self, schema: Any, depth: int) -> Any:
        if schema is True or schema == {} or depth > _MAX_DEPTH:
            return self._word(1, 6)
        if not isinstance(schema, dict):
            return None
        schema = self._resolved(schema)
        if "const" in schema:
            return schema["const"]
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return self.rng.choice(schema["enum"])
        if isinstance(schema.get("examples"), list) and schema["examples"] and self.rng.random() < 0.5:
            return schema["examples"][0]
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list) and schema[key]:
                branches = list(schema[key])
                self.rng.shuffle(branches)
                rest = {k: v for k, v in schema.items() if k != key}
                return self.value(self._merged(rest, branches[0]), depth + 1)
        kind = self._type(schema)
        maker = getattr(self, f"_{kind}", None)
        return maker(schema, depth) if maker is not None else None

    def _resolved(self, schema: Dict[str, Any]) -> Dict[str, Any]:
        for _ in range(_MAX_DEPTH):
            ref = schema.get("$ref")
            if not (isinstance(ref, str) and ref.startswith("#")):
                break
            target: Any = self.root
            for part in ref[1:].split("/"):
                if part:
                    target = target.get(part.replace("~1", "/").replace("~0", "~"), {}) \
                        if isinstance(target, dict) else {}
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            schema = self._merged(target if isinstance(target, dict) else {}, rest)
        if isinstance(schema.get("allOf"), list):
            merged = {k: v for k, v in schema.items() if k != "allOf"}
            for part in schema["allOf"]:
                merged = self._merged(merged, self._resolved(part) if isinstance(part, dict) else {})
            schema = merged
        return schema

    @staticmethod
    def _merged(base: Dict[str, Any], extra: Any) -> Dict[str, Any]:
        if not isinstance(extra, dict):
            return dict(base)
        merged = {**base, **extra}
        if isinstance(base.get("properties"), dict) and isinstance(extra.get("properties"), dict):
            merged["properties"] = {**base["properties"], **extra["properties"]}
        if isinstance(base.get("required"), list) and isinstance(extra.get("required"), list):
            merged["required"] = list(dict.fromkeys(base["required"] + extra["required"]))
        return merged

    def _type(self, schema: Dict[str, Any]) -> str:
        kind = schema.get("type")
        if isinstance(kind, list):
            usable = [k for k in kind if k != "null"] or ["null"]
            return str(self.rng.choice(usable))
        if isinstance(kind, str):
            return kind
        if "properties" in schema or "required" in schema:
            return "object"
        if "items" in schema or "prefixItems" in schema:
            return "array"
        if any(k in schema for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")):
            return "number"
        return "string"

    # -- one maker per type ---------------------------------------------------

    def _object(self, schema: Dict[str, Any], depth: int) -> Dict[str, Any]:
        properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        names: List[str] = [n for n in schema.get("required") or () if isinstance(n, str)]
        extra = [n for n in properties if n not in names]
        while len(names) < int(schema.get("minProperties") or 0) and extra:
            names.append(extra.pop(0))
        result = {}
        for name in names:
            result[name] = self.value(properties.get(name, schema.get("additionalProperties", True)), depth + 1)
        return result

    def _array(self, schema: Dict[str, Any], depth: int) -> List[Any]:
        prefix = schema.get("prefixItems") if isinstance(schema.get("prefixItems"), list) else []
        items = schema.get("items", True)
        low = int(schema.get("minItems") or 0)
        high = schema.get("maxItems")
        count = max(low, len(prefix), 1)
        if isinstance(high, int):
            count = min(count, high)
        result: List[Any] = []
        for index in range(count):
            item_schema = prefix[index] if index < len(prefix) else items
            value = self.value(item_schema, depth + 1)
            for _ in range(5):
                if not schema.get("uniqueItems") or value not in result:
                    break
                value = self.value(item_schema, depth + 1)
            result.append(value)
        return result

    def _string(self, schema: Dict[str, Any], depth: int) -> str:
        fixed = _FORMATS.get(str(schema.get("format", "")))
        if fixed is not None:
            return fixed
        low = int(schema.get("minLength") or 0)
        high = schema.get("maxLength")
        length = max(low, min(5, high) if isinstance(high, int) else 5)
        if isinstance(high, int):
            length = min(length, high)
        return self._word(length, length)

    def _word(self, low: int, high: int) -> str:
        return "".join(self.rng.choice(string.ascii_lowercase) for _ in range(self.rng.randint(low, high)))

    def _integer(self, schema: Dict[str, Any], depth: int) -> int:
        low, high = self._bounds(schema, integer=True)
        step = schema.get("multipleOf")
        if isinstance(step, int) and step > 0:
            first, last = math.ceil(low / step), math.floor(high / step)
            return step * self.rng.randint(first, max(first, last))
        return self.rng.randint(math.ceil(low), max(math.ceil(low), math.floor(high)))

    def _number(self, schema: Dict[str, Any], depth: int) -> float:
        low, high = self._bounds(schema, integer=False)
        step = schema.get("multipleOf")
        if isinstance(step, (int, float)) and step > 0:
            first, last = math.ceil(low / step), math.floor(high / step)
            return step * self.rng.randint(first, max(first, last))
        return round(self.rng.uniform(low, high), 2) if high > low else float(low)

    def _bounds(self, schema: Dict[str, Any], *, integer: bool) -> tuple[float, float]:
        nudge = 1 if integer else 0.01
        low: Optional[float] = schema.get("minimum")
        high: Optional[float] = schema.get("maximum")
        if isinstance(schema.get("exclusiveMinimum"), (int, float)) and not isinstance(
                schema.get("exclusiveMinimum"), bool):
            low = max(low if low is not None else -math.inf, schema["exclusiveMinimum"] + nudge)
        if isinstance(schema.get("exclusiveMaximum"), (int, float)) and not isinstance(
                schema.get("exclusiveMaximum"), bool):
            high = min(high if high is not None else math.inf, schema["exclusiveMaximum"] - nudge)
        if low is None and high is None:
            return 0, 100
        if low is None:
            return min(0, high - 100) if high < 0 else 0, high  # type: ignore[operator]
        if high is None:
            return low, low + 100
        return low, high

    def _boolean(self, schema: Dict[str, Any], depth: int) -> bool:
        return self.rng.random() < 0.5

    def _null(self, schema: Dict[str, Any], depth: int) -> None:
        return None
