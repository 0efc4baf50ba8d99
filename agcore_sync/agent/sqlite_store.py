"""SqliteSessionStore: sessions in one SQLite file (stdlib ``sqlite3``, WAL).

The embedded default store: no server, safe for several threads and several
processes on one machine (SQLite's own file locks; writes are ``BEGIN
IMMEDIATE`` transactions, so a version check and its write are atomic).
Not for a database file on a network file system, where SQLite's locks are
unreliable: use ``agcore_sync.contrib.redis.RedisSessionStore`` across
machines.

The file: ``PRAGMA application_id`` marks it as a session store and
``PRAGMA user_version`` holds the schema version. Opening checks both
before it writes anything, so a file that is not a store (or a store of a
newer schema) raises :class:`SessionStoreError` and is left unchanged. A
new or empty file becomes a store. Tables::

    agcore_sessions (id, data, version, expires_at)  the stored sessions
    agcore_versions (id, last_version)                the last version of every id, kept
                                                      after a delete so versions never repeat
    agcore_leases   (id, token, expires_at)           the leases

Times (session expiry, leases) are wall-clock seconds (``time.time()``),
the one clock that processes on one machine share.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from typing import Any, Iterator, Mapping, Optional, Tuple, Union

from agcore_sync.agent._store_support import (
    check_expected_version,
    check_session_id,
    check_ttl,
    conflict,
    corrupt,
    decode_data,
    encode_data,
    stored_version,
)
from agcore_sync.agent.errors import SessionStoreError
from agcore_sync.agent.store import DEFAULT_LEASE_TTL, SessionLease, SessionStore, StoredSession

__all__ = ["SqliteSessionStore", "SCHEMA_VERSION", "APPLICATION_ID"]

#: The schema version this module writes and reads (``PRAGMA user_version``).
SCHEMA_VERSION = 1

#: ``PRAGMA application_id`` of a session store file: "agSS" in ASCII.
APPLICATION_ID = 0x61675353

#: Default seconds a connection waits for another process's write lock
#: before the operation fails with :class:`SessionStoreError`.
DEFAULT_BUSY_TIMEOUT = 10.0

_SCHEMA = (
    "CREATE TABLE agcore_sessions (id TEXT PRIMARY KEY, data TEXT NOT NULL, version INTEGER NOT NULL, "
    "expires_at REAL)",
    "CREATE TABLE agcore_versions (id TEXT PRIMARY KEY, last_version INTEGER NOT NULL)",
    "CREATE TABLE agcore_leases (id TEXT PRIMARY KEY, token TEXT NOT NULL, expires_at REAL NOT NULL)",
    "CREATE INDEX agcore_sessions_expiry ON agcore_sessions (expires_at) WHERE expires_at IS NOT NULL",
    f"PRAGMA application_id = {APPLICATION_ID}",
    f"PRAGMA user_version = {SCHEMA_VERSION}",
)

_now = time.time  # the clock of expiry and leases; a seam for tests


class _Database:
    """One connection to the store file, shared by threads under a lock.

    Owns the connection: opens and checks the file, runs transactions,
    translates every ``sqlite3.Error`` into :class:`SessionStoreError`
    naming the path, and closes.
    """

    def __init__(self, path: str, busy_timeout: float) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._closed = False
        try:
            self._conn = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise SessionStoreError(f"cannot open the session store {path!r}: {exc}", path=path) from exc
        try:
            self._open()
        except BaseException:
            self._conn.close()
            raise

    def _open(self) -> None:
        """Check the file is a store of a schema we read (creating one in a new file), then use WAL."""
        with self.transaction(reading_only=True) as conn:
            fresh = self._check(conn)
        if fresh:
            with self.transaction() as conn:
                if self._check(conn):  # another process may have created it meanwhile
                    for statement in _SCHEMA:
                        conn.execute(statement)
        if self.path != ":memory:":
            with self._translated("switch to WAL"):
                self._conn.execute("PRAGMA journal_mode = WAL")

    def _check(self, conn: sqlite3.Connection) -> bool:
        """Return True for an empty database (to be created); raise if it is not one of our stores."""
        application_id = conn.execute("PRAGMA application_id").fetchone()[0]
        user_version = conn.execute("PRAGMA user_version").fetchone()[0]
        if application_id == APPLICATION_ID:
            if user_version > SCHEMA_VERSION:
                raise SessionStoreError(
                    f"{self.path!r} is a session store of schema version {user_version}, written by a newer "
                    f"agcore_sync; this one reads version {SCHEMA_VERSION}: upgrade agcore_sync to use it "
                    "(the file was not changed)", path=self.path)
            return False
        empty = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
        if application_id == 0 and user_version == 0 and empty:
            return True
        raise SessionStoreError(
            f"{self.path!r} is an SQLite database but not an agcore_sync session store; pass the path of a "
            "store or of a new file (the file was not changed)", path=self.path)

    @contextlib.contextmanager
    def _translated(self, what: str, session_id: Optional[str] = None) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            if isinstance(exc, sqlite3.DatabaseError) and "not a database" in str(exc):
                message = (f"{self.path!r} is not an SQLite database, so not a session store; pass the path of "
                           "a store or of a new file (the file was not changed)")
            else:
                about = f" of session {session_id!r}" if session_id is not None else ""
                message = f"session store {self.path!r}: cannot {what}{about}: {exc}"
            raise SessionStoreError(message, path=self.path, session_id=session_id) from exc

    @contextlib.contextmanager
    def transaction(self, *, reading_only: bool = False, what: str = "open the store",
                    session_id: Optional[str] = None) -> Iterator[sqlite3.Connection]:
        """Run the block in one transaction (``BEGIN IMMEDIATE`` unless reading), under the lock."""
        with self._lock:
            if self._closed:
                raise SessionStoreError(f"session store {self.path!r} is closed", path=self.path)
            with self._translated(what, session_id):
                self._conn.execute("BEGIN" if reading_only else "BEGIN IMMEDIATE")
                try:
                    yield self._conn
                except BaseException:
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                    raise
                self._conn.execute("COMMIT")

    def close(self) -> None:
        """Close the connection; later operations raise :class:`SessionStoreError`."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()


