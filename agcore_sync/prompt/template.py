"""PromptTemplate: a text with ``str.format``-style fields, some values bound.

The syntax is exactly that of :meth:`str.format` with keyword fields:
``{name}``, ``{price:.2f}``, ``{who!r}``, ``{user.name}``, ``{items[0]}``,
and a field nested one level inside a format spec (``{price:{width}}``).
``{{`` and ``}}`` are literal braces. Positional fields (``{}``, ``{0}``)
are refused, because a template is always rendered with named values.

This module does no I/O.
"""

from __future__ import annotations

import re
import string
import types
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

import attrs

from agcore_sync.prompt.errors import PromptError

__all__ = ["PromptTemplate"]

_FORMATTER = string.Formatter()

#: The conversions str.format knows: none, ``!r``, ``!s``, ``!a``.
_CONVERSIONS = (None, "r", "s", "a")

#: A field name: a root name, then attribute (``.x``) and index (``[k]``) accessors.
_FIELD = re.compile(r"(?P<root>[^.\[]*)(?:\.[^.\[\]]+|\[[^\]]+\])*\Z")

_BRACE_HINT = "write a literal brace as '{{' or '}}'"


def _quoted(names: Iterable[str]) -> str:
    return ", ".join(repr(name) for name in names)


def _parse(text: str) -> Tuple[str, ...]:
    """Return the template's variables in order of first use, or raise PromptError."""
    names: List[str] = []
    try:
        _collect(text, names, depth=0)
    except ValueError as exc:
        raise PromptError(f"cannot parse the prompt template: {exc}; {_BRACE_HINT}") from exc
    return tuple(names)


def _collect(text: str, names: List[str], depth: int) -> None:
    for _literal, field, spec, conversion in _FORMATTER.parse(text):
        if field is None:
            continue
        if depth > 1:
            # str.format itself stops here ("Max string recursion exceeded").
            raise PromptError(f"field {{{field}}} is nested too deep: a format spec may hold fields, "
                              f"but their own specs may not")
        match = _FIELD.match(field)
        root = match.group("root") if match else ""
        if match is None or (root and not root.isidentifier() and not root.isdigit()):
            raise PromptError(f"field {{{field}}} is not a variable: use a name such as {{user}} "
                              f"or {{user.name}}; {_BRACE_HINT}")
        if root == "" or root.isdigit():
            raise PromptError(f"positional field {{{field}}} in a prompt template: name it, as in {{topic}}")
        if conversion not in _CONVERSIONS:
            raise PromptError(f"field {{{field}}} has the conversion !{conversion}; use !r, !s or !a")
        if root not in names:
            names.append(root)
        if spec:
            _collect(spec, names, depth + 1)


def _merge(values: Optional[Mapping[str, Any]], kwargs: Dict[str, Any]) -> Dict[str, Any]:
    if values is None:
        return kwargs
    if not isinstance(values, Mapping):
        raise TypeError(f"values must be a mapping of names to values, not {type(values).__name__}")
    merged = dict(values)
    merged.update(kwargs)
    for key in merged:
        if not isinstance(key, str):
            raise TypeError(f"value names must be str, not {type(key).__name__}")
    return merged


