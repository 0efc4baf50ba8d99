"""The argument check of every resilience limit (circuit breaker, rate limits).

DESIGN.md pins it: a limit that is not a number (``"60"`` included), is
zero or negative is a ``ValueError`` naming the argument, at construction.
(The general checks in :mod:`agcore_sync._check` raise ``TypeError`` for a
string; here the contract says ``ValueError`` for every bad limit.)
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["check_limit"]


def check_limit(owner: str, name: str, value: Any, *, integer: bool = False, allow_zero: bool = False) -> Any:
    """Return ``value`` if it is a finite number > 0 (an int if ``integer``); else raise ValueError.

    ``bool`` and ``str`` are refused: ``True`` is no limit and ``"60"`` is text.
    """
    ok_types = (int,) if integer else (int, float)
    kind = "an int" if integer else "a number"
    bound = ">= 0" if allow_zero else "> 0"
    if isinstance(value, bool) or not isinstance(value, ok_types):
        hint = " (a number, not a string)" if isinstance(value, str) else ""
        raise ValueError(f"{owner}: {name} must be {kind} {bound}{hint}, got {type(value).__name__} {value!r}")
    if math.isnan(value) or math.isinf(value) or value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{owner}: {name} must be a finite {kind[3:] if integer else 'number'} {bound}, "
                         f"got {value!r}")
    return value
