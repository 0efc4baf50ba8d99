"""RedisSessionStore: the :class:`~agcore_sync.agent.store.SessionStore` interface over Redis.

Import it from :mod:`agcore_sync.contrib.redis`. Keys, under ``prefix``;
the id is wrapped in a hash tag (``{...}``) so that the keys of one session
share a cluster slot::

    <prefix>session:{<id>}           hash: schema, version, data, save_token
    <prefix>session-version:{<id>}   the last version of the id (kept after a delete)
    <prefix>session-lease:{<id>}     the lease holder's token, with a TTL

Saves are Lua scripts, so a version check and its write are atomic. Each
save carries a random token, stored beside the data (``save_token``): when
redis-py sends a script again after losing its reply, the second run finds
its own token and reports the version the first run wrote, so a save is
applied once and succeeds. Taking a lease is a script for the same reason.
A stored session whose schema, version or data is corrupt is never
overwritten: ``load`` and ``save`` raise :class:`SessionStoreError`, and
``delete`` removes it.
"""

from __future__ import annotations

import re
import secrets
from typing import Any, Mapping, Optional

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
from agcore_sync.contrib._redis_support import as_text, check_client, check_prefix, ms, redis

__all__ = ["RedisSessionStore", "SCHEMA_VERSION"]

#: The schema version of a stored session hash this module writes and reads.
SCHEMA_VERSION = 1

# KEYS: data hash, version counter. ARGV: expected version ('' = new id),
# data, ttl in ms ('' = none), schema version, the save's token.
# Returns {1, new version}, {0, stored version or ''} (conflict),
# {2, stored schema} (written by a newer schema) or {3, what} (a corrupt
# stored session, left as it is). A save whose token is the stored one was
# applied already (redis-py sent the script again after a lost reply): it
# returns that version and writes nothing.
_SAVE = """
local stored = redis.call('HMGET', KEYS[1], 'version', 'schema', 'data', 'save_token')
local current, schema, data, token = stored[1], stored[2], stored[3], stored[4]
if token and token == ARGV[5] and current then return {1, current} end
if current or schema or data then
  if schema and string.match(schema, '^%d+$') and tonumber(schema) > tonumber(ARGV[4]) then return {2, schema} end
  if not schema or not string.match(schema, '^%d+$') then return {3, 'schema'} end
  if not current or not string.match(current, '^[1-9]%d*$') or string.len(current) > 18 then
    return {3, 'version'}
  end
  if not data or not string.match(data, '^%s*{') or not pcall(cjson.decode, data) then return {3, 'data'} end
end
if ARGV[1] == '' then
  if current then return {0, current} end
elseif current ~= ARGV[1] then
  return {0, current or ''}
end
local version = redis.call('INCR', KEYS[2])
if current and version <= tonumber(current) then
  version = tonumber(current) + 1
  redis.call('SET', KEYS[2], version)
end
redis.call('HSET', KEYS[1], 'schema', ARGV[4], 'version', version, 'data', ARGV[2], 'save_token', ARGV[5])
if ARGV[3] ~= '' then redis.call('PEXPIRE', KEYS[1], ARGV[3]) else redis.call('PERSIST', KEYS[1]) end
return {1, version}
"""

# KEYS: lease key. ARGV: token, ttl in ms. Returns 1 if the lease is now
# the token's: taken, or already the token's (a take whose reply was lost
# and that redis-py sent again).
_ACQUIRE = """
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end
if holder then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
"""

# KEYS: lease key. ARGV: token, ttl in ms. Returns 1 if the token held it.
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""

# KEYS: lease key. ARGV: token.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

_DIGITS = re.compile(r"[0-9]{1,18}", re.ASCII)


def _session_key(prefix: str, kind: str, session_id: str) -> str:
    return f"{prefix}{kind}:{{{session_id}}}"


class _Translated:
    """Turn a ``redis`` exception into :class:`SessionStoreError` naming the store and the session."""

    __slots__ = ("_where", "_what", "_session_id")

    def __init__(self, where: str, what: str, session_id: Optional[str]) -> None:
        self._where, self._what, self._session_id = where, what, session_id

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        if exc_type is not None and issubclass(exc_type, redis.RedisError):
            about = f" session {self._session_id!r}" if self._session_id is not None else ""
            hint = " (the key holds another type of value: is the prefix shared with other data?)" \
                if "WRONGTYPE" in str(exc) else ""
            raise SessionStoreError(f"{self._where}: cannot {self._what}{about}: {exc}{hint}",
                                    session_id=self._session_id) from exc
        return False


class _RedisLeases:
    """The lease operations (:class:`~agcore_sync.agent.store.LeaseBackend`) over Redis keys with a TTL."""

    def __init__(self, client: redis.Redis, prefix: str, where: str) -> None:
        self._client = client
        self._prefix = prefix
        self._where = where
        self._acquire = client.register_script(_ACQUIRE)
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)

    def _key(self, session_id: str) -> str:
        return _session_key(self._prefix, "session-lease", session_id)

    def acquire_lease(self, session_id: str, token: str, ttl: float) -> bool:
        with _Translated(self._where, "take the lease of", session_id):
            return bool(self._acquire(keys=[self._key(session_id)], args=[token, ms(ttl)]))

    def renew_lease(self, session_id: str, token: str, ttl: float) -> bool:
        with _Translated(self._where, "renew the lease of", session_id):
            return bool(self._renew(keys=[self._key(session_id)], args=[token, ms(ttl)]))

    def release_lease(self, session_id: str, token: str) -> None:
        with _Translated(self._where, "release the lease of", session_id):
            self._release(keys=[self._key(session_id)], args=[token])


