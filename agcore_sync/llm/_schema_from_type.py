"""JSON Schema (Draft 2020-12) from type hints, and the converters that go with it.

Each type hint becomes a pair: the schema of its JSON form, and a converter
from that JSON form back to the Python type (None where the JSON value is
already right, so a tool with plain parameters pays nothing per call).

========================  ==================================================
hint                      schema (and conversion)
========================  ==================================================
str int float bool None   string, integer, number, boolean, null
Any                       {} (anything)
Optional[X], X | None     X that also accepts null
Union[A, B]               anyOf (converted by the first branch that fits)
list[X], Sequence[X]      array of X
set[X], frozenset[X]      array of X with uniqueItems (to a set)
tuple[X, Y]               prefixItems, minItems = maxItems = 2 (to a tuple)
tuple[X, ...]             array of X (to a tuple)
dict[str, X], Mapping     object with additionalProperties X
Literal[a, b]             enum (with its type when all values share one)
an Enum subclass          enum of its values (to the member)
an attrs class            object of its init fields (to an instance)
a dataclass               object of its init fields (to an instance)
a TypedDict               object of its keys (to a dict)
Annotated[X, "text"]      X with that description
========================  ==================================================

A class's docstring gives the object's description (its summary) and each
field's (its ``Args:`` or ``Attributes:`` entries). Anything else (bytes,
Callable, a plain class, dict with non-str keys) raises TypeError naming
where it was found; so does a recursive class, unless the builder was made
with ``recursive=True``: the class then goes to ``$defs`` and is referenced
with ``$ref`` (``#`` for the root class itself), see :meth:`SchemaBuilder.root`.

``@tool`` (``tools/function.py``) and structured output (``llm/output.py``)
both build their schemas here; ``owner`` names the caller in error messages.
"""

from __future__ import annotations

import collections.abc
import enum
import inspect
import math
import sys
import types
import typing
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

import attrs

from agcore_sync.llm._docstring import parse_docstring

__all__ = ["Converter", "SchemaBuilder", "accepts", "is_typeddict", "json_default", "nullable", "with_details"]

#: Turns a JSON value into the Python value a hint asks for; None = as is.
Converter = Optional[Callable[[Any], Any]]

_NONE = type(None)
_PRIMITIVES = {str: "string", int: "integer", float: "number", bool: "boolean", _NONE: "null"}
_UNIONS = (typing.Union, getattr(types, "UnionType", typing.Union))
_ARRAYS = (list, collections.abc.Sequence, collections.abc.MutableSequence, collections.abc.Iterable)
_SETS = (set, frozenset, collections.abc.Set, collections.abc.MutableSet)
_OBJECTS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)
_COMBINERS = frozenset({"anyOf", "oneOf", "allOf", "not", "$ref", "const"})


