"""Checks and the JSON codec shared by the session stores (core and contrib).

Kept apart from :mod:`agcore_sync.agent.store` so that every store, the
ones in ``agcore_sync.contrib`` included, validates arguments and reads
stored data by the same rules and with the same messages.
"""

from __future__ import annotations

import math
import re
from typing import Any, Dict, Optional

from agcore_sync._http import peer_json
from agcore_sync.agent.errors import SessionConflictError, SessionStoreError

__all__ = [
    "check_session_id",
    "check_ttl",
    "check_lease_ttl",
    "MIN_LEASE_TTL",
    "MAX_LEASE_TTL",
    "check_expected_version",
    "encode_data",
    "decode_data",
    "stored_version",
    "corrupt",
    "conflict",
]


def check_session_id(session_id: Any) -> str:
    """Return ``session_id`` if it is a non-empty str; else raise TypeError / ValueError."""
    if not isinstance(session_id, str):
        raise TypeError(f"session_id must be a str, not {type(session_id).__name__}")
    if not session_id:
        raise ValueError("session_id must not be empty")
    return session_id


def check_ttl(ttl: Any, name: str, *, optional: bool = False) -> Optional[float]:
    """Return ``ttl`` as a float if it is a positive finite number (or None when ``optional``)."""
    if ttl is None and optional:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not math.isfinite(ttl) or ttl <= 0:
        raise ValueError(f"{name} must be a positive number of seconds, not {ttl!r}")
    return float(ttl)


#: The shortest lease ``ttl`` (seconds): its renewal thread wakes every
#: ``ttl / 3``, so a shorter one would spin and lapse under any load.
MIN_LEASE_TTL = 0.5

#: The longest lease ``ttl`` (seconds, one day): a longer one overflows the
#: renewal thread's wait and keeps a dead holder's session blocked for days.
MAX_LEASE_TTL = 86_400.0


def check_lease_ttl(ttl: Any, name: str = "ttl") -> float:
    """Return a lease ``ttl`` as a float if it is a number from 0.5 to 86,400 seconds; else raise ValueError."""
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not MIN_LEASE_TTL <= ttl <= MAX_LEASE_TTL:
        raise ValueError(f"{name} must be a number of seconds from {MIN_LEASE_TTL:g} to {MAX_LEASE_TTL:,.0f}, "
                         f"not {ttl!r}")
    return float(ttl)


def check_expected_version(expected_version: Any) -> Optional[int]:
    """Return ``expected_version`` if it is None or an int; else raise TypeError."""
    if expected_version is not None and (isinstance(expected_version, bool) or not isinstance(expected_version, int)):
        raise TypeError(f"expected_version must be an int or None, not {type(expected_version).__name__}")
    return expected_version


def encode_data(session_id: str, data: Any) -> str:
    """Return ``data`` as compact JSON text; TypeError if it is not a JSON-ready mapping."""
    if not isinstance(data, dict):
        try:
            data = dict(data)
        except (TypeError, ValueError):
            raise TypeError(f"data for session {session_id!r} must be a mapping (AgentSession.to_dict()), "
                            f"not {type(data).__name__}") from None
    try:
        return peer_json.dumps(data, max_depth=peer_json.DOCUMENT_MAX_DEPTH, ensure_ascii=False,
                               separators=(",", ":"))
    except peer_json.TooDeep as exc:
        raise SessionStoreError(f"session {session_id!r} cannot be saved: {exc}; nothing was written",
                                session_id=session_id) from None
    except (TypeError, ValueError) as exc:
        raise TypeError(f"data for session {session_id!r} is not JSON-ready: {exc}") from exc


def decode_data(text: Any, *, session_id: str, where: str, path: Optional[str] = None) -> Dict[str, Any]:
    """Parse stored JSON text back into a dict, or raise :class:`SessionStoreError` naming the session.

    Args:
        text: the stored text (str or UTF-8 bytes).
        session_id: the session it belongs to.
        where: the store, as the message should name it.
        path: the store's file, if it has one.
    """
    try:
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8")
        data = peer_json.loads(text, allow_constants=True, max_depth=peer_json.DOCUMENT_MAX_DEPTH)
    except (TypeError, ValueError) as exc:
        raise corrupt(session_id, f"not JSON: {exc}", where, path) from exc
    if not isinstance(data, dict):
        raise corrupt(session_id, f"a JSON {type(data).__name__}, not an object", where, path)
    return data


#: A stored version: a positive whole number in ASCII digits (no sign, no spaces).
_VERSION = re.compile(r"[1-9][0-9]{0,18}", re.ASCII)


def stored_version(value: Any, *, session_id: str, where: str, path: Optional[str] = None) -> int:
    """Return a stored version as an int, or raise :class:`SessionStoreError` if it is corrupt.

    An int (SQLite) or ASCII digits (Redis, str or bytes) of a positive
    number are a version; anything else (``'abc'``, ``1.5``, ``0``) is a
    corrupt row.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        if value > 0:
            return value
    elif isinstance(value, (str, bytes, bytearray)):
        text = value.decode("ascii", "replace") if isinstance(value, (bytes, bytearray)) else value
        if _VERSION.fullmatch(text):
            return int(text)
    shown = repr(value if not isinstance(value, (str, bytes, bytearray)) or len(value) <= 40 else value[:40])
    raise corrupt(session_id, f"its version {shown} is not a positive whole number", where, path)


def corrupt(session_id: str, what: str, where: str, path: Optional[str] = None) -> SessionStoreError:
    """Build the :class:`SessionStoreError` of a corrupt stored session (which is left as it is)."""
    return SessionStoreError(
        f"stored session {session_id!r} in {where} is corrupt ({what}); it was left as it is: "
        f"restore it from a backup or delete it with store.delete({session_id!r})",
        path=path, session_id=session_id)


def conflict(session_id: str, expected: Optional[int], actual: Optional[int], where: str) -> SessionConflictError:
    """Build the :class:`SessionConflictError` of a refused save."""
    if expected is None:
        what = f"session {session_id!r} already exists in {where} (version {actual}) and the save expected a new id"
    elif actual is None:
        what = f"session {session_id!r} is not in {where} (deleted or expired) and the save expected version {expected}"
    else:
        what = f"session {session_id!r} in {where} is at version {actual}, the save expected version {expected}"
    return SessionConflictError(
        f"{what}; nothing was written: load it again, redo the change and save",
        session_id=session_id, expected_version=expected, actual_version=actual)
