"""Saving a session to a store and loading it back: the store side of :class:`AgentSession`.

A mixin of :class:`~agcore_sync.agent.session.AgentSession` (its ``load``
and ``save``), apart from the turn machinery; the document they move is
``to_dict`` / ``from_dict``'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from agcore_sync import _check
from agcore_sync.agent._store_mark import read_stored, unreadable
from agcore_sync.agent.errors import AgentError
from agcore_sync.hooks import Hooks
from agcore_sync.llm.cost import PricingArg
from agcore_sync.llm.provider import LlmProvider
from agcore_sync.loop._conversation import check_parts
from agcore_sync.tools.registry import ToolRegistry

if TYPE_CHECKING:  # pragma: no cover
    from agcore_sync.agent.store import SessionStore

__all__ = ["SessionPersistence"]


class SessionPersistence:
    """The store methods of :class:`~agcore_sync.agent.session.AgentSession` (a mixin)."""

    _stored: Any

    def to_dict(self) -> Any:  # pragma: no cover - AgentSession's
        """Return the session's state (see ``AgentSession.to_dict``)."""
        raise NotImplementedError

    @classmethod
    def from_dict(cls, data: Any, **parts: Any) -> Any:  # pragma: no cover - AgentSession's
        """Rebuild a session (see ``AgentSession.from_dict``)."""
        raise NotImplementedError

    @classmethod
    def load(cls, store: SessionStore, session_id: str, *, provider: LlmProvider,
             registry: Optional[ToolRegistry] = None, hooks: Optional[Hooks] = None, compact: Any = None,
             pricing: PricingArg = None) -> Any:
        """Load a session from a :class:`~agcore_sync.agent.store.SessionStore`.

        The session remembers the version it loaded, so that a later
        :meth:`save` to the same store and id overwrites exactly that
        version. The other arguments are those of :meth:`from_dict`.

        Raises:
            SessionNotFoundError: the store has no such session (also a ``KeyError``).
            SessionStoreError: the stored session is corrupt or of an unknown
                format; the store is left as it is.
        """
        # Argument mistakes are the caller's (TypeError), not a corrupt stored session.
        check_parts("AgentSession.load", provider, None, hooks)
        _check.optional_instance("AgentSession.load", "registry", registry, ToolRegistry, "a ToolRegistry")
        stored = read_stored(store, session_id)
        try:
            session = cls.from_dict(stored.data, provider=provider, registry=registry, hooks=hooks,
                                    compact=compact, pricing=pricing)
        except (AgentError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise unreadable(store, session_id, stored, exc) from exc
        session._stored.remember(store, session_id, stored.version)
        return session

    def save(self, store: SessionStore, session_id: str) -> int:
        """Save :meth:`to_dict` to ``store`` under ``session_id``; return the new version.

        The save expects the version this session last loaded from or saved
        to that store and id (a session never stored there must be new), so
        a save from a stale copy raises instead of overwriting another
        worker's turns. Save after a turn has ended.

        Raises:
            SessionConflictError: the stored version is not the expected one
                (load again, redo the turn, save); nothing was written.
        """
        version = store.save(session_id, self.to_dict(), self._stored.expected(store, session_id))
        self._stored.remember(store, session_id, version)
        return version


