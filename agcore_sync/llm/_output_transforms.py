"""Pure rewrites of an output JSON Schema into what each provider accepts.

* :func:`openai_strict` makes a schema fit OpenAI's strict mode the way the
  official ``openai`` SDK does for ``chat.completions.parse`` (every object
  gets ``additionalProperties: false`` unless it says otherwise, every
  property becomes required, ``default: null`` goes, single ``allOf`` and
  ``$ref`` with siblings are inlined). The result equals the SDK's, key order
  included, so a pydantic model goes out exactly as the SDK sends it.
* :func:`fits_openai_strict` tells whether a rewritten schema stays inside
  the subset strict mode documents (see its docstring); when it does not,
  the schema goes with ``strict: false``.
* :func:`anthropic_schema` makes a schema fit Anthropic's structured outputs
  the way the official ``anthropic`` SDK does for ``messages.parse``: objects
  closed, the keywords the API does not take moved into the description as
  text, so the model may still follow them. One addition: a ``type`` list
  (``["integer", "null"]``, which ``@tool``-style schemas use for Optional)
  becomes an ``anyOf`` of one branch per type instead of an error.

Each function returns a new schema; its argument is never changed. None of
this code comes from the SDKs: it reproduces their documented output, and
``tests/llm/test_output_sdk_oracle.py`` checks it against them.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, List

__all__ = ["anthropic_schema", "fits_openai_strict", "openai_strict"]

#: Keywords OpenAI strict mode documents as supported ("Supported schemas" in
#: the Structured Outputs guide, platform.openai.com/docs/guides/structured-outputs,
#: read 2026-12): the types, object/array/enum/anyOf structure, $defs/$ref,
#: string ``pattern``/``format``, number bounds, ``minItems``/``maxItems``.
#: ``default`` is refused ("'default' is not permitted"), as are ``allOf``,
#: ``not``, ``if``/``then``/``else``, ``prefixItems``, ``uniqueItems``.
_STRICT_KEYWORDS = frozenset(
    {
        "type", "properties", "required", "additionalProperties", "items", "anyOf", "enum", "const",
        "$ref", "$defs", "definitions", "description", "title", "$schema", "pattern", "format",
        "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "minItems", "maxItems",
    }
)

#: String formats Anthropic structured outputs accept (the SDK keeps these
#: and moves any other into the description).
_ANTHROPIC_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)

# Which keywords belong to which JSON type, to split a ``type`` list.
_KEYWORDS_OF_TYPE = {
    "object": {"properties", "required", "additionalProperties", "patternProperties", "propertyNames",
               "minProperties", "maxProperties"},
    "array": {"items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains"},
    "string": {"format", "pattern", "minLength", "maxLength"},
    "number": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
}
_KEYWORDS_OF_TYPE["integer"] = _KEYWORDS_OF_TYPE["number"]


def openai_strict(schema: Dict[str, Any]) -> Dict[str, Any]:
    """Return ``schema`` rewritten for OpenAI strict mode, as the ``openai`` SDK rewrites it."""
    root = copy.deepcopy(schema)
    return _strict(root, root)


def _strict(node: Any, root: Dict[str, Any]) -> Dict[str, Any]:
    if not isinstance(node, dict):
        raise TypeError(f"a JSON Schema must be an object here, got {node!r}")
    for key in ("$defs", "definitions"):
        defs = node.get(key)
        if isinstance(defs, dict):
            for sub in defs.values():
                _strict(sub, root)
    if node.get("type") == "object" and "additionalProperties" not in node:
        node["additionalProperties"] = False
    properties = node.get("properties")
    if isinstance(properties, dict):
        node["required"] = list(properties)
        node["properties"] = {key: _strict(sub, root) for key, sub in properties.items()}
    items = node.get("items")
    if isinstance(items, dict):
        node["items"] = _strict(items, root)
    any_of = node.get("anyOf")
    if isinstance(any_of, list):
        node["anyOf"] = [_strict(sub, root) for sub in any_of]
    all_of = node.get("allOf")
    if isinstance(all_of, list):
        if len(all_of) == 1:
            node.update(_strict(all_of[0], root))
            node.pop("allOf")
        else:
            node["allOf"] = [_strict(sub, root) for sub in all_of]
    if "default" in node and node["default"] is None:
        del node["default"]  # null defaults add nothing: the property is nullable anyway
    ref = node.get("$ref")
    if ref and len(node) > 1:
        # Strict mode refuses "$ref" next to other keywords: inline the target,
        # the node's own keywords winning, and make the result strict too.
        target = resolve_ref(root, ref)
        node.update({**target, **node})
        del node["$ref"]
        return _strict(node, root)
    return node


def resolve_ref(root: Dict[str, Any], ref: str) -> Dict[str, Any]:
    """Return the subschema a local ``$ref`` (``#`` or ``#/a/b``) points at.

    Raises:
        ValueError: the reference is not local or points at nothing.
    """
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        raise ValueError(f"only local $ref (starting with '#') is supported, got {ref!r}")
    found: Any = root
    for part in ref[2:].split("/"):
        key = part.replace("~1", "/").replace("~0", "~")
        if isinstance(found, dict) and key in found:
            found = found[key]
        elif isinstance(found, list) and key.isdigit() and int(key) < len(found):
            found = found[int(key)]
        else:
            raise ValueError(f"$ref {ref!r} points at nothing in the schema")
    if not isinstance(found, dict):
        raise ValueError(f"$ref {ref!r} does not point at a schema object")
    return found


def fits_openai_strict(schema: Dict[str, Any]) -> bool:
    """Tell whether a schema (already through :func:`openai_strict`) fits strict mode.

    The root is an object; every object lists all its properties as required
    and has ``additionalProperties: false``; only the keywords of
    ``_STRICT_KEYWORDS`` appear.
    """
    return schema.get("type") == "object" and _fits(schema)


def _fits(node: Any) -> bool:
    if not isinstance(node, dict) or not set(node) <= _STRICT_KEYWORDS:
        return False
    kinds = node.get("type")
    is_object = kinds == "object" or (isinstance(kinds, list) and "object" in kinds) or "properties" in node
    if is_object:
        properties = node.get("properties", {})
        if node.get("additionalProperties") is not False or node.get("required") != list(properties):
            return False
    if "items" in node and not _fits(node["items"]):
        return False
    children: List[Any] = [*node.get("properties", {}).values(), *node.get("anyOf", ())]
    for key in ("$defs", "definitions"):
        children.extend(node.get(key, {}).values())
    return all(_fits(child) for child in children)


def without_defaults(schema: Any) -> Any:
    """Return ``schema`` without ``default`` keywords (strict mode refuses them)."""
    if isinstance(schema, list):
        return [without_defaults(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    result = {}
    for key, value in schema.items():
        if key == "default":
            continue
        if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            result[key] = {name: without_defaults(sub) for name, sub in value.items()}
        elif key in ("items", "anyOf", "allOf", "oneOf", "prefixItems", "additionalProperties", "not"):
            result[key] = without_defaults(value)
        else:
            result[key] = value
    return result


def anthropic_schema(schema: Dict[str, Any]) -> Dict[str, Any]:
    """Return ``schema`` rewritten for Anthropic structured outputs, as the ``anthropic`` SDK does.

    Raises:
        ValueError: a subschema has no ``type``, ``anyOf``, ``oneOf``,
            ``allOf``, ``const`` or ``enum`` (the SDK refuses those too).
    """
    rest = dict(schema)
    result: Dict[str, Any] = {}
    defs = rest.pop("$defs", None)
    if defs is not None:
        result["$defs"] = {name: anthropic_schema(sub) for name, sub in defs.items()}
    ref = rest.pop("$ref", None)
    if ref is not None:
        result["$ref"] = ref
        return result
    kind = rest.pop("type", None)
    any_of, one_of, all_of = rest.pop("anyOf", None), rest.pop("oneOf", None), rest.pop("allOf", None)
    enum = rest.get("enum")
    if isinstance(enum, list) and enum and all(_is_primitive(value) for value in enum):
        result["enum"] = list(rest.pop("enum"))
    if "const" in rest and _is_primitive(rest["const"]):
        result["const"] = rest.pop("const")
    literal = "enum" in result or "const" in result
    if literal:
        kind = None
    if isinstance(kind, list) and not isinstance(any_of, list):
        return _split_type_list(kind, rest, result)
    if isinstance(any_of, list):
        result["anyOf"] = [anthropic_schema(sub) for sub in any_of]
    elif isinstance(one_of, list):
        result["anyOf"] = [anthropic_schema(sub) for sub in one_of]
    elif isinstance(all_of, list):
        result["allOf"] = [anthropic_schema(sub) for sub in all_of]
    elif not literal:
        if kind is None:
            raise ValueError(
                "every subschema needs a 'type', 'anyOf', 'oneOf' or 'allOf', or a 'const' or non-empty 'enum' "
                f"of strings, numbers, booleans or null; got {schema!r}"
            )
        result["type"] = kind
    _move(rest, result, "description")
    _move(rest, result, "title")
    if kind == "object":
        result["properties"] = {key: anthropic_schema(sub) for key, sub in rest.pop("properties", {}).items()}
        rest.pop("additionalProperties", None)
        result["additionalProperties"] = False
        required = rest.pop("required", None)
        if required is not None:
            result["required"] = list(required) if isinstance(required, list) else required
    elif kind == "string":
        fmt = rest.pop("format", None)
        if fmt and fmt in _ANTHROPIC_FORMATS:
            result["format"] = fmt
        elif fmt:
            rest["format"] = fmt  # not supported: it goes to the description, after the others
    elif kind == "array":
        items = rest.pop("items", None)
        if items is not None:
            result["items"] = anthropic_schema(items)
        min_items = rest.pop("minItems", None)
        if min_items in (0, 1):
            result["minItems"] = min_items
        elif min_items is not None:
            rest["minItems"] = min_items
    if rest:  # what the API does not take becomes a hint in the description
        hint = "{" + ", ".join(f"{key}: {value}" for key, value in rest.items()) + "}"
        description = result.get("description")
        result["description"] = (description + "\n\n" if description is not None else "") + hint
    return result


def _split_type_list(kinds: List[Any], rest: Dict[str, Any], result: Dict[str, Any]) -> Dict[str, Any]:
    """Turn ``{"type": [a, b], ...}`` into ``{"anyOf": [{"type": a, ...}, {"type": b, ...}]}``."""
    owned = set().union(*(_KEYWORDS_OF_TYPE.get(kind, set()) for kind in kinds))
    shared = {key: value for key, value in rest.items() if key not in owned}
    branches = []
    for kind in kinds:
        mine = {key: value for key, value in rest.items() if key in _KEYWORDS_OF_TYPE.get(kind, ())}
        branches.append(anthropic_schema({"type": kind, **mine}))
    result["anyOf"] = branches
    _move(shared, result, "description")
    _move(shared, result, "title")
    if shared:
        hint = "{" + ", ".join(f"{key}: {value}" for key, value in shared.items()) + "}"
        description = result.get("description")
        result["description"] = (description + "\n\n" if description is not None else "") + hint
    return result


def _move(source: Dict[str, Any], target: Dict[str, Any], key: str) -> None:
    value = source.pop(key, None)
    if value is not None:
        target[key] = value


def _is_primitive(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))