class RedisSessionStore(SessionStore):
    """Sessions in Redis, shared by processes on any number of machines.

    Versions: a counter per id (``<prefix>session-version:{id}``) that is
    kept after a delete and after expiry, so versions never repeat; it is a
    few bytes per id ever saved. Leases: a key with the holder's token and
    a TTL (``SET NX PX``), renewed by the lease's thread.

    Expiry: with ``ttl``, the stored session expires ``ttl`` seconds after
    its last save (Redis ``PEXPIRE``; the server's clock).

    Args:
        client: a ``redis.Redis``; the store uses it and never closes it.
        prefix: the start of every key.
        ttl: seconds a session lives after its last save; None keeps it
            until it is deleted.

    Raises:
        TypeError: ``client`` is not a ``redis.Redis``.
        ValueError: ``ttl`` is not a positive number.
    """

    def __init__(self, client: redis.Redis, *, prefix: str = "agcore:", ttl: Optional[float] = None) -> None:
        #: The Redis client (not owned: the caller closes it).
        self.client = check_client(client)
        #: The start of every key.
        self.prefix = check_prefix(prefix)
        #: The session lifetime after a save, in seconds (None: no expiry).
        self.ttl = check_ttl(ttl, "ttl", optional=True)
        self._save = client.register_script(_SAVE)
        self._leases = _RedisLeases(client, prefix, repr(self))

    def __repr__(self) -> str:
        return f"RedisSessionStore(prefix={self.prefix!r})"

    def _key(self, kind: str, session_id: str) -> str:
        return _session_key(self.prefix, kind, session_id)

    def _translated(self, what: str, session_id: Optional[str] = None) -> _Translated:
        return _Translated(repr(self), what, session_id)

    def load(self, session_id: str) -> Optional[StoredSession]:
        """Return the stored session, or None if there is none or it expired.

        Raises:
            SessionStoreError: the stored session is corrupt or of a newer
                schema (it is left as it is), or Redis failed.
        """
        check_session_id(session_id)
        where = f"{self!r}"
        with self._translated("load", session_id):
            fields = self.client.hgetall(self._key("session", session_id))
        if not fields:
            return None
        fields = {as_text(k): v for k, v in fields.items()}
        schema_text = as_text(fields.get("schema", ""))
        if not _DIGITS.fullmatch(schema_text):
            raise corrupt(session_id, f"its schema {schema_text[:40]!r} is missing or not a number", where)
        schema = int(schema_text)
        if schema > SCHEMA_VERSION:
            raise SessionStoreError(
                f"stored session {session_id!r} in {where} has schema version {schema}, written by a newer "
                f"agcore_sync; this one reads version {SCHEMA_VERSION}: upgrade agcore_sync to load it",
                session_id=session_id)
        version = stored_version(fields.get("version"), session_id=session_id, where=where)
        data = decode_data(fields.get("data"), session_id=session_id, where=where)
        return StoredSession(data, version)

    def save(self, session_id: str, data: Mapping[str, Any], expected_version: Optional[int] = None) -> int:
        """Write ``data`` if the stored version is ``expected_version``; return the new version.

        See :meth:`SessionStore.save`; the check and the write are one Lua
        script, atomic in Redis.
        """
        check_session_id(session_id)
        check_expected_version(expected_version)
        text = encode_data(session_id, data)
        keys = [self._key("session", session_id), self._key("session-version", session_id)]
        # The token makes the script idempotent: redis-py sends it again when a
        # reply is lost (a dropped connection), and the second run must find
        # its own write instead of reporting a conflict.
        args = ["" if expected_version is None else str(expected_version), text,
                "" if self.ttl is None else str(ms(self.ttl)), str(SCHEMA_VERSION), secrets.token_hex(16)]
        with self._translated("save", session_id):
            status, value = self._save(keys=keys, args=args)
        value = as_text(value)
        if status == 3:
            raise corrupt(session_id, f"its {value} is missing or invalid; the save did not overwrite it", repr(self))
        if status == 2:
            raise SessionStoreError(
                f"stored session {session_id!r} in {self!r} has schema version {value}, written by a newer "
                f"agcore_sync; it was not overwritten: upgrade agcore_sync to save it", session_id=session_id)
        if status == 0:
            raise conflict(session_id, expected_version, int(value) if value else None, repr(self))
        return int(value)

    def delete(self, session_id: str) -> bool:
        """Delete the stored session; return whether there was one. Its version counter stays."""
        check_session_id(session_id)
        with self._translated("delete", session_id):
            return bool(self.client.delete(self._key("session", session_id)))

    def lease(self, session_id: str, ttl: float = DEFAULT_LEASE_TTL) -> SessionLease:
        """Return an advisory lease on the session (see :class:`SessionLease`); its clock is the server's."""
        return SessionLease(self._leases, session_id, ttl)
