"""What the package's attrs value classes share: a tuple converter and three methods.

Both exist to keep the import cheap; what the classes do is unchanged.

- :func:`as_tuple` is the ``converter=`` of fields stored as tuples, in place
  of ``converter=tuple``: attrs reads a converter's signature when it builds
  the class, and for the builtin ``tuple`` the first such read in a process
  costs about 1.5 ms (``inspect`` tokenizes its text signature).
- :func:`value_methods` gives a class one shared ``__repr__``, ``__eq__`` and
  ``__hash__`` before attrs builds it (``@attrs.frozen`` above
  ``@value_methods``); attrs then writes only ``__init__``, as it never
  replaces a method the class defines. attrs generates those three methods
  as source for every class and compiles them; that compile is most of the
  cost of a class at import (in Python < 3.12 the repr's f-string above
  all), about 5 ms over the classes a first use loads. The shared methods
  give the same results as the generated ones: the same ``repr`` text
  (``Name(field=value, ...)`` over the fields with ``repr`` set, a field's
  own ``repr=`` callable where it has one, ``...`` for an object met again
  inside itself), equality over the fields with ``eq`` set (``eq_key``
  applied) between instances of the very same class, and a hash over those
  fields and the class. tests/test_values.py compares them with attrs' own.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, Optional, Tuple, TypeVar

import attrs

__all__ = ["as_tuple", "value_methods"]

C = TypeVar("C", bound=type)


def as_tuple(value) -> Tuple[Any, ...]:  # value unannotated on purpose, see below
    """Return ``tuple(value)``: the ``converter=`` of attrs fields that store a tuple.

    The parameter has no annotation, as ``tuple``'s has none: attrs copies a
    converter's parameter type into the generated ``__init__``.
    """
    return tuple(value)


def value_methods(cls: C) -> C:
    """Give ``cls`` the shared ``__repr__``, ``__eq__`` and ``__hash__`` (see the module docstring).

    Apply it below ``@attrs.frozen``, to a class that defines none of the
    three itself.
    """
    cls.__repr__ = _repr  # type: ignore[assignment]
    cls.__eq__ = _eq  # type: ignore[assignment]
    cls.__hash__ = _hash  # type: ignore[assignment]
    return cls


# What the methods read of a class's fields, worked out once per class.
_Key = Optional[Callable[[Any], Any]]


class _Plan:
    __slots__ = ("shown", "compared", "hashed", "salt")

    def __init__(self, cls: type) -> None:
        fields = attrs.fields(cls)
        #: (name, its repr callable or None for repr(), read with a default as attrs does for init=False)
        self.shown: Tuple[Tuple[str, Optional[Callable[[Any], str]], bool], ...] = tuple(
            (f.name, None if f.repr is True else f.repr, not f.init) for f in fields if f.repr is not False)
        self.compared: Tuple[Tuple[str, _Key], ...] = tuple((f.name, f.eq_key) for f in fields if f.eq)
        self.hashed: Tuple[Tuple[str, _Key], ...] = tuple(
            (f.name, f.eq_key) for f in fields if f.hash is True or (f.hash is None and f.eq is True))
        # Stands for the class in the hash, as attrs' generated __hash__ puts a per-class number first.
        self.salt = hash((cls.__module__, cls.__qualname__, "attrs hash"))


_PLANS: Dict[type, _Plan] = {}


def _plan(cls: type) -> _Plan:
    plan = _PLANS.get(cls)
    if plan is None:  # racing threads build equal plans; either may stay
        plan = _PLANS[cls] = _Plan(cls)
    return plan


# The ids of the objects being shown by this thread: a value met again inside
# itself is shown as "...", as attrs does.
_showing = threading.local()


def _repr(self: Any) -> str:
    try:
        seen = _showing.ids
    except AttributeError:
        seen = _showing.ids = set()
    if id(self) in seen:
        return "..."
    seen.add(id(self))
    try:
        parts = []
        for name, show, lenient in _plan(self.__class__).shown:
            value = getattr(self, name, attrs.NOTHING) if lenient else getattr(self, name)
            parts.append(f"{name}={value!r}" if show is None else f"{name}={show(value)}")
        return f"{self.__class__.__qualname__.rsplit('>.', 1)[-1]}({', '.join(parts)})"
    finally:
        seen.discard(id(self))


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    # Like the generated "a == b and c == d ...": the first false result, else the last one.
    result: Any = True
    for name, key in _plan(self.__class__).compared:
        if key is None:
            result = getattr(self, name) == getattr(other, name)
        else:
            result = key(getattr(self, name)) == key(getattr(other, name))
        if not result:
            return result
    return result


def _hash(self: Any) -> int:
    plan = _plan(self.__class__)
    return hash((plan.salt, *[getattr(self, name) if key is None else key(getattr(self, name))
                              for name, key in plan.hashed]))