@attrs.frozen(init=False, repr=False)
class PromptTemplate:
    """A prompt text with named fields, rendered with :meth:`str.format` rules.

    Values bound at construction or with :meth:`partial` act as defaults:
    :meth:`render` uses them unless it is given a value of the same name.

    Example::

        >>> t = PromptTemplate("You are {role}. Answer in {lang}. Use {{braces}} freely.", lang="English")
        >>> t.variables, t.unbound
        (('role', 'lang'), ('role',))
        >>> t.render(role="a tutor")
        'You are a tutor. Answer in English. Use {braces} freely.'
        >>> t.partial(role="a poet").render(lang="French")
        'You are a poet. Answer in French. Use {braces} freely.'

    Args:
        text: the template, in :meth:`str.format` syntax with named fields
            only (positional-only parameter, so a variable may be called
            ``text``).
        values: values to bind now.

    Raises:
        PromptError: the text does not parse, has a positional field
            (``{}``, ``{0}``), a field that is not a name, or an unknown
            conversion; or ``values`` names something the text does not use.
        TypeError: ``text`` is not a str.

    A template is a frozen value: equal when its text and bound values are
    equal, picklable, and hashable (by its text, so unhashable values are fine).

    .. versionadded:: 0.1
    """

    #: The template text, as given.
    text: str
    _bound: Tuple[Tuple[str, Any], ...] = attrs.field(hash=False)
    #: Every variable, in order of first use. A field such as ``{user.name}``
    #: or ``{items[0]}`` counts as the variable ``user`` / ``items``; fields
    #: nested in a format spec (``{x:{width}}``) count too.
    variables: Tuple[str, ...] = attrs.field(eq=False)

    def __init__(self, text: str, /, **values: Any) -> None:
        if not isinstance(text, str):
            raise TypeError(f"a prompt template's text must be a str, not {type(text).__name__}")
        variables = _parse(text)
        _check_names(variables, values, allow_extra=False, action="bind")
        self.__attrs_init__(text, _pairs(variables, values), variables)

    def __repr__(self) -> str:
        bound = "".join(f", {name}={value!r}" for name, value in self._bound)
        return f"PromptTemplate({self.text!r}{bound})"

    @property
    def bound(self) -> Mapping[str, Any]:
        """The bound values, as a read-only mapping (in variable order)."""
        return types.MappingProxyType(dict(self._bound))

    @property
    def unbound(self) -> Tuple[str, ...]:
        """The variables that still need a value at render time, in order."""
        bound = dict(self._bound)
        return tuple(name for name in self.variables if name not in bound)

    def partial(self, values: Optional[Mapping[str, Any]] = None, /, *, allow_extra: bool = False,
                **kwargs: Any) -> PromptTemplate:
        """Return a new template with more values bound (this one is unchanged).

        A name bound already is rebound to the new value.

        Args:
            values: a mapping of values (for names that are not identifiers,
                or that clash with ``allow_extra``); keyword values win.
            allow_extra: ignore values for names the template does not use
                instead of raising.
            kwargs: values by name.

        Returns:
            The new template.

        Raises:
            PromptError: a value names no variable (``unknown`` lists them)
                and ``allow_extra`` is False.
        """
        given = _merge(values, kwargs)
        _check_names(self.variables, given, allow_extra=allow_extra, action="bind")
        merged = dict(self._bound)
        merged.update(given)
        new = object.__new__(PromptTemplate)
        new.__attrs_init__(self.text, _pairs(self.variables, merged), self.variables)
        return new

    def render(self, values: Optional[Mapping[str, Any]] = None, /, *, allow_extra: bool = False,
               **kwargs: Any) -> str:
        """Return the text with every field replaced.

        Given values override bound ones. ``render()`` with no arguments
        works once every variable is bound; that is how
        :class:`~agcore_sync.loop.cycle.LlmCycle` renders a ``system_prompt``.

        Args:
            values: a mapping of values (for names that are not keywords, or
                a variable called ``allow_extra``); keyword values win.
            allow_extra: ignore values for names the template does not use
                instead of raising (handy when one dict feeds several
                templates).
            kwargs: values by name.

        Returns:
            The rendered text.

        Raises:
            PromptError: variables have no value (``missing`` lists every
                one) or, unless ``allow_extra``, values name no variable
                (``unknown`` lists them); both are reported together. Also
                when formatting itself fails (a bad format spec for the
                value, a missing attribute or key), with the cause chained.
        """
        given = _merge(values, kwargs)
        _check_names(self.variables, given, allow_extra=allow_extra, action="render", bound=dict(self._bound))
        merged = dict(self._bound)
        merged.update((name, value) for name, value in given.items() if name in self.variables)
        try:
            return self.text.format_map(merged)
        except (ValueError, TypeError, AttributeError, KeyError, IndexError) as exc:
            raise PromptError(f"cannot render the prompt template: {type(exc).__name__}: {exc}") from exc


def _pairs(variables: Tuple[str, ...], values: Mapping[str, Any]) -> Tuple[Tuple[str, Any], ...]:
    # In variable order, so equal bindings give equal tuples whatever order they came in.
    return tuple((name, values[name]) for name in variables if name in values)


def _check_names(variables: Tuple[str, ...], given: Mapping[str, Any], *, allow_extra: bool, action: str,
                 bound: Optional[Mapping[str, Any]] = None) -> None:
    unknown = () if allow_extra else tuple(name for name in given if name not in variables)
    missing: Tuple[str, ...] = ()
    if bound is not None:
        missing = tuple(name for name in variables if name not in given and name not in bound)
    if not unknown and not missing:
        return
    problems = []
    if missing:
        problems.append(f"no value for {_quoted(missing)} (pass them to render() or bind them with partial())")
    if unknown:
        known = _quoted(variables) if variables else "none"
        problems.append(f"cannot {action} {_quoted(unknown)}: not a variable of the template (its variables: "
                        f"{known}); pass allow_extra=True to ignore extra values")
    raise PromptError("prompt template: " + "; ".join(problems), missing=missing, unknown=unknown)
