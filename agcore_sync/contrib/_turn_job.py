"""TurnJob: what a web process enqueues to run a session turn in a job worker.

Import it from :mod:`agcore_sync.contrib.jobs`.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Mapping, Optional

import attrs

from agcore_sync.hooks import Approve, Decision, Deny

__all__ = ["TurnJob", "MAX_TURN_ID_LENGTH", "is_turn_id"]

#: The longest turn id (a uuid4 has 36 characters).
MAX_TURN_ID_LENGTH = 128

_TURN_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def is_turn_id(value: Any) -> bool:
    """Say whether ``value`` is a valid turn id (1 to 128 letters, digits, ``_``, ``-``)."""
    return isinstance(value, str) and 0 < len(value) <= MAX_TURN_ID_LENGTH and set(value) <= _TURN_ID_CHARS


def _check_id(name: str) -> Callable[[Any, Any, Any], None]:
    def check(_instance: Any, _attribute: Any, value: Any) -> None:
        if not isinstance(value, str):
            raise TypeError(f"TurnJob.{name} must be a str, not {type(value).__name__}")
        if not value:
            raise ValueError(f"TurnJob.{name} must not be empty")
        if name == "turn_id" and not is_turn_id(value):
            raise ValueError(f"TurnJob.turn_id must be 1 to {MAX_TURN_ID_LENGTH} letters, digits, '_' or '-' "
                             f"(a job id for RQ and Celery, a key part for Redis), not {value!r}")
    return check


def _check_user_input(_instance: Any, _attribute: Any, value: Any) -> None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"TurnJob.user_input must be a str or None, not {type(value).__name__}")


def _decision_dict(call_id: Any, decision: Any) -> Dict[str, Any]:
    if not isinstance(call_id, str) or not call_id:
        raise ValueError(f"TurnJob.decisions: a tool call id must be a non-empty str, not {call_id!r}")
    if isinstance(decision, Approve):
        return {"approve": True}
    if isinstance(decision, Deny):
        return {"deny": decision.reason}
    if isinstance(decision, Mapping):
        if dict(decision) == {"approve": True}:
            return {"approve": True}
        if set(decision) == {"deny"} and isinstance(decision["deny"], str):
            return {"deny": decision["deny"]}
    raise ValueError(f"TurnJob.decisions[{call_id!r}] must be {{'approve': True}}, {{'deny': 'reason'}}, "
                     f"Approve() or Deny(reason), not {decision!r}")


def _decisions(value: Any) -> Optional[Dict[str, Dict[str, Any]]]:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise TypeError(f"TurnJob.decisions must be a dict of tool_call_id -> decision, not {type(value).__name__}")
    return {call_id: _decision_dict(call_id, decision) for call_id, decision in value.items()}


@attrs.frozen(kw_only=True)
class TurnJob:
    """What a web process enqueues to run a turn in a job worker (plain JSON).

    Exactly one of ``user_input`` (a new turn) and ``decisions`` (resume
    the session's paused turn) is set.

    Attributes:
        session_id: the session, in the runner's store; a new turn of an
            unknown id starts a new session.
        turn_id: the relay stream's name, and the job's id: unique per turn
            and per resume (1 to 128 letters, digits, ``_``, ``-``; a uuid4).
        user_input: the user message of a new turn.
        decisions: for a resume, ``{tool_call_id: {"approve": True} |
            {"deny": "reason"}}``; ``Approve()`` and ``Deny(reason)`` are
            accepted and stored as those dicts.

    Raises:
        TypeError, ValueError: a field of the wrong type or form, or not
            exactly one of ``user_input`` and ``decisions``.

    .. versionadded:: 0.2
    """

    session_id: str = attrs.field(validator=_check_id("session_id"))
    turn_id: str = attrs.field(validator=_check_id("turn_id"))
    user_input: Optional[str] = attrs.field(default=None, validator=_check_user_input)
    decisions: Optional[Dict[str, Dict[str, Any]]] = attrs.field(default=None, converter=_decisions)

    def __attrs_post_init__(self) -> None:
        if (self.user_input is None) == (self.decisions is None):
            raise ValueError("a TurnJob has exactly one of user_input (a new turn) and decisions (a resume); "
                             f"turn {self.turn_id!r} has {'both' if self.user_input is not None else 'neither'}")

    @property
    def resumes(self) -> bool:
        """True for a resume (``decisions``), False for a new turn."""
        return self.decisions is not None

    def session_decisions(self) -> Dict[str, Decision]:
        """Return ``decisions`` as ``Approve()`` / ``Deny(reason)`` values, for ``resume_turn_stream``."""
        return {call_id: Approve() if "approve" in decision else Deny(decision["deny"])
                for call_id, decision in (self.decisions or {}).items()}

    def to_dict(self) -> Dict[str, Any]:
        """Return the job as a JSON-ready dict (what the job system carries)."""
        return {"session_id": self.session_id, "turn_id": self.turn_id, "user_input": self.user_input,
                "decisions": None if self.decisions is None else {k: dict(v) for k, v in self.decisions.items()}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TurnJob:
        """Rebuild a job from :meth:`to_dict`.

        Raises:
            TypeError: ``data`` is not a mapping.
            ValueError: a key is missing or unknown, or a field is invalid.
        """
        if not isinstance(data, Mapping):
            raise TypeError(f"a TurnJob is a dict, not {type(data).__name__}")
        unknown = sorted(set(data) - {"session_id", "turn_id", "user_input", "decisions"})
        if unknown:
            raise ValueError(f"a TurnJob has no field(s) {unknown}")
        missing = [name for name in ("session_id", "turn_id") if name not in data]
        if missing:
            raise ValueError(f"a TurnJob needs {missing}")
        return cls(session_id=data["session_id"], turn_id=data["turn_id"], user_input=data.get("user_input"),
                   decisions=data.get("decisions"))
