"""Session stores: where a session's ``to_dict()`` lives between requests.

A :class:`SessionStore` keeps JSON documents by session id, each with a
version number, so that several processes (web workers, job workers) can
load a session, run a turn and save it without losing each other's turns:

- ``save(session_id, data, expected_version=None)`` writes only if the
  stored version is the one the caller loaded (None: the id must be new);
  otherwise it raises :class:`SessionConflictError` and writes nothing. It
  returns the new version. Versions of one id only grow, even across a
  delete, so a version seen once never names other data.
- ``lease(session_id, ttl)`` is an advisory lock, to keep two workers from
  running turns of one session at once. Correctness never depends on it:
  ``save`` is guarded by versions, not by the lease.

Leases (:class:`SessionLease`): a holder's lease lives ``ttl`` seconds from
its last renewal. While a lease is held, a renewal thread owned by the
lease, ``agcore-lease-<n>``, renews it every ``ttl / 3`` seconds; leaving
the ``with`` block stops and joins that thread and releases the lease. A
holder that dies without releasing stops blocking within ``ttl`` seconds.
The thread is a daemon so that a backend call stuck on a dead connection
never keeps the interpreter alive; it is still joined, with a bound.

:class:`~agcore_sync.agent.sqlite_store.SqliteSessionStore` is the embedded
default; ``agcore_sync.contrib.redis.RedisSessionStore`` shares state
between machines.
"""

from __future__ import annotations

import abc
import itertools
import secrets
import threading
import time
from typing import Any, Dict, Mapping, Optional, Protocol

import attrs

from agcore_sync import _instrument
from agcore_sync.agent._store_support import check_lease_ttl, check_session_id
from agcore_sync.agent.errors import AgentError, SessionBusyError

__all__ = ["StoredSession", "SessionStore", "SessionLease", "LeaseBackend", "DEFAULT_LEASE_TTL"]

logger = _instrument.get_logger("agcore_sync.store")

#: The default ``ttl`` of :meth:`SessionStore.lease`, in seconds.
DEFAULT_LEASE_TTL = 60.0

#: A lease is renewed this many times per ``ttl``, so that one or two slow
#: renewals (a busy database, a slow network) do not let it lapse.
RENEWALS_PER_TTL = 3

#: How long leaving a lease waits for its renewal thread. The thread is
#: woken at once; it may only be inside one renewal call, which the
#: backend's own timeout bounds.
RENEWAL_JOIN_TIMEOUT = 5.0

_numbers = itertools.count(1)


@attrs.frozen
class StoredSession:
    """A stored session: its data and its version.

    Attributes:
        data: the ``to_dict()`` of the session, as it was saved.
        version: the version of that data; pass it to ``save`` as
            ``expected_version`` to overwrite exactly this data.
    """

    data: Dict[str, Any]
    version: int


class LeaseBackend(Protocol):
    """What a store gives :class:`SessionLease`: three atomic operations.

    ``token`` identifies one holder; every operation is atomic in the
    backend (a transaction, a script) so that two holders never both win.
    """

    def acquire_lease(self, session_id: str, token: str, ttl: float) -> bool:
        """Take the lease for ``token`` unless another token's lease is alive; say whether it was taken."""

    def renew_lease(self, session_id: str, token: str, ttl: float) -> bool:
        """Extend ``token``'s lease to ``ttl`` seconds from now; False if ``token`` no longer holds it."""

    def release_lease(self, session_id: str, token: str) -> None:
        """Drop the lease if ``token`` still holds it (another holder's lease is left alone)."""


