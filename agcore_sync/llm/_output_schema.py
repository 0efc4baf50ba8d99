"""OutputSchema itself: the schema of an answer, its parsing and its dump to JSON.

Split from :mod:`agcore_sync.llm.output` (which re-exports everything here
and adds the wire fragments) so that :mod:`agcore_sync.llm.types` can rebuild
``MessageRequest.output`` and dump ``MessageResponse.output`` without an
import cycle: this module imports nothing of ``types``. See
:mod:`agcore_sync.llm.output` for the whole story.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import json
import re
import sys
import threading
import weakref
from typing import Any, Callable, Dict, List, Optional, Tuple, Type

import attrs

from agcore_sync._http import peer_json
from agcore_sync.llm import _output_transforms as transforms
from agcore_sync.llm._schema_from_type import SchemaBuilder, is_typeddict
from agcore_sync.llm.errors import OutputValidationError

__all__ = ["OutputSchema", "dump_json", "OUTPUT_TOOL_NAME", "WRAPPED_KEY"]

#: The name of the forced tool of the ``"tool"`` output mode.
OUTPUT_TOOL_NAME = "final_result"
#: The property a non-object answer is wrapped in for the ``"tool"`` mode
#: (tool arguments must be a JSON object).
WRAPPED_KEY = "response"
#: The longest error line kept (jsonschema quotes the offending value, which
#: may be a whole document).
_MAX_ERROR_CHARS = 300
# OpenAI: "must be a-z, A-Z, 0-9, or contain underscores and dashes, with a maximum length of 64".
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_NAME_LIMIT = 64
_FENCE = re.compile(r"^```[A-Za-z0-9_-]*[ \t]*\r?\n(.*?)\r?\n?```$", re.DOTALL)


def _valid_name(name: str) -> str:
    return _NAME_CHARS.sub("_", name)[:_NAME_LIMIT] or "output"


@attrs.frozen(init=False)
class OutputSchema:
    """The structure an answer must have, and how to turn the answer into a value.

    Build one from anything ``output=`` takes; :meth:`of` passes an
    ``OutputSchema`` through. Construction checks everything it can, so a
    bad schema fails at the call, before any request.

    Args:
        output: a JSON Schema dict, a dataclass, a ``TypedDict``, an attrs
            class, or a pydantic model class (or pydantic dataclass).
        name: the schema's name on the wire; None takes the class name, or
            a dict schema's ``title``, or ``"output"``. Characters OpenAI
            does not allow become ``_``, and it is cut to 64.

    Raises:
        TypeError: ``output`` is none of those, or a class has a field
            whose type cannot be expressed (the message names the field).
        ValueError: the JSON Schema is not valid (``jsonschema`` cannot
            compile it) or has a ``$ref`` that is not local or points at
            nothing.

    Example:
        >>> import dataclasses
        >>> @dataclasses.dataclass
        ... class City:
        ...     name: str
        ...     population: int
        >>> schema = OutputSchema(City)
        >>> schema.parse('{"name": "Lyon", "population": 522250}')
        City(name='Lyon', population=522250)

    .. versionadded:: 0.1.0
    """

    #: The JSON Schema answers are validated against (for a pydantic model,
    #: pydantic's own ``model_json_schema()``).
    json_schema: Dict[str, Any] = attrs.field(repr=False)
    #: The name sent on the wire (a valid OpenAI schema name).
    name: str
    #: The class given to ``output=``, or None for a JSON Schema dict.
    output_type: Optional[Type[Any]]
    #: True when the OpenAI fragments send ``"strict": true``: always for a
    #: pydantic model (as the SDK does), otherwise when the schema fits
    #: OpenAI's strict subset once rewritten as the SDK rewrites it.
    strict: bool
    #: The schema's description (a class docstring's summary), or None.
    description: Optional[str] = attrs.field(repr=False)
    _openai_schema: Dict[str, Any] = attrs.field(repr=False, eq=False)
    _anthropic_schema: Dict[str, Any] = attrs.field(repr=False, eq=False)
    _validator: Any = attrs.field(repr=False, eq=False)
    _convert: Callable[[str, Any], Any] = attrs.field(repr=False, eq=False)

    def __init__(self, output: Any, *, name: Optional[str] = None) -> None:
        schema, wire_name, convert, pydantic = _describe(output)
        validator = _compile(schema)
        openai_schema = transforms.openai_strict(schema)
        if pydantic:
            strict = True  # what the SDK sends, whatever the schema holds
        else:
            candidate = transforms.without_defaults(openai_schema)
            strict = transforms.fits_openai_strict(candidate)
            openai_schema = candidate if strict else schema
        try:
            anthropic_schema = transforms.anthropic_schema(schema)
        except ValueError:  # e.g. an Any field ({}): send it as it is and let the API judge
            anthropic_schema = schema
        description = schema.get("description")
        self.__attrs_init__(  # type: ignore[attr-defined]
            json_schema=schema,
            name=_valid_name(name if name is not None else wire_name),
            output_type=output if isinstance(output, type) else None,
            strict=strict,
            description=description if isinstance(description, str) else None,
            openai_schema=openai_schema,
            anthropic_schema=anthropic_schema,
            validator=validator,
            convert=convert,
        )

    @classmethod
    def of(cls, output: Any, *, name: Optional[str] = None) -> OutputSchema:
        """Return ``output`` if it already is an ``OutputSchema`` (and no name is given), else build one.

        The schema of a class is built once and kept (weakly, per class),
        since checking a schema costs milliseconds and the loops ask for it
        at every call.
        """
        if isinstance(output, OutputSchema) and name is None:
            return output
        if isinstance(output, type) and name is None:
            with _CACHE_LOCK:
                cached = _CACHE.get(output)
            if cached is None:
                cached = cls(output)
                with _CACHE_LOCK:
                    _CACHE[output] = cached
            return cached
        if isinstance(output, OutputSchema):
            source = output.output_type if output.output_type is not None else output.json_schema
            return cls(source, name=name)
        return cls(output, name=name)

    @property
    def wraps_tool_input(self) -> bool:
        """True when the ``"tool"`` mode wraps the answer in ``{"response": ...}`` (a non-object root)."""
        return self.json_schema.get("type") != "object"

    def parse(self, text: str) -> Any:
        """Decode, validate and convert the model's answer.

        One Markdown code fence around the JSON (three backticks, maybe
        followed by ``json``), which models add in the prompted mode, is
        ignored.

        Args:
            text: the answer's text.

        Returns:
            An instance of :attr:`output_type` (a dict for a ``TypedDict``),
            or the decoded JSON for a dict schema.

        Raises:
            OutputValidationError: the text is not JSON, does not match the
                schema, or does not convert; ``errors`` lists every problem
                with its JSON path, ``raw`` keeps ``text``.
        """
        if not isinstance(text, str):
            raise TypeError(f"parse() takes the answer's text (str), got {type(text).__name__}")
        body = text.strip()
        fenced = _FENCE.match(body)
        if fenced:
            body = fenced.group(1).strip()
        return self._load(self._decode(body, raw=text), body, raw=text)

    def parse_tool_input(self, arguments: Any) -> Any:
        """Validate and convert the arguments of the ``"tool"`` mode's output tool call.

        Args:
            arguments: ``ToolUseBlock.input``: the parsed dict, or the raw
                string when the model's arguments were not JSON.

        Returns:
            What :meth:`parse` returns for the same answer.

        Raises:
            OutputValidationError: as :meth:`parse`.
        """
        if isinstance(arguments, str):
            arguments = self._decode(arguments, raw=arguments)
        else:
            self._decode(arguments, raw="", parsed=True)
        raw = json.dumps(arguments, ensure_ascii=False)
        if self.wraps_tool_input:
            return self._unwrap(arguments, raw)
        return self._load(arguments, raw, raw=raw)

    def dump(self, value: Any) -> Any:
        """Return ``value`` (what :meth:`parse` returned) as plain JSON data.

        The inverse of the conversion, for ``to_dict()``: instances become
        dicts, enums their values, tuples and sets lists; a pydantic model
        goes through ``model_dump(mode="json")``.

        Raises:
            ValueError: ``value`` holds something that is not JSON.
        """
        return _json_data(value)

    def _decode(self, text: Any, *, raw: str, parsed: bool = False) -> Any:
        """Parse ``text`` (or check ``text`` already parsed) as JSON from the model; OutputValidationError if not."""
        try:
            return peer_json.check_value(text) if parsed else peer_json.loads(text)
        except ValueError as exc:
            raise OutputValidationError(
                f"the answer for output {self.name!r} is not valid JSON: {exc}",
                errors=[f"$: the answer is not valid JSON ({exc})"],
                raw=raw,
            ) from None

    def _unwrap(self, arguments: Any, raw: str) -> Any:
        if not isinstance(arguments, dict) or WRAPPED_KEY not in arguments:
            raise OutputValidationError(
                f"the output tool call for {self.name!r} has no {WRAPPED_KEY!r} argument",
                errors=[f"$: {WRAPPED_KEY!r} is a required property"],
                raw=raw,
            )
        value = arguments[WRAPPED_KEY]
        return self._load(value, json.dumps(value, ensure_ascii=False), raw=raw)

    def _load(self, data: Any, text: str, *, raw: str) -> Any:
        errors = [f"{error.json_path}: {_short(error.message)}" for error in self._validator.iter_errors(data)]
        if errors:
            count = f"{len(errors)} problem{'s' if len(errors) > 1 else ''}"
            raise OutputValidationError(
                f"the answer does not match the output schema {self.name!r} ({count}; first: {errors[0]})",
                errors=errors,
                raw=raw,
            )
        try:
            return self._convert(text, data)
        except (TypeError, ValueError) as exc:
            errors = _pydantic_errors(exc) or [f"$: {_short(str(exc))}"]
            raise OutputValidationError(
                f"the answer for output {self.name!r} does not convert to {self._type_name()}: {errors[0]}",
                errors=errors,
                raw=raw,
            ) from exc

    def _type_name(self) -> str:
        return self.output_type.__qualname__ if self.output_type is not None else "JSON"


_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # class -> OutputSchema, for of()
_CACHE_LOCK = threading.Lock()


def _describe(output: Any) -> Tuple[Dict[str, Any], str, Callable[[str, Any], Any], bool]:
    """Return ``(schema, name, convert(text, data), is_pydantic)`` for what ``output=`` got."""
    if isinstance(output, dict):
        title = output.get("title")
        schema = copy.deepcopy(output)  # ours: a later change to the caller's dict cannot desync the validator
        return schema, title if isinstance(title, str) else "output", (lambda _text, data: data), False
    if not isinstance(output, type):
        raise TypeError(
            "output= takes a JSON Schema dict, a dataclass, a TypedDict, an attrs class or a pydantic model "
            f"class, got {output!r}"
        )
    pydantic = sys.modules.get("pydantic")  # a pydantic class means pydantic is loaded already
    if pydantic is not None and issubclass(output, pydantic.BaseModel):
        schema = output.model_json_schema()
        return schema, output.__name__, (lambda text, _data: output.model_validate_json(text)), True
    if pydantic is not None and pydantic.dataclasses.is_pydantic_dataclass(output):
        adapter = pydantic.TypeAdapter(output)
        return adapter.json_schema(), output.__name__, (lambda text, _data: adapter.validate_json(text)), True
    if not (attrs.has(output) or _is_dataclass(output) or is_typeddict(output)):
        raise TypeError(
            "output= takes a JSON Schema dict, a dataclass, a TypedDict, an attrs class or a pydantic model "
            f"class, got the class {output.__qualname__}"
        )
    builder = SchemaBuilder(owner="output=", recursive=True)
    schema, convert = builder.root(output, f"output class {output.__qualname__}")
    return schema, output.__name__, (lambda _text, data: convert(data) if convert else data), False


def dump_json(value: Any) -> Any:
    """Return a parsed output value as plain JSON data (what :meth:`OutputSchema.dump` does, without a schema)."""
    return _json_data(value)


def _json_data(value: Any) -> Any:
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, enum.Enum):
        return _json_data(value.value)
    if isinstance(value, dict):
        return {str(key): _json_data(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_data(item) for item in value]
    if isinstance(value, (set, frozenset)):
        items = [_json_data(item) for item in value]
        try:
            return sorted(items)  # sorted, so equal sets dump equally
        except TypeError:
            return items
    if callable(getattr(value, "model_dump", None)):  # a pydantic model
        return value.model_dump(mode="json")
    if attrs.has(type(value)):
        return {_init_key(f): _json_data(getattr(value, f.name)) for f in attrs.fields(type(value)) if f.init}
    if _is_dataclass(type(value)):
        return {f.name: _json_data(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
    raise ValueError(f"{type(value).__name__} is not JSON data")


def _init_key(field: Any) -> str:
    return getattr(field, "alias", None) or field.name.lstrip("_")


def _is_dataclass(cls: type) -> bool:
    return hasattr(cls, "__dataclass_fields__")


def _compile(schema: Dict[str, Any]) -> Any:
    """Check ``schema`` and return a validator for it (jsonschema is imported here, on first use)."""
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "".join(f"[{part!r}]" for part in exc.absolute_path) or "the root"
        raise ValueError(f"output= got an invalid JSON Schema: {_short(exc.message)} (at {where})") from None
    _check_refs(schema, schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _check_refs(node: Any, root: Dict[str, Any]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            transforms.resolve_ref(root, ref)
        for key, value in node.items():
            if key not in ("enum", "const", "default", "examples"):
                _check_refs(value, root)
    elif isinstance(node, list):
        for item in node:
            _check_refs(item, root)


def _short(text: str) -> str:
    return text if len(text) <= _MAX_ERROR_CHARS else text[: _MAX_ERROR_CHARS - 1] + "…"


def _pydantic_errors(exc: BaseException) -> List[str]:
    """Return a pydantic ``ValidationError``'s problems as ``"<JSON path>: <message>"`` lines."""
    errors = getattr(exc, "errors", None)
    if not callable(errors) or type(exc).__name__ != "ValidationError":
        return []
    lines = []
    for error in errors():
        path = "$"
        for part in error.get("loc", ()):
            if isinstance(part, int):
                path += f"[{part}]"
            elif isinstance(part, str) and part.isidentifier():
                path += f".{part}"
            else:
                path += f"[{json.dumps(str(part))}]"
        lines.append(f"{path}: {_short(str(error.get('msg', '')))}")
    return lines
