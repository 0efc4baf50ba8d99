"""PromptBundle: a named set of prompt templates with shared default values.

A bundle is usually kept in a JSON file next to the code that uses it::

    {
      "name": "support",
      "version": 2,
      "defaults": {"product": "Acme", "tone": "friendly"},
      "templates": {
        "system": "You support {product} users. Be {tone}.",
        "greeting": {
          "text": "Hello {user}, welcome to {product}!",
          "description": "First message of a chat.",
          "variables": ["user"]
        }
      }
    }

The document must match :data:`BUNDLE_SCHEMA` (checked with jsonschema).
Then, for every template: its text must parse as a
:class:`~agcore_sync.prompt.template.PromptTemplate`; a default applies to
every template that uses a variable of that name, and every default must be
used by some template (an unused one is most likely a typo); a variable
without a default is left to render time, and a template that lists its
``variables`` must list exactly those (a template variable neither
defaulted nor listed, or a listed name the text does not use, is an
error). Any failure is a :class:`~agcore_sync.prompt.errors.PromptError`
whose ``path`` is the JSON path of the bad field, such as
``templates.greeting.text``.

I/O happens only in :meth:`PromptBundle.load`, which reads one file.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import re
import types
from typing import Any, Dict, Iterable, Mapping, Optional, Tuple, Union

import attrs

from agcore_sync.prompt.errors import PromptError
from agcore_sync.prompt.template import PromptTemplate, _merge

__all__ = ["PromptBundle", "BUNDLE_SCHEMA"]

_TEMPLATE_OBJECT = {
    "type": ["string", "object"],
    # The keywords below apply only when the template is an object.
    "required": ["text"],
    "additionalProperties": False,
    "properties": {
        "text": {"type": "string"},
        "description": {"type": "string"},
        "variables": {"type": "array", "items": {"type": "string", "minLength": 1}, "uniqueItems": True},
    },
}

#: The JSON Schema (draft 2020-12) a bundle document must match:
#: ``name`` (a non-empty string, required), ``version`` (an integer >= 0),
#: ``description`` (a string), ``defaults`` (an object of string, number or
#: boolean values) and ``templates`` (required, at least one: each a string,
#: or an object with ``text``, optional ``description`` and optional
#: ``variables``, the names left to render time). No other fields.
BUNDLE_SCHEMA: Dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "agcore_sync prompt bundle",
    "type": "object",
    "required": ["name", "templates"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "version": {"type": "integer", "minimum": 0},
        "description": {"type": "string"},
        "defaults": {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}},
        "templates": {
            "type": "object",
            "minProperties": 1,
            "propertyNames": {"minLength": 1},
            "additionalProperties": _TEMPLATE_OBJECT,
        },
    },
}

_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]+\Z")


@attrs.frozen(init=False, repr=False)
class PromptBundle:
    """A named set of prompt templates plus default values they share.

    Usually made by :meth:`from_dict` or :meth:`load`, which validate a JSON
    document (see the module docstring and :data:`BUNDLE_SCHEMA`); the
    constructor runs the same checks on Python values.

    Example::

        >>> bundle = PromptBundle.from_dict({
        ...     "name": "support",
        ...     "defaults": {"product": "Acme"},
        ...     "templates": {"greeting": "Hello {user}, welcome to {product}!"},
        ... })
        >>> bundle.names
        ('greeting',)
        >>> bundle.render("greeting", user="Ada")
        'Hello Ada, welcome to Acme!'
        >>> bundle.get("greeting").unbound
        ('user',)

    Args:
        name: the bundle's name.
        templates: template name -> text (or an unbound
            :class:`~agcore_sync.prompt.template.PromptTemplate`), in order.
        defaults: values bound into every template that uses them;
            :meth:`render` values override them.
        version: the bundle's version, if it has one.
        description: what the bundle is for.
        descriptions: template name -> what the template is for.

    Raises:
        PromptError: a template does not parse or is already bound, a
            default is used by no template, or a description names no
            template; ``path`` is the field's JSON path.
        TypeError: an argument has the wrong type.

    A bundle is a frozen value: equal when all its parts are equal.

    .. versionadded:: 0.1
    """

    #: The bundle's name.
    name: str
    #: The bundle's version, or None.
    version: Optional[int]
    #: What the bundle is for, or None.
    description: Optional[str]
    _templates: Tuple[Tuple[str, PromptTemplate], ...]
    _defaults: Tuple[Tuple[str, Any], ...] = attrs.field(hash=False)
    _descriptions: Tuple[Tuple[str, str], ...]

    def __init__(
        self,
        name: str,
        templates: Mapping[str, Union[str, PromptTemplate]],
        defaults: Optional[Mapping[str, Any]] = None,
        *,
        version: Optional[int] = None,
        description: Optional[str] = None,
        descriptions: Optional[Mapping[str, str]] = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"a bundle's name must be a non-empty str, got {name!r}")
        if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
            raise TypeError(f"a bundle's version must be an int or None, got {version!r}")
        defaults = dict(defaults or {})
        descriptions = dict(descriptions or {})
        parsed = tuple((key, _template(name, key, text)) for key, text in dict(templates).items())
        used = {variable for _key, template in parsed for variable in template.variables}
        for key in defaults:
            if key not in used:
                raise _invalid(None, ("defaults", key), f"no template uses the variable {key!r}", name=name)
        for key in descriptions:
            if key not in dict(parsed):
                raise _invalid(None, ("templates", key), "a description is given, but there is no such template",
                               name=name)
        self.__attrs_init__(name, version, description, parsed, tuple(defaults.items()),
                            tuple((key, descriptions[key]) for key, _t in parsed if key in descriptions))

    def __repr__(self) -> str:
        return f"PromptBundle(name={self.name!r}, version={self.version!r}, names={self.names!r})"

    # -- reading ----------------------------------------------------------

    @property
    def names(self) -> Tuple[str, ...]:
        """The template names, in the order given."""
        return tuple(key for key, _template in self._templates)

    @property
    def defaults(self) -> Mapping[str, Any]:
        """The default values, as a read-only mapping."""
        return types.MappingProxyType(dict(self._defaults))

    @property
    def descriptions(self) -> Mapping[str, str]:
        """Template name -> description, for the templates that have one."""
        return types.MappingProxyType(dict(self._descriptions))

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def get(self, name: str) -> PromptTemplate:
        """Return the template called ``name`` with the defaults it uses bound.

        Raises:
            PromptError: the bundle has no such template (``template`` is
                the name asked for).
        """
        for key, template in self._templates:
            if key == name:
                defaults = dict(self._defaults)
                return template.partial({var: defaults[var] for var in template.variables if var in defaults})
        raise PromptError(f"prompt bundle {self.name!r} has no template {name!r}; it has: "
                          f"{', '.join(self.names)}", template=name)

    def render(self, name: str, values: Optional[Mapping[str, Any]] = None, /, *, allow_extra: bool = False,
               **kwargs: Any) -> str:
        """Render the template called ``name``; values override the defaults.

        Args:
            name: the template.
            values: a mapping of values; keyword values win.
            allow_extra: ignore values the template does not use.
            kwargs: values by name.

        Returns:
            The rendered text.

        Raises:
            PromptError: no such template, or as
                :meth:`PromptTemplate.render <agcore_sync.prompt.template.PromptTemplate.render>`
                (``template`` is set to ``name``).
        """
        template = self.get(name)
        try:
            return template.render(_merge(values, kwargs), allow_extra=allow_extra)
        except PromptError as exc:
            raise PromptError(f"template {name!r} of bundle {self.name!r}: {exc.message}", missing=exc.missing,
                              unknown=exc.unknown, template=name) from exc

    # -- JSON -------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: Any, *, source: Optional[str] = None) -> PromptBundle:
        """Build a bundle from a JSON-shaped dict, validating it first.

        Args:
            data: the document (see :data:`BUNDLE_SCHEMA`).
            source: where the document came from, for error messages.

        Returns:
            The bundle.

        Raises:
            PromptError: the document is invalid; ``path`` is the JSON path
                of the first bad field found (``""`` for the whole document),
                ``source`` is ``source``.
        """
        # Imported here: jsonschema is slow to import and only bundles need it.
        from jsonschema.exceptions import best_match

        error = best_match(_validator().iter_errors(data))
        if error is not None:
            parts, reason = _describe(error)
            raise _invalid(source, parts, reason)
        templates: Dict[str, str] = {}
        descriptions: Dict[str, str] = {}
        defaults = data.get("defaults", {})
        for key, entry in data["templates"].items():
            text = entry if isinstance(entry, str) else entry["text"]
            parts = ("templates", key) if isinstance(entry, str) else ("templates", key, "text")
            try:
                variables = PromptTemplate(text).variables
            except PromptError as exc:
                raise _invalid(source, parts, exc.message, name=data["name"]) from exc
            templates[key] = text
            if isinstance(entry, dict):
                if "description" in entry:
                    descriptions[key] = entry["description"]
                if "variables" in entry:
                    _check_declared(source, data["name"], key, variables, entry["variables"], defaults)
        try:
            return cls(data["name"], templates, defaults, version=data.get("version"),
                       description=data.get("description"), descriptions=descriptions)
        except PromptError as exc:
            raise PromptError(_with_source(exc.message, source), path=exc.path, source=source,
                              template=exc.template) from exc

    @classmethod
    def load(cls, path: Union[str, os.PathLike]) -> PromptBundle:
        """Read a bundle from a UTF-8 JSON file and validate it.

        Args:
            path: the file.

        Returns:
            The bundle.

        Raises:
            PromptError: the file cannot be read or is not JSON (``path`` is
                None), or the document is invalid (as :meth:`from_dict`);
                ``source`` is the file's path.
        """
        source = os.fspath(path)
        try:
            with open(source, encoding="utf-8") as file:
                text = file.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise PromptError(f"cannot read prompt bundle {source}: {exc}", source=source) from exc
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PromptError(f"prompt bundle {source} is not valid JSON: {exc.msg} at line {exc.lineno} "
                              f"column {exc.colno}", source=source) from exc
        return cls.from_dict(data, source=source)

    def to_dict(self) -> Dict[str, Any]:
        """Return the bundle as a JSON-ready dict that :meth:`from_dict` reads back.

        Templates with a description are written in object form, others as
        plain strings (``variables`` lists are a load-time check and are not
        kept).
        """
        data: Dict[str, Any] = {"name": self.name}
        if self.version is not None:
            data["version"] = self.version
        if self.description is not None:
            data["description"] = self.description
        data["defaults"] = dict(self._defaults)
        descriptions = dict(self._descriptions)
        data["templates"] = {
            key: {"text": template.text, "description": descriptions[key]} if key in descriptions else template.text
            for key, template in self._templates
        }
        return data


def _template(bundle: str, key: Any, text: Any) -> PromptTemplate:
    if not isinstance(key, str) or not key:
        raise TypeError(f"a template name must be a non-empty str, got {key!r}")
    if isinstance(text, PromptTemplate):
        if text.bound:
            raise _invalid(None, ("templates", key), "the template has bound values; give them as bundle defaults",
                           name=bundle)
        return text
    if not isinstance(text, str):
        raise TypeError(f"bundle template {key!r} must be a str or a PromptTemplate, not {type(text).__name__}")
    try:
        return PromptTemplate(text)
    except PromptError as exc:
        raise _invalid(None, ("templates", key), exc.message, name=bundle) from exc


def _check_declared(source: Optional[str], bundle: str, key: str, variables: Tuple[str, ...],
                    declared: Iterable[str], defaults: Mapping[str, Any]) -> None:
    declared = list(declared)
    for index, name in enumerate(declared):
        if name not in variables:
            raise _invalid(source, ("templates", key, "variables", index),
                           f"{name!r} is not a variable of the template", name=bundle)
    for name in variables:
        if name not in declared and name not in defaults:
            raise _invalid(source, ("templates", key, "text"),
                           f"the variable {name!r} has no default and is not listed in "
                           f"{_path(('templates', key, 'variables'))}", name=bundle)


@functools.lru_cache(maxsize=1)
def _validator() -> Any:
    from jsonschema import Draft202012Validator

    # A copy, so a caller editing BUNDLE_SCHEMA after the first validation changes nothing.
    return Draft202012Validator(copy.deepcopy(BUNDLE_SCHEMA))


_JSON_TYPES = ((bool, "boolean"), (str, "string"), ((int, float), "number"), (list, "array"), (dict, "object"))


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    for python_type, name in _JSON_TYPES:
        if isinstance(value, python_type):
            return name
    return type(value).__name__


def _describe(error: Any) -> Tuple[Tuple[Any, ...], str]:
    """Return the path of the bad field and a reason that never quotes a whole prompt."""
    parts = tuple(error.absolute_path)
    kind, expected, instance = error.validator, error.validator_value, error.instance
    if kind == "required":
        missing = [key for key in expected if key not in instance]
        return parts + (missing[0],), "a required field is missing"
    if kind == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = [key for key in instance if key not in allowed]
        return parts + (extra[0],), f"unexpected field (allowed: {', '.join(allowed)})"
    if kind == "type":
        wanted = " or ".join(expected) if isinstance(expected, list) else expected
        return parts, f"expected {wanted}, got {_json_type(instance)}"
    if kind == "minLength":
        return parts, "must not be empty"
    if kind == "minProperties":
        return parts, f"needs at least {expected} entry"
    if kind == "minimum":
        return parts, f"must be at least {expected}"
    if kind == "uniqueItems":
        return parts, "has duplicate items"
    if kind == "propertyNames":
        return parts, "has an empty name"
    return parts, error.message


def _path(parts: Iterable[Any]) -> str:
    """Format a JSON path: ``templates.greeting.variables[0]``; odd keys as ``["a.b"]``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.match(part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part)}]"
    return out


def _with_source(message: str, source: Optional[str]) -> str:
    return message if source is None else f"{message} (in {source})"


def _invalid(source: Optional[str], parts: Tuple[Any, ...], reason: str, *, name: Optional[str] = None) -> PromptError:
    """Return the error for a bad field; ``template`` is set for fields inside a template."""
    path = _path(parts)
    bundle = "invalid prompt bundle" if name is None else f"invalid prompt bundle {name!r}"
    where = f"at {path}" if path else "(the document)"
    template = parts[1] if len(parts) >= 2 and parts[0] == "templates" else None
    return PromptError(_with_source(f"{bundle} {where}: {reason}", source), path=path, source=source,
                       template=template)