class SchemaBuilder:
    """Build schemas and converters for the hints of one function.

    Args:
        localns: extra names for resolving string annotations (an attrs
            class's field hints, for one).
        owner: who asks, named at the start of every error message.
        recursive: allow recursive classes (through ``$defs`` / ``$ref``).
    """

    def __init__(
        self, localns: Optional[Mapping[str, Any]] = None, *, owner: str = "@tool", recursive: bool = False
    ) -> None:
        self._localns = dict(localns or {})
        self._owner = owner
        self._recursive = recursive
        self._open: List[type] = []  # classes being built, to catch recursion
        self._defs: Dict[str, Dict[str, Any]] = {}  # $defs of recursive classes, by name
        self._def_names: Dict[type, str] = {}
        self._converters: Dict[type, Callable[[Any], Any]] = {}

    def root(self, hint: Any, where: str) -> Tuple[Dict[str, Any], Converter]:
        """Return the schema of a whole document: ``build`` plus its ``$defs``.

        A recursive root class is inlined and refers to itself as ``#``.
        """
        schema, convert = self.build(hint, where)
        defs = dict(self._defs)
        ref = schema.get("$ref") if list(schema) == ["$ref"] else None
        if ref is not None and ref.startswith("#/$defs/"):
            schema = defs.pop(ref[len("#/$defs/") :])
            schema, defs = _retarget(schema, ref), {k: _retarget(v, ref) for k, v in defs.items()}
        if defs:
            schema = {**schema, "$defs": defs}
        return schema, convert

    def hints(self, obj: Any, what: str) -> Dict[str, Any]:
        """Return the resolved type hints of ``obj`` (a function or a class)."""
        try:
            return typing.get_type_hints(obj, localns=self._localns, include_extras=True)
        except Exception as exc:  # NameError, or TypeError from a bad annotation
            raise TypeError(f"{self._owner} cannot resolve the type hints of {what}: {exc}") from exc

    def build(self, hint: Any, where: str) -> Tuple[Dict[str, Any], Converter]:
        """Return the schema and converter of ``hint``; ``where`` names it in errors."""
        origin = typing.get_origin(hint)
        args = typing.get_args(hint)
        if origin is typing.Annotated:
            schema, convert = self.build(args[0], where)
            text = next((extra for extra in args[1:] if isinstance(extra, str)), None)
            return (dict(schema, description=text) if text else schema), convert
        if hasattr(hint, "__supertype__"):  # typing.NewType
            return self.build(hint.__supertype__, where)
        if hint is Any:
            return {}, None
        if isinstance(hint, type):
            if hint in _PRIMITIVES:
                return {"type": _PRIMITIVES[hint]}, None
            if issubclass(hint, enum.Enum):
                return _enum_schema(hint, where, self._owner), hint
            if attrs.has(hint) or _is_dataclass(hint) or is_typeddict(hint):
                return self._object_class(hint, where)
        if origin is typing.Literal:
            return _literal(args, where, self._owner)
        if origin in _UNIONS:
            return self._union(args, where)
        return self._container(hint, origin or hint, args, where)

    def _container(self, hint: Any, origin: Any, args: Tuple[Any, ...], where: str) -> Tuple[Dict[str, Any], Converter]:
        if origin is tuple:
            return self._tuple(hint, args, where)
        if origin in _ARRAYS or origin in _SETS:
            schema: Dict[str, Any] = {"type": "array"}
            item_convert: Converter = None
            if args:
                schema["items"], item_convert = self.build(args[0], f"{where}, item")
            if origin in _SETS:
                schema["uniqueItems"] = True
                kind = frozenset if origin is frozenset else set
                return schema, _each(item_convert, kind)
            return schema, (_each(item_convert, list) if item_convert else None)
        if origin in _OBJECTS:
            if not args:
                return {"type": "object"}, None
            if args[0] is not str:
                raise TypeError(
                    f"{self._owner} needs str keys for a dict, got {args[0]!r} ({where}): JSON keys are strings"
                )
            values, convert = self.build(args[1], f"{where}, value")
            schema = {"type": "object", "additionalProperties": values}
            return schema, (_map_values(convert) if convert else None)
        raise TypeError(
            f"{self._owner} cannot express {hint!r} in JSON Schema ({where}); use str, int, float, bool, None, "
            "list, tuple, set, dict[str, X], Optional, Union, Literal, an Enum, an attrs class, a dataclass "
            "or a TypedDict"
        )

    def _tuple(self, hint: Any, args: Tuple[Any, ...], where: str) -> Tuple[Dict[str, Any], Converter]:
        if hint is tuple or hint is typing.Tuple:
            return {"type": "array"}, tuple
        if len(args) == 2 and args[1] is Ellipsis:
            items, convert = self.build(args[0], f"{where}, item")
            return {"type": "array", "items": items}, _each(convert, tuple)
        if args == ((),):  # typing.Tuple[()] spells the empty tuple this way
            args = ()
        built = [self.build(arg, f"{where}, item {i}") for i, arg in enumerate(args)]
        schema = {"type": "array", "prefixItems": [s for s, _ in built], "minItems": len(args), "maxItems": len(args)}
        if not args:
            del schema["prefixItems"]
        converters = [c for _, c in built]
        if not any(converters):
            return schema, tuple
        return schema, lambda value: tuple(c(v) if c else v for c, v in zip(converters, value))

    def _union(self, args: Tuple[Any, ...], where: str) -> Tuple[Dict[str, Any], Converter]:
        members = [arg for arg in args if arg is not _NONE]
        built = [self.build(member, where) for member in members]
        if len(built) == 1:  # Optional[X]
            return nullable(*built[0])
        schema: Dict[str, Any] = {"anyOf": [s for s, _ in built]}
        if len(members) < len(args):
            schema["anyOf"].append({"type": "null"})
        if not any(c for _, c in built):
            return schema, None

        def convert(value: Any) -> Any:
            for branch, branch_convert in built:
                if value is not None and accepts(branch, value):
                    if branch_convert is None:
                        return value
                    try:
                        return branch_convert(value)
                    except (TypeError, ValueError):
                        continue  # it looked right but is not: try the next branch
            return value

        return schema, convert

    def _object_class(self, cls: type, where: str) -> Tuple[Dict[str, Any], Converter]:
        if cls in self._open:
            if not self._recursive:
                raise TypeError(f"{self._owner} cannot express the recursive class {cls.__qualname__} ({where})")
            return {"$ref": f"#/$defs/{self._def_name(cls)}"}, (lambda value: self._converters[cls](value))
        self._open.append(cls)
        try:
            hints = self.hints(cls, f"class {cls.__qualname__}")
            doc = parse_docstring(_own_doc(cls))
            properties: Dict[str, Any] = {}
            required: List[str] = []
            converters: Dict[str, Callable[[Any], Any]] = {}
            for key, name, default, is_required in _object_fields(cls):
                if name not in hints:
                    raise TypeError(f"{self._owner} needs a type annotation on {cls.__qualname__}.{name} ({where})")
                built = self.build(_strip_required(hints[name]), f"{where} > {cls.__qualname__}.{name}")
                properties[key], convert = with_details(*built, doc.params.get(key), default)
                if is_required:
                    required.append(key)
                if convert is not None:
                    converters[key] = convert
        finally:
            self._open.pop()
        schema: Dict[str, Any] = {"type": "object", "properties": properties, "required": required}
        schema["additionalProperties"] = False
        if doc.summary:
            schema["description"] = doc.summary
        convert = _object_converter(cls, converters)
        self._converters[cls] = convert
        if cls in self._def_names:  # it referred to itself: its schema lives in $defs
            self._defs[self._def_names[cls]] = schema
            return {"$ref": f"#/$defs/{self._def_names[cls]}"}, convert
        return schema, convert

    def _def_name(self, cls: type) -> str:
        if cls not in self._def_names:
            name, taken = cls.__name__, set(self._def_names.values())
            count = 2
            while name in taken:
                name, count = f"{cls.__name__}{count}", count + 1
            self._def_names[cls] = name
        return self._def_names[cls]


