"""Errors of the agent layer.

Tree (under :class:`~agcore_sync.errors.AgcoreError`)::

    AgentError                  a session used wrongly (a turn already open, an unknown format)
    +-- SlotReadonlyError       a turn or write on a readonly slot
    +-- SlotNotFoundError       a slot name that does not exist
    +-- TurnPausedError         a new turn while one waits for approval
    +-- TurnNotPausedError      resume_turn / cancel_pending with no paused turn
    +-- ApprovalDecisionError   decisions that do not match the waiting calls (also a ValueError)
    +-- SessionNotFoundError    no stored session has that id (also a KeyError)
    +-- SessionConflictError    a save whose expected version is not the stored one
    +-- SessionBusyError        another holder's lease on the session is alive
    +-- SessionStoreError       the store cannot be used: not a store, a newer schema,
                                a corrupt stored session, the backend failing

The store errors carry their facts as attributes (``session_id``, and
``path``, ``expected_version``, ``actual_version`` where they apply).
"""

from __future__ import annotations

from typing import Optional, Sequence, Tuple

from agcore_sync.errors import AgcoreError

__all__ = [
    "AgentError",
    "SlotReadonlyError",
    "SlotNotFoundError",
    "TurnPausedError",
    "TurnNotPausedError",
    "ApprovalDecisionError",
    "SessionNotFoundError",
    "SessionConflictError",
    "SessionBusyError",
    "SessionStoreError",
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


class SessionNotFoundError(AgentError, KeyError):
    """No stored session has this id (or it expired).

    Also a :class:`KeyError`, so ``except KeyError`` code written for a
    mapping of sessions keeps working.

    Args:
        message: what was looked up, where.
        session_id: the id that was not found.
    """

    def __init__(self, message: str, *, session_id: Optional[str] = None) -> None:
        super().__init__(message)
        #: The id that was not found.
        self.session_id = session_id

    def __str__(self) -> str:
        # KeyError's str() is the repr of its argument; show the message as written.
        return str(self.args[0]) if self.args else ""


class SessionConflictError(AgentError):
    """A save found another version than the one it expected; nothing was written.

    Someone else saved the session since it was loaded (or the id was
    expected to be new and exists). Load it again, redo the change, save.

    Args:
        message: what conflicted and what to do.
        session_id: the session.
        expected_version: the version the save expected (None: a new id).
        actual_version: the stored version (None: no stored session).
    """

    def __init__(self, message: str, *, session_id: Optional[str] = None, expected_version: Optional[int] = None,
                 actual_version: Optional[int] = None) -> None:
        super().__init__(message)
        #: The session.
        self.session_id = session_id
        #: The version the save expected (None: the id was expected to be new).
        self.expected_version = expected_version
        #: The version found in the store (None: no stored session).
        self.actual_version = actual_version


class SessionBusyError(AgentError):
    """Another holder's lease on the session is alive.

    Args:
        message: which session, and what to do.
        session_id: the session.
    """

    def __init__(self, message: str, *, session_id: Optional[str] = None) -> None:
        super().__init__(message)
        #: The session.
        self.session_id = session_id


class SessionStoreError(AgentError):
    """The store cannot be used as asked; nothing in it was changed.

    Raised for a file that is not a session store, a store written by a
    newer schema, a stored session that is corrupt, and a backend that
    fails (an I/O error, a lost connection: the cause is chained).

    Args:
        message: what failed, on which path or session, and what to do.
        path: the store's file, where it has one.
        session_id: the session concerned, if one is.
    """

    def __init__(self, message: str, *, path: Optional[str] = None, session_id: Optional[str] = None) -> None:
        super().__init__(message)
        #: The store's file (None for a store without one).
        self.path = path
        #: The session concerned (None when the whole store is).
        self.session_id = session_id
