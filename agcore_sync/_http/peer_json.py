"""JSON from a peer: the one strict parse for text another program sent.

One idea: text that came from outside (a provider's body or stream event, a
model's tool arguments or structured answer, a stored session) becomes
Python values only through :func:`loads`, and values go back out as JSON
through :func:`dumps`, by the same rules everywhere:

- Nesting deeper than :data:`MAX_DEPTH` is refused. Python's parser raises
  a bare ``RecursionError`` on text nested a thousand levels deep, and text
  that parses a little below that still overflows the stack later, in any
  code that walks the value recursively (masking, schema validation,
  ``copy.deepcopy``, ``json.dumps``). A bound well under the recursion limit
  keeps every later step safe. ``serde_json`` stops at 128 levels for the
  same reason.
- ``NaN``, ``Infinity`` and ``-Infinity`` (which Python's ``json`` accepts
  although JSON does not have them) are refused unless the caller allows
  them: such a value reaching a tool, or a saved session, makes data that no
  other JSON parser reads back.

Both raise :class:`PeerJsonError`, a ``ValueError``: each edge already turns
``ValueError`` into the typed error of its path (``ResponseParseError`` for a
provider body, ``OutputValidationError`` for a structured answer, invalid
arguments for a tool call, ``SessionStoreError`` for a store), so the typed
error is the caller's choice and ``RecursionError`` never escapes.
"""

from __future__ import annotations

import json
import math
from typing import Any, Optional

__all__ = ["MAX_DEPTH", "DOCUMENT_MAX_DEPTH", "PeerJsonError", "TooDeep", "loads", "dumps", "check_value"]

#: The deepest nesting (arrays and objects) accepted in JSON from a peer.
MAX_DEPTH = 128

#: The deepest nesting of a document that holds peer values inside its own
#: structure (a saved session keeps tool arguments a few levels down).
DOCUMENT_MAX_DEPTH = 2 * MAX_DEPTH

_CONTAINERS = (dict, list, tuple)


class PeerJsonError(ValueError):
    """JSON from a peer that this library does not take: not JSON, a NaN/Infinity, or nested too deep."""


class TooDeep(PeerJsonError):
    """JSON (or data to write as JSON) nested deeper than the bound."""


def _refuse_constant(name: str) -> Any:
    raise PeerJsonError(f"{name} is not a JSON value")


_INFINITE = (math.inf, -math.inf)


def _problem(value: Any, limit: int, constants: bool) -> Optional[PeerJsonError]:
    """Return what makes ``value`` unfit (nesting beyond ``limit``, a non-finite float), or None; never recurses."""
    kind = type(value)
    if kind is float or isinstance(value, float):
        if not constants and (value != value or value in _INFINITE):
            return PeerJsonError("NaN and Infinity are not JSON values")
        return None
    if not isinstance(value, _CONTAINERS):
        return None
    stack = [(value, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        item, depth = pop()
        if depth > limit:
            return TooDeep(f"JSON nested deeper than {limit} levels")
        for child in item.values() if isinstance(item, dict) else item:
            kind = type(child)
            if kind is str or kind is int or kind is bool or child is None:
                continue
            if kind is float or isinstance(child, float):
                if not constants and (child != child or child in _INFINITE):
                    return PeerJsonError("NaN and Infinity are not JSON values")
            elif isinstance(child, _CONTAINERS):
                push((child, depth + 1))
    return None


def loads(text: Any, *, allow_constants: bool = False, max_depth: int = MAX_DEPTH) -> Any:
    """Parse JSON ``text`` (str or UTF-8 bytes) from a peer.

    Args:
        text: the text as it came.
        allow_constants: accept ``NaN``/``Infinity`` (as Python floats).
        max_depth: the deepest nesting accepted.

    Raises:
        PeerJsonError: not JSON, a refused constant, or nesting deeper than
            ``max_depth`` (never ``RecursionError``).
    """
    try:
        if allow_constants:
            value = json.loads(text)
        else:
            value = json.loads(text, parse_constant=_refuse_constant)
    except PeerJsonError:
        raise
    except RecursionError:
        raise TooDeep(f"JSON nested deeper than {max_depth} levels") from None
    except ValueError as exc:
        raise PeerJsonError(str(exc)) from None
    # Counting brackets is fast (C); only text with that many is walked.
    if isinstance(value, _CONTAINERS) and _bracket_count(text) > max_depth:
        problem = _problem(value, max_depth, True)
        if problem is not None:
            raise problem
    return value


def _bracket_count(text: Any) -> int:
    if isinstance(text, str):
        return text.count("[") + text.count("{")
    return bytes(text).count(b"[") + bytes(text).count(b"{")


def check_value(value: Any, *, allow_constants: bool = False, max_depth: int = MAX_DEPTH) -> Any:
    """Return ``value`` (already parsed, e.g. given as a dict) if :func:`loads` could have returned it.

    Raises:
        PeerJsonError: it nests deeper than ``max_depth``, or holds a
            non-finite float and ``allow_constants`` is False.
    """
    problem = _problem(value, max_depth, allow_constants)
    if problem is not None:
        raise problem
    return value


def dumps(value: Any, *, max_depth: Optional[int] = None, **options: Any) -> str:
    """Return ``value`` as JSON text (``NaN``/``Infinity`` refused), never raising ``RecursionError``.

    Args:
        value: plain JSON data.
        max_depth: refuse data nested deeper than this (None: only what
            the encoder cannot do).
        options: passed to ``json.dumps`` (``allow_nan`` defaults to False).

    Raises:
        PeerJsonError: nested too deep, or a non-finite float.
        TypeError: ``value`` holds something that is not JSON.
    """
    options.setdefault("allow_nan", False)
    if max_depth is not None:
        check_value(value, allow_constants=True, max_depth=max_depth)
    try:
        return json.dumps(value, **options)
    except RecursionError:
        raise TooDeep("data nested too deep to write as JSON") from None
    except ValueError as exc:
        raise PeerJsonError(str(exc)) from None