def is_typeddict(cls: Any) -> bool:
    """Tell whether ``cls`` is a ``TypedDict`` class (typing's or typing_extensions')."""
    return isinstance(cls, type) and issubclass(cls, dict) and hasattr(cls, "__required_keys__")


def _object_fields(cls: type) -> List[Tuple[str, str, Any, bool]]:
    """Return ``(key, attribute, default, required)`` per field a class is built from."""
    if attrs.has(cls):
        found = []
        for field in attrs.fields(cls):
            if field.init:
                default = attrs.NOTHING if isinstance(field.default, attrs.Factory) else field.default
                found.append((_init_name(field), field.name, default, field.default is attrs.NOTHING))
        return found
    if _is_dataclass(cls):
        import dataclasses  # loaded already: something made the dataclass

        found = []
        for field in dataclasses.fields(cls):
            if field.init:
                has_default = field.default is not dataclasses.MISSING
                missing = not has_default and field.default_factory is dataclasses.MISSING
                found.append((field.name, field.name, field.default if has_default else attrs.NOTHING, missing))
        return found
    required_keys = cls.__required_keys__  # type: ignore[attr-defined]
    return [(key, key, attrs.NOTHING, key in required_keys) for key in typing.get_type_hints(cls)]


def _is_dataclass(cls: Any) -> bool:
    # dataclasses.is_dataclass, without loading dataclasses (0.4 ms) for a program
    # that has none: a dataclass exists only once something has imported it.
    dataclasses = sys.modules.get("dataclasses")
    return dataclasses is not None and dataclasses.is_dataclass(cls)


def _object_converter(cls: type, converters: Dict[str, Callable[[Any], Any]]) -> Callable[[Any], Any]:
    if is_typeddict(cls):
        return lambda value: {k: (converters[k](v) if k in converters else v) for k, v in value.items()}

    def convert(value: Any) -> Any:
        if isinstance(value, cls):
            return value
        return cls(**{k: (converters[k](v) if k in converters else v) for k, v in value.items()})

    return convert


def _own_doc(cls: type) -> Optional[str]:
    """Return the class's own docstring; None for the signature a dataclass makes up."""
    doc = cls.__dict__.get("__doc__")
    if doc and _is_dataclass(cls):
        try:
            made_up = cls.__name__ + str(inspect.signature(cls)).replace(" -> None", "")
        except (TypeError, ValueError):
            made_up = None
        if doc == made_up:
            return None
    return doc


def _strip_required(hint: Any) -> Any:
    """Unwrap a TypedDict's ``Required[X]`` / ``NotRequired[X]`` (the class tells which keys are required)."""
    while getattr(typing.get_origin(hint), "_name", None) in ("Required", "NotRequired"):
        hint = typing.get_args(hint)[0]
    return hint


def _retarget(schema: Any, ref: str) -> Any:
    """Return ``schema`` with every ``$ref`` equal to ``ref`` pointing at the root (``#``) instead."""
    if isinstance(schema, dict):
        return {k: ("#" if k == "$ref" and v == ref else _retarget(v, ref)) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_retarget(item, ref) for item in schema]
    return schema


