"""Argument checks for public constructors: one line naming the argument and what to do.

Constructors call these before they store anything, so a mistake is a
``TypeError`` / ``ValueError`` where it was made, not an ``AttributeError``
deep inside the first request. Each check returns the value it accepted.
"""

from __future__ import annotations

import urllib.parse
from typing import Any, Mapping, Optional, Sequence, Tuple, Type, TypeVar, Union

__all__ = [
    "http_url",
    "instance",
    "optional_instance",
    "optional_str",
    "positive_int",
    "positive_number",
    "str_mapping",
    "str_sequence",
    "timeout",
]

T = TypeVar("T")

#: How much of a wrong value a message shows.
_SHOWN = 60


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN - 3] + "..."


def _got(value: Any) -> str:
    return f"got {type(value).__name__} {_shown(value)}"


def instance(owner: str, name: str, value: Any, cls: Union[Type[T], Tuple[type, ...]], what: str) -> T:
    """Return ``value`` if it is a ``cls``, else raise ``TypeError`` saying ``what`` is expected."""
    if not isinstance(value, cls):
        raise TypeError(f"{owner}: {name} must be {what}, {_got(value)}")
    return value


def optional_instance(owner: str, name: str, value: Any, cls: Union[type, Tuple[type, ...]], what: str) -> Any:
    """Like :func:`instance`, None accepted."""
    return None if value is None else instance(owner, name, value, cls, what)


def optional_str(owner: str, name: str, value: Any) -> Optional[str]:
    """Return ``value`` if it is a str or None."""
    return optional_instance(owner, name, value, str, "a str")


def positive_number(owner: str, name: str, value: Any, *, allow_none: bool = False,
                    allow_zero: bool = False) -> Optional[float]:
    """Return ``value`` if it is a real number above 0 (or at least 0, or None when allowed)."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not (isinstance(value, (int, float)) or _other_real(value)):
        what = "a number of seconds" if "timeout" in name or name.endswith("_secs") else "a number"
        hint = " (a number, not a string)" if isinstance(value, str) else ""
        raise TypeError(f"{owner}: {name} must be {what}{hint}, {_got(value)}")
    if value < 0 or (value == 0 and not allow_zero) or value != value:
        bound = "0 or more" if allow_zero else "above 0"
        raise ValueError(f"{owner}: {name} must be {bound}, got {_shown(value)}")
    return value


def _other_real(value: Any) -> bool:
    # numbers loads only for a value that is neither int nor float (a Fraction, a
    # numpy float): 0.3 ms that most programs never need.
    import numbers

    return isinstance(value, numbers.Real)


def positive_int(owner: str, name: str, value: Any, *, allow_none: bool = False, allow_zero: bool = False) -> Any:
    """Return ``value`` if it is an int above 0 (or at least 0, or None when allowed)."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{owner}: {name} must be an int, {_got(value)}")
    if value < 0 or (value == 0 and not allow_zero):
        bound = "0 or more" if allow_zero else "1 or more"
        raise ValueError(f"{owner}: {name} must be {bound}, got {value}")
    return value


def timeout(owner: str, value: Any, *, name: str = "timeout") -> Any:
    """Return a requests-style timeout: seconds, ``(connect, read)`` seconds, or None."""
    if isinstance(value, tuple):
        if len(value) != 2:
            raise ValueError(f"{owner}: {name} as a tuple must be (connect, read) seconds, got {_shown(value)}")
        for part in value:
            positive_number(owner, name, part, allow_none=True)
        return value
    return positive_number(owner, name, value, allow_none=True)


def http_url(owner: str, name: str, value: Any) -> str:
    """Return ``value`` if it is an http(s) URL with a host; explain a missing scheme."""
    if not isinstance(value, str):
        raise TypeError(f"{owner}: {name} must be a URL str such as 'https://host/v1', {_got(value)}")
    parts = urllib.parse.urlsplit(value)
    if parts.scheme in ("http", "https") and parts.netloc:
        return value
    if not parts.scheme or not parts.netloc:
        raise ValueError(f"{owner}: {name} {_shown(value)} has no http:// or https:// scheme; "
                         f"write it in full, e.g. 'http://{value.lstrip('/')}'")
    raise ValueError(f"{owner}: {name} must be an http or https URL, got {_shown(value)}")


def str_mapping(owner: str, name: str, value: Any) -> Optional[Mapping[str, str]]:
    """Return ``value`` if it is None or a mapping of str to str (headers, environment)."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise TypeError(f"{owner}: {name} must be a dict of str to str, {_got(value)}")
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, str):
            raise TypeError(f"{owner}: {name} must map str to str, got {_shown(key)}: {type(item).__name__}")
    return value


def str_sequence(owner: str, name: str, value: Any) -> Sequence[str]:
    """Return ``value`` if it is a list or tuple of str (a lone str is a mistake, not a sequence)."""
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        hint = f"; for one item write [{_shown(value)}]" if isinstance(value, str) else ""
        raise TypeError(f"{owner}: {name} must be a list of str{hint}, {_got(value)}")
    for item in value:
        if not isinstance(item, str):
            raise TypeError(f"{owner}: {name} must hold str only, got {type(item).__name__} {_shown(item)}")
    return value
