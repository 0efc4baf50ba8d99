"""The first difference between two JSON values, as a JSON path.

The rule: walk both values in the same order (object keys sorted, array
items by index) and stop at the first place where they differ in type, in
value, in a key present on one side only, or in array length (reported at
the first index one side lacks). The path uses the notation of
:class:`~agcore_sync.OutputValidationError`: ``$`` is the whole value,
``.key`` a member (``["key"]`` when the key is not an identifier), ``[i]``
an array item.
"""

from __future__ import annotations

import json
from typing import Any, Optional, Tuple

__all__ = ["MISSING", "first_difference", "shown"]


class _Missing:
    """The value on the side that has no member at a path."""

    def __repr__(self) -> str:
        return "(missing)"


#: Stands for "no value here" on one side of a difference.
MISSING: Any = _Missing()


def _member(path: str, key: str) -> str:
    return f"{path}.{key}" if key.isidentifier() else f"{path}[{key!r}]"


def first_difference(recorded: Any, sent: Any, path: str = "$") -> Optional[Tuple[str, Any, Any]]:
    """Return ``(json_path, recorded_value, sent_value)`` of the first difference, or None if equal."""
    if isinstance(recorded, dict) and isinstance(sent, dict):
        for key in sorted(set(recorded) | set(sent), key=str):
            found = first_difference(recorded.get(key, MISSING), sent.get(key, MISSING), _member(path, str(key)))
            if found is not None:
                return found
        return None
    if isinstance(recorded, list) and isinstance(sent, list):
        for index in range(max(len(recorded), len(sent))):
            left = recorded[index] if index < len(recorded) else MISSING
            right = sent[index] if index < len(sent) else MISSING
            found = first_difference(left, right, f"{path}[{index}]")
            if found is not None:
                return found
        return None
    # bool is an int in Python, not in JSON: true and 1 differ.
    if type(recorded) is not type(sent) and not (_number(recorded) and _number(sent)):
        return path, recorded, sent
    return None if recorded == sent else (path, recorded, sent)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def shown(value: Any, limit: int = 200) -> str:
    """Return ``value`` as JSON-like text for a message, cut to ``limit`` characters."""
    text = json.dumps(value, ensure_ascii=False) if isinstance(value, (dict, list)) else repr(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"

