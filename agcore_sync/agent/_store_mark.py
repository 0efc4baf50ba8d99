"""What a session remembers of the store it last used: for ``load`` and the versioned ``save``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Tuple

from agcore_sync.agent.errors import SessionNotFoundError, SessionStoreError

if TYPE_CHECKING:  # pragma: no cover
    from agcore_sync.agent.store import SessionStore, StoredSession

__all__ = ["StoreMark", "read_stored", "unreadable"]


class StoreMark:
    """The (store, session id, version) a session last loaded from or saved to.

    A save to the same store and id expects that version; a save anywhere
    else expects a new id (``expected_version=None``).
    """

    def __init__(self) -> None:
        self._mark: Optional[Tuple[SessionStore, str, int]] = None

    def expected(self, store: SessionStore, session_id: str) -> Optional[int]:
        """Return the version a save of ``session_id`` to ``store`` must find."""
        mark = self._mark
        return mark[2] if mark is not None and mark[0] is store and mark[1] == session_id else None

    def remember(self, store: SessionStore, session_id: str, version: int) -> None:
        """Note the version just loaded or saved."""
        self._mark = (store, session_id, version)


def read_stored(store: SessionStore, session_id: str) -> StoredSession:
    """Return the stored session ``session_id``.

    Raises:
        SessionNotFoundError: the store has none.
    """
    stored = store.load(session_id)
    if stored is None:
        raise SessionNotFoundError(f"no session {session_id!r} in {store!r}", session_id=session_id)
    return stored


def unreadable(store: SessionStore, session_id: str, stored: StoredSession, exc: BaseException) -> SessionStoreError:
    """Return the error for a stored session ``from_dict`` cannot read (the store is left as it is)."""
    return SessionStoreError(
        f"stored session {session_id!r} in {store!r} (version {stored.version}) cannot be loaded: {exc}; "
        f"it was left as it is", path=getattr(store, "path", None), session_id=session_id)
