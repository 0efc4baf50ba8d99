"""Read a summary and per-argument descriptions from a docstring.

Three styles are understood, and may even be mixed in one docstring:

* Google (the primary one): an ``Args:`` line, then ``name: text`` or
  ``name (type): text`` entries one level deeper, a description continued on
  deeper lines.
* NumPy: a ``Parameters`` title underlined with dashes, then ``name : type``
  entries at the title's level and the description indented below each.
* Sphinx: ``:param name: text`` or ``:param type name: text`` fields,
  continued on deeper lines.

A description spread over several lines is joined with spaces. The summary
is the first paragraph, joined the same way: it stops at a blank line, a
known section title or a field, whichever comes first.
"""

from __future__ import annotations

import inspect
import re
from typing import Dict, List, Optional

import attrs

from agcore_sync._values import value_methods

__all__ = ["Docstring", "parse_docstring"]

#: Google and NumPy section titles whose entries describe arguments or fields.
_ARG_SECTIONS = frozenset(
    "args|arguments|parameters|params|keyword args|keyword arguments|other parameters|attributes".split("|")
)
#: Other Google section titles: any of them also ends the summary.
_OTHER_SECTIONS = frozenset(
    "returns|return|yields|yield|raises|example|examples|note|notes|warning|warnings|see also|todo".split("|")
)

# The patterns are kept as text and used through re.match, which compiles each
# on its first use and then finds it in re's cache: importing this module (with
# @tool) compiles none, and a program never pays for a style it does not use.

# "Args:" on a line of its own.
_GOOGLE_HEADER = r"^([A-Za-z][A-Za-z ]*):$"
# "city (str): the city name" or "city: the city name".
_GOOGLE_ENTRY = r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:(.*)$"
# "city : str", "city", or "x, y : int".
_NUMPY_ENTRY = r"^(\*{0,2}\w+(?:\s*,\s*\*{0,2}\w+)*)\s*(?::.*)?$"
# A line of dashes under a NumPy section title.
_NUMPY_RULE = r"^-{3,}$"
# ":param city: ..." or ":param str city: ...".
_SPHINX_PARAM = r"^:(?:param|parameter|arg|argument|key|keyword)\s+(?:[^:]*\s)?\*{0,2}(\w+)\s*:(.*)$"


@attrs.frozen
@value_methods
class Docstring:
    """What a docstring says: the summary and each argument's description."""

    summary: str
    params: Dict[str, str]


def parse_docstring(doc: Optional[str]) -> Docstring:
    """Parse ``doc`` (a function's or a class's ``__doc__``).

    Args:
        doc: the raw docstring, or None.

    Returns:
        The summary (first paragraph) and a dict of argument name to
        description; an argument described twice keeps its first description.
    """
    if not doc:
        return Docstring("", {})
    lines = inspect.cleandoc(doc).splitlines()
    params: Dict[str, str] = {}
    for index, line in enumerate(lines):
        stripped = line.strip()
        if _is_numpy_header(lines, index) and stripped.lower() in _ARG_SECTIONS:
            _read_numpy(lines, index + 2, _indent(line), params)
        elif _google_title(stripped) in _ARG_SECTIONS:
            _read_google(lines, index + 1, _indent(line), params)
        elif re.match(_SPHINX_PARAM, stripped):
            _read_sphinx(lines, index, params)
    return Docstring(_summary(lines), params)


def _summary(lines: List[str]) -> str:
    found: List[str] = []
    for index, line in enumerate(lines):
        stripped = line.strip()
        starts_section = (
            _google_title(stripped) in _ARG_SECTIONS | _OTHER_SECTIONS
            or _is_numpy_header(lines, index)
            or stripped.startswith(":")
        )
        if not stripped or starts_section:
            break
        found.append(stripped)
    return " ".join(found)


def _google_title(stripped: str) -> str:
    """Return the lower-cased title of a Google header line, or ""."""
    match = re.match(_GOOGLE_HEADER, stripped)
    return match.group(1).strip().lower() if match else ""


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _is_numpy_header(lines: List[str], index: int) -> bool:
    return (
        bool(lines[index].strip())
        and index + 1 < len(lines)
        and re.match(_NUMPY_RULE, lines[index + 1].strip()) is not None
    )


def _add(params: Dict[str, str], names: List[str], parts: List[str]) -> None:
    text = " ".join(part for part in parts if part)
    for name in names:
        if text:
            params.setdefault(name, text)


def _read_google(lines: List[str], start: int, header_indent: int, params: Dict[str, str]) -> None:
    """Read the entries of a Google section whose body starts at ``start``."""
    entry_indent: Optional[int] = None
    names: List[str] = []
    parts: List[str] = []
    for line in lines[start:]:
        stripped = line.strip()
        if not stripped:
            continue
        indent = _indent(line)
        if indent <= header_indent:
            break  # the section ended: the next header or free text
        if entry_indent is None:
            entry_indent = indent
        if indent <= entry_indent:
            _add(params, names, parts)
            match = re.match(_GOOGLE_ENTRY, stripped)
            names, parts = ([match.group(1)], [match.group(2).strip()]) if match else ([], [])
        else:
            parts.append(stripped)
    _add(params, names, parts)


def _read_numpy(lines: List[str], start: int, header_indent: int, params: Dict[str, str]) -> None:
    """Read the entries of a NumPy section whose body starts at ``start``."""
    names: List[str] = []
    parts: List[str] = []
    for index in range(start, len(lines)):
        line = lines[index]
        stripped = line.strip()
        if not stripped:
            continue
        if _is_numpy_header(lines, index) or _indent(line) < header_indent:
            break
        if _indent(line) == header_indent:
            _add(params, names, parts)
            match = re.match(_NUMPY_ENTRY, stripped)
            names = [name.strip().lstrip("*") for name in match.group(1).split(",")] if match else []
            parts = []
        else:
            parts.append(stripped)
    _add(params, names, parts)


def _read_sphinx(lines: List[str], start: int, params: Dict[str, str]) -> None:
    """Read one ``:param name:`` field and its indented continuation lines."""
    match = re.match(_SPHINX_PARAM, lines[start].strip())
    assert match is not None
    field_indent = _indent(lines[start])
    parts = [match.group(2).strip()]
    for line in lines[start + 1 :]:
        if not line.strip() or _indent(line) <= field_indent:
            break
        parts.append(line.strip())
    _add(params, [match.group(1)], parts)