class _SqliteLeases:
    """The lease operations (:class:`~agcore_sync.agent.store.LeaseBackend`) over the leases table."""

    def __init__(self, db: _Database) -> None:
        self._db = db

    def acquire_lease(self, session_id: str, token: str, ttl: float) -> bool:
        with self._db.transaction(what="take the lease", session_id=session_id) as conn:
            now = _now()
            row = conn.execute("SELECT token, expires_at FROM agcore_leases WHERE id = ?", (session_id,)).fetchone()
            if row is not None and row[0] != token and row[1] > now:
                return False
            conn.execute("INSERT OR REPLACE INTO agcore_leases (id, token, expires_at) VALUES (?, ?, ?)",
                         (session_id, token, now + ttl))
            return True

    def renew_lease(self, session_id: str, token: str, ttl: float) -> bool:
        with self._db.transaction(what="renew the lease", session_id=session_id) as conn:
            cursor = conn.execute("UPDATE agcore_leases SET expires_at = ? WHERE id = ? AND token = ?",
                                  (_now() + ttl, session_id, token))
            return cursor.rowcount == 1

    def release_lease(self, session_id: str, token: str) -> None:
        with self._db.transaction(what="release the lease", session_id=session_id) as conn:
            conn.execute("DELETE FROM agcore_leases WHERE id = ? AND token = ?", (session_id, token))