class SessionLease:
    """An advisory lease on one session, held inside a ``with`` block.

    Entering takes the lease or raises :class:`SessionBusyError` while
    another holder's lease is alive (another process, or another lease
    object in this one). While it is held, a renewal thread owned by this
    object renews it every ``ttl / 3`` seconds; leaving the block stops and
    joins that thread, then releases the lease. A lease object is entered
    once.

    If a renewal finds that another holder took the lease (this process
    stalled for longer than ``ttl``), :attr:`lost` becomes True and the
    renewals stop; a renewal that fails (the backend is unreachable) is
    logged and tried again at the next interval. Since leases are
    advisory, a lost lease makes nothing fail by itself: the next ``save``
    is still checked by version.

    Args:
        backend: the store's lease operations (:class:`LeaseBackend`).
        session_id: the session to lease.
        ttl: seconds a lease lives after its last renewal, from 0.5 to
            86,400; a holder that dies stops blocking others within this time.

    Raises:
        ValueError: ``ttl`` is not a number from 0.5 to 86,400.
    """

    def __init__(self, backend: LeaseBackend, session_id: str, ttl: float = DEFAULT_LEASE_TTL) -> None:
        self.session_id = check_session_id(session_id)
        self.ttl = check_lease_ttl(ttl)
        self._backend = backend
        self._token = secrets.token_hex(16)
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._entered = False
        self._held = False
        self._lost = False

    def __repr__(self) -> str:
        state = "lost" if self._lost else "held" if self._held else "not held"
        return f"SessionLease(session_id={self.session_id!r}, ttl={self.ttl}, {state})"

    @property
    def held(self) -> bool:
        """True between a successful entry and the exit, unless the lease was lost."""
        return self._held and not self._lost

    @property
    def lost(self) -> bool:
        """True if a renewal found that another holder had taken the lease."""
        return self._lost

    def __enter__(self) -> SessionLease:
        if self._entered:
            raise AgentError(f"this lease on session {self.session_id!r} was already entered; "
                             "take a new one with store.lease(...)")
        self._entered = True
        if not self._backend.acquire_lease(self.session_id, self._token, self.ttl):
            raise SessionBusyError(
                f"session {self.session_id!r} is leased by another holder; try again later "
                f"(a holder that died stops blocking within its lease's ttl)", session_id=self.session_id)
        self._held = True
        self._thread = threading.Thread(target=self._renew_until_stopped, name=f"agcore-lease-{next(_numbers)}",
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join(RENEWAL_JOIN_TIMEOUT)
            if thread.is_alive():
                logger.warning("lease renewal thread %s of session %r is still inside a backend call; "
                               "it ends when that call returns", thread.name, self.session_id)
        was_held, self._held = self._held, False
        if not was_held or self._lost:
            return
        try:
            self._backend.release_lease(self.session_id, self._token)
        except Exception:
            if exc_type is None:
                raise
            # Do not hide the error that is leaving the block; the lease
            # expires by itself within ttl.
            logger.warning("could not release the lease on session %r", self.session_id, exc_info=True)

    def _renew_until_stopped(self) -> None:
        interval = self.ttl / RENEWALS_PER_TTL
        alive_until = time.monotonic() + self.ttl
        while not self._stop.wait(interval):
            try:
                renewed = self._backend.renew_lease(self.session_id, self._token, self.ttl)
            except Exception:  # noqa: BLE001 - logged; tried again at the next interval
                logger.warning("could not renew the lease on session %r; retrying in %.3g s",
                               self.session_id, interval, exc_info=True)
                if time.monotonic() < alive_until:
                    continue
                renewed = False
            if not renewed:
                self._lost = True
                logger.warning("the lease on session %r was lost (another holder took it after it expired)",
                               self.session_id)
                return
            alive_until = time.monotonic() + self.ttl


class SessionStore(abc.ABC):
    """Where sessions live between turns: versioned JSON documents by id.

    Implementations: :class:`~agcore_sync.agent.sqlite_store.SqliteSessionStore`
    and ``agcore_sync.contrib.redis.RedisSessionStore``. A store is a context
    manager; leaving it calls :meth:`close`. Its methods may be called from
    any thread.

    A session id is a non-empty ``str``; ``data`` is a JSON-ready mapping
    (normally ``AgentSession.to_dict()``).
    """

    @abc.abstractmethod
    def load(self, session_id: str) -> Optional[StoredSession]:
        """Return the stored session, or None if there is none (or it expired).

        Raises:
            SessionStoreError: the stored data is corrupt, or the backend failed.
        """

    @abc.abstractmethod
    def save(self, session_id: str, data: Mapping[str, Any], expected_version: Optional[int] = None) -> int:
        """Write ``data`` if the stored version is ``expected_version``; return the new version.

        Args:
            session_id: the session.
            data: JSON-ready data (``AgentSession.to_dict()``).
            expected_version: the version this data was based on; None
                means the id must be new (not stored, or deleted, or expired).

        Returns:
            The new version, greater than every version this id had before.

        Raises:
            SessionConflictError: the stored version is another one; nothing
                was written.
            TypeError: ``data`` is not a JSON-ready mapping.
            SessionStoreError: the stored session is corrupt (its version or
                data; it is never overwritten), or the backend failed.
        """

    @abc.abstractmethod
    def delete(self, session_id: str) -> bool:
        """Delete the stored session; return whether there was one.

        Its versions are not reused: a later save of the same id gets a
        higher version than any it had. A corrupt stored session is
        deleted like any other (the way out of its ``SessionStoreError``).
        """

    @abc.abstractmethod
    def lease(self, session_id: str, ttl: float = DEFAULT_LEASE_TTL) -> SessionLease:
        """Return an advisory lease on the session, to use in a ``with`` block.

        Entering it raises :class:`SessionBusyError` while another holder's
        lease is alive. See :class:`SessionLease`.

        Raises:
            ValueError: ``ttl`` is not a number of seconds from 0.5 to 86,400.
        """

    def close(self) -> None:  # noqa: B027 - optional, a no-op by default
        """Release what the store holds open (a database connection); the default does nothing."""

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()
