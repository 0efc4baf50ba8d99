"""Errors of the agent layer.

Tree (under :class:`~agcore_sync.errors.AgcoreError`)::

    AgentError                  a session used wrongly (a turn already open, an unknown format)
    +-- SlotReadonlyError       a turn or write on a readonly slot
    +-- SlotNotFoundError       a slot name that does not exist
    +-- TurnPausedError         a new turn while one waits for approval
    +-- TurnNotPausedError      resume_turn / cancel_pending with no paused turn
    +-- ApprovalDecisionError   decisions that do not match the waiting calls (also a ValueError)
"""

from __future__ import annotations

from typing import Sequence, Tuple

from agcore_sync.errors import AgcoreError

__all__ = [
    "AgentError",
    "SlotReadonlyError",
    "SlotNotFoundError",
    "TurnPausedError",
    "TurnNotPausedError",
    "ApprovalDecisionError",
]


class AgentError(AgcoreError):
    """A session was used in a way it does not allow."""


class SlotReadonlyError(AgentError):
    """The current slot is readonly; nothing was sent."""


class SlotNotFoundError(AgentError):
    """No slot has that name."""


class TurnPausedError(AgentError):
    """A turn waits for approval: resume it or cancel it before anything else.

    Attributes:
        pending_ids: the ids of the calls that wait.

    .. versionadded:: 0.2
    """

    def __init__(self, message: str, pending_ids: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.pending_ids: Tuple[str, ...] = tuple(pending_ids)

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (type(self), (str(self), self.pending_ids))


class TurnNotPausedError(AgentError):
    """``resume_turn`` or ``cancel_pending`` on a session with no paused turn.

    .. versionadded:: 0.2
    """


class ApprovalDecisionError(AgentError, ValueError):
    """The decisions given to ``resume_turn`` do not match the waiting calls; nothing changed.

    Attributes:
        unknown: ids that name no waiting call.
        missing: waiting calls with no decision.

    .. versionadded:: 0.2
    """

    def __init__(self, message: str, unknown: Sequence[str] = (), missing: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.unknown: Tuple[str, ...] = tuple(unknown)
        self.missing: Tuple[str, ...] = tuple(missing)

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (type(self), (str(self), self.unknown, self.missing))