class SqliteSessionStore(SessionStore):
    """Sessions in one SQLite file, shared by threads and processes on one machine.

    The store owns one connection (WAL journal), used by every thread under
    a lock; :meth:`close` (or leaving its ``with`` block) closes it. Opening
    a file that is not a store, or a store of a newer schema, raises
    :class:`SessionStoreError` and changes nothing; a new or empty file
    becomes a store.

    Expiry: with ``ttl``, a stored session expires ``ttl`` seconds after its
    last save; an expired session loads as None, counts as new for
    ``save(..., expected_version=None)``, and is removed by the next save
    of its id or by :meth:`purge_expired`. Its versions are still not
    reused.

    Args:
        path: the database file (created if missing), or ``":memory:"`` for
            a store private to this object.
        ttl: seconds a session lives after its last save; None keeps
            sessions until they are deleted.
        busy_timeout: seconds to wait for another process's write lock
            before an operation fails.

    Raises:
        SessionStoreError: the file is not a session store, has a newer
            schema, or cannot be opened.
        ValueError: ``ttl`` or ``busy_timeout`` is not a positive number.

    Example::

        with SqliteSessionStore("sessions.db") as store:
            version = store.save("chat-42", session.to_dict())
    """

    def __init__(self, path: Union[str, os.PathLike], *, ttl: Optional[float] = None,
                 busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a str or a path, not {type(path).__name__}")
        #: The session lifetime after a save, in seconds (None: no expiry).
        self.ttl = check_ttl(ttl, "ttl", optional=True)
        self._db = _Database(os.fspath(path), check_ttl(busy_timeout, "busy_timeout"))
        self._leases = _SqliteLeases(self._db)

    @property
    def path(self) -> str:
        """The database file."""
        return self._db.path

    def __repr__(self) -> str:
        return f"SqliteSessionStore({self.path!r})"

    def load(self, session_id: str) -> Optional[StoredSession]:
        """Return the stored session, or None if there is none or it expired.

        Raises:
            SessionStoreError: the stored data is corrupt (it is left as it
                is), or the database failed.
        """
        check_session_id(session_id)
        with self._db.transaction(reading_only=True, what="load", session_id=session_id) as conn:
            row = conn.execute("SELECT data, version, expires_at FROM agcore_sessions WHERE id = ?",
                               (session_id,)).fetchone()
        if row is None or self._lapsed(row[2], session_id):
            return None
        return self._checked(row, session_id)

    def save(self, session_id: str, data: Mapping[str, Any], expected_version: Optional[int] = None) -> int:
        """Write ``data`` if the stored version is ``expected_version``; return the new version.

        See :meth:`SessionStore.save`. The check and the write are one
        transaction, so of two processes saving from the same version
        exactly one succeeds.

        Raises:
            SessionConflictError: the stored version is another one; nothing was written.
            SessionStoreError: the stored row is corrupt (its version, data
                or expiry; it is never overwritten: :meth:`delete` removes
                it), or the database failed.
        """
        check_session_id(session_id)
        check_expected_version(expected_version)
        text = encode_data(session_id, data)
        with self._db.transaction(what="save", session_id=session_id) as conn:
            current = self._current_version(conn, session_id)
            if current != expected_version:
                raise conflict(session_id, expected_version, current, f"session store {self.path!r}")
            row = conn.execute("SELECT last_version FROM agcore_versions WHERE id = ?", (session_id,)).fetchone()
            last = 0 if row is None else stored_version(row[0], session_id=session_id, where=self._where,
                                                         path=self.path)
            version = max(last, current or 0) + 1
            expires_at = None if self.ttl is None else _now() + self.ttl
            conn.execute("INSERT OR REPLACE INTO agcore_sessions (id, data, version, expires_at) VALUES (?, ?, ?, ?)",
                         (session_id, text, version, expires_at))
            conn.execute("INSERT OR REPLACE INTO agcore_versions (id, last_version) VALUES (?, ?)",
                         (session_id, version))
        return version

    def delete(self, session_id: str) -> bool:
        """Delete the stored session; return whether there was one (an expired one does not count).

        A corrupt stored session is deleted too (and counts).
        """
        check_session_id(session_id)
        with self._db.transaction(what="delete", session_id=session_id) as conn:
            # A corrupt row is deleted too (the way out its error names); only an expired one does not count.
            row = conn.execute("SELECT expires_at FROM agcore_sessions WHERE id = ?", (session_id,)).fetchone()
            existed = row is not None and not (isinstance(row[0], (int, float)) and _expired(row[0]))
            conn.execute("DELETE FROM agcore_sessions WHERE id = ?", (session_id,))
        return existed

    def lease(self, session_id: str, ttl: float = DEFAULT_LEASE_TTL) -> SessionLease:
        """Return an advisory lease on the session (see :class:`SessionLease`).

        Leases live in the same file, so they hold across processes; their
        clock is the wall clock.
        """
        return SessionLease(self._leases, session_id, ttl)

    def purge_expired(self) -> int:
        """Remove expired sessions and expired leases; return how many sessions were removed."""
        with self._db.transaction(what="purge expired sessions") as conn:
            now = _now()
            removed = conn.execute("DELETE FROM agcore_sessions WHERE expires_at <= ?", (now,)).rowcount
            conn.execute("DELETE FROM agcore_leases WHERE expires_at <= ?", (now,))
        return removed

    def close(self) -> None:
        """Close the database connection; later calls raise :class:`SessionStoreError`."""
        self._db.close()

    @property
    def _where(self) -> str:
        return f"session store {self.path!r}"

    def _checked(self, row: Tuple[Any, Any, Any], session_id: str) -> StoredSession:
        """Return a row ``(data, version, expires_at)`` as a StoredSession; SessionStoreError if it is corrupt."""
        version = stored_version(row[1], session_id=session_id, where=self._where, path=self.path)
        return StoredSession(decode_data(row[0], session_id=session_id, where=self._where, path=self.path), version)

    def _lapsed(self, expires_at: Any, session_id: str) -> bool:
        """Say whether a row with this expiry time has expired; SessionStoreError if the time is corrupt."""
        if expires_at is not None and (isinstance(expires_at, bool) or not isinstance(expires_at, (int, float))):
            raise corrupt(session_id, f"its expiry time {expires_at!r} is not a number", self._where, self.path)
        return _expired(expires_at)

    def _current_version(self, conn: sqlite3.Connection, session_id: str) -> Optional[int]:
        """Return the live stored version of the id (None if absent or expired); remove an expired row.

        A corrupt row (its version, data or expiry) raises
        :class:`SessionStoreError`, so a save never overwrites it.
        """
        row: Optional[Tuple[Any, Any, Any]] = conn.execute(
            "SELECT data, version, expires_at FROM agcore_sessions WHERE id = ?", (session_id,)).fetchone()
        if row is None:
            return None
        if self._lapsed(row[2], session_id):
            conn.execute("DELETE FROM agcore_sessions WHERE id = ?", (session_id,))
            return None
        return self._checked(row, session_id).version


def _expired(expires_at: Optional[float]) -> bool:
    return expires_at is not None and expires_at <= _now()