def with_details(
    schema: Dict[str, Any], convert: Converter, description: Optional[str], default: Any
) -> Tuple[Dict[str, Any], Converter]:
    """Add a description (unless the hint gave one) and a default to a property.

    ``default`` is ``attrs.NOTHING`` for none. A default of None makes the
    property accept null, as a ``= None`` parameter plainly means to.
    """
    if default is None and not accepts(schema, None):
        schema, convert = nullable(schema, convert)
    schema = dict(schema)
    if description and "description" not in schema:
        schema["description"] = description
    if default is not attrs.NOTHING:
        try:
            schema["default"] = json_default(default)
        except ValueError:
            pass  # not JSON: the default still applies, it is just not shown to the model
    return schema, convert


def nullable(schema: Dict[str, Any], convert: Converter) -> Tuple[Dict[str, Any], Converter]:
    """Return ``schema`` widened to accept null, and ``convert`` passing None through."""
    if convert is not None:
        inner = convert

        def convert(value: Any) -> Any:
            return None if value is None else inner(value)

    if accepts(schema, None):
        return schema, convert
    kind = schema.get("type")
    if isinstance(kind, str) and not _COMBINERS.intersection(schema):
        widened = dict(schema, type=[kind, "null"])
        if "enum" in widened:
            widened["enum"] = [*widened["enum"], None]
        return widened, convert
    if list(schema) == ["anyOf"]:
        return {"anyOf": [*schema["anyOf"], {"type": "null"}]}, convert
    return {"anyOf": [schema, {"type": "null"}]}, convert


def accepts(schema: Dict[str, Any], value: Any) -> bool:
    """Tell, roughly, whether ``value`` fits ``schema`` by its JSON type and enum."""
    if "anyOf" in schema:
        return any(accepts(branch, value) for branch in schema["anyOf"])
    if "enum" in schema:
        return any(value == e and _json_type(value) == _json_type(e) for e in schema["enum"])
    kind = schema.get("type")
    if kind is None:
        return True
    kinds = kind if isinstance(kind, list) else [kind]
    found = _json_type(value)
    return found in kinds or (found == "integer" and "number" in kinds)


def json_default(value: Any) -> Any:
    """Return a default as JSON data (an Enum as its value); ValueError if it has none."""
    if isinstance(value, enum.Enum):
        return json_default(value.value)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("not finite")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [json_default(item) for item in value]
    if isinstance(value, (set, frozenset)):
        try:
            return sorted(json_default(item) for item in value)  # sorted, so the schema is stable
        except TypeError as exc:
            raise ValueError("a set of mixed types") from exc
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        return {key: json_default(item) for key, item in value.items()}
    if attrs.has(type(value)):
        fields = [f for f in attrs.fields(type(value)) if f.init]
        return {_init_name(f): json_default(getattr(value, f.name)) for f in fields}
    raise ValueError(f"{type(value).__name__} is not JSON")


def _init_name(field: Any) -> str:
    """Return the name ``__init__`` takes for an attrs field (``_x`` is ``x``)."""
    return getattr(field, "alias", None) or field.name.lstrip("_")


def _json_type(value: Any) -> Optional[str]:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    for kind, name in ((int, "integer"), (float, "number"), (str, "string"), (dict, "object"), (list, "array")):
        if isinstance(value, kind):
            return name
    return "array" if isinstance(value, tuple) else None


def _enum_schema(cls: type, where: str, owner: str) -> Dict[str, Any]:
    values = [member.value for member in cls]
    return _enum_of(values, f"{where}, enum {cls.__qualname__}", owner)


def _enum_of(values: List[Any], where: str, owner: str) -> Dict[str, Any]:
    kinds = {_json_type(value) for value in values}
    if not kinds <= {"null", "boolean", "integer", "number", "string"}:
        raise TypeError(f"{owner} needs enum values that are str, int, float, bool or None ({where})")
    schema: Dict[str, Any] = {"enum": values}
    if len(kinds) == 1:
        schema = {"type": kinds.pop(), "enum": values}
    return schema


def _literal(args: Tuple[Any, ...], where: str, owner: str) -> Tuple[Dict[str, Any], Converter]:
    members = {arg.value: arg for arg in args if isinstance(arg, enum.Enum)}
    values = [arg.value if isinstance(arg, enum.Enum) else arg for arg in args]
    schema = _enum_of(values, f"{where}, Literal", owner)
    return schema, ((lambda value: members.get(value, value)) if members else None)


def _each(convert: Converter, kind: type) -> Callable[[Any], Any]:
    if convert is None:
        return kind
    return lambda value: kind(convert(item) for item in value)


def _map_values(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda value: {key: convert(item) for key, item in value.items()}
