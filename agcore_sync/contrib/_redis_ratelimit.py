"""RedisRateLimitStore: rate-limit budgets shared by processes through Redis.

Import it from :mod:`agcore_sync.contrib.redis`. The rules are those of
:mod:`agcore_sync.llm.ratelimit_store`; here each step is one Lua script, so
it is atomic across every process and machine using the server:

- acquire: **one round trip** (``EVALSHA``): refill, check every bucket and
  the slots, take all or nothing, answer with the wait;
- settle (after a response, only when its tokens differ from the estimate
  or it held a slot): one more;
- tighten (only when a server header says less is left than a local minute):
  one more.

Keys, under ``prefix``, with the budget's key in a hash tag so both share a
cluster slot::

    <prefix>ratelimit:{<key>}         hash: r, r_t (requests level, time), k, k_t (tokens)
    <prefix>ratelimit-slots:{<key>}   sorted set: slot id -> lease expiry

Time is the Redis server's (``TIME``), so the processes' clocks need not
agree; ``clock=`` replaces it (tests). A slot is a lease of ``slot_ttl``
seconds: a process that dies holding one frees it when the lease ends.
Idle keys expire (:data:`IDLE_TTL`); a missing key is a full budget.

A Redis failure is :class:`~agcore_sync.llm.errors.RateLimitStoreError`
(retryable), or, with ``fail_open=True``, a logged warning and a request
let through unmetered: the application chooses which outage it prefers.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, List, Optional

from agcore_sync import _instrument
from agcore_sync.contrib._redis_support import as_text, check_client, check_prefix, redis
from agcore_sync.llm._resilience_check import check_limit
from agcore_sync.llm.errors import RateLimitStoreError
from agcore_sync.llm.ratelimit_store import REQUESTS, RateLimitStore

if TYPE_CHECKING:  # pragma: no cover
    from agcore_sync.llm.ratelimit import RateLimit

__all__ = ["RedisRateLimitStore", "IDLE_TTL", "DEFAULT_SLOT_TTL", "SLOT_POLL_INTERVAL"]

logger = _instrument.get_logger("agcore_sync.contrib.redis")

#: Seconds an unused budget key lives (a bucket is full again after 60 s idle;
#: the margin keeps a debt from a large correction until it is paid).
IDLE_TTL = 600

#: Seconds a concurrency slot is held at most if its holder never gives it back (a crash).
DEFAULT_SLOT_TTL = 600.0

#: How often a caller waiting only for a free slot asks again (Redis does not tell).
SLOT_POLL_INTERVAL = 0.05

# The refill shared by the scripts: level(name, per_minute) -> current level.
_LEVEL = """
local now
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
else
  now = tonumber(ARGV[1])
end
local function level(name, cap)
  local v = redis.call('HMGET', KEYS[1], name, name .. '_t')
  local l, t = tonumber(v[1]), tonumber(v[2])
  if l == nil or t == nil then return cap end
  return math.min(cap, l + cap * math.max(0, now - t) / 60)
end
"""

# KEYS: budget hash, slots zset. ARGV: now ('' = server TIME), rpm, tpm, max_concurrent ('' = none),
# tokens, slot id, slot ttl (s), idle ttl (s). Returns '0' (taken), a wait in seconds, or '-1' (no slot).
_ACQUIRE = _LEVEL + """
local rpm, tpm, most = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local cost = tonumber(ARGV[5])
local wait = 0
local r, k
if rpm then
  r = level('r', rpm)
  if r < 1 then wait = (1 - r) * 60 / rpm end
end
if tpm then
  k = level('k', tpm)
  if k < cost then wait = math.max(wait, (cost - k) * 60 / tpm) end
end
if most then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  if wait == 0 and redis.call('ZCARD', KEYS[2]) >= most then return '-1' end
end
if wait > 0 then return tostring(wait) end
if rpm then redis.call('HSET', KEYS[1], 'r', tostring(r - 1), 'r_t', tostring(now)) end
if tpm then redis.call('HSET', KEYS[1], 'k', tostring(k - cost), 'k_t', tostring(now)) end
if rpm or tpm then redis.call('EXPIRE', KEYS[1], ARGV[8]) end
if most then
  redis.call('ZADD', KEYS[2], now + tonumber(ARGV[7]), ARGV[6])
  redis.call('EXPIRE', KEYS[2], math.ceil(tonumber(ARGV[7])))
end
return '0'
"""

# KEYS: budget hash, slots zset. ARGV: now, tpm ('' = none), tokens delta, slot id ('' = none), idle ttl.
_SETTLE = _LEVEL + """
local tpm, delta = tonumber(ARGV[2]), tonumber(ARGV[3])
if tpm and delta ~= 0 then
  local k = math.max(-tpm, math.min(tpm, level('k', tpm) - delta))
  redis.call('HSET', KEYS[1], 'k', tostring(k), 'k_t', tostring(now))
  redis.call('EXPIRE', KEYS[1], ARGV[5])
end
if ARGV[4] ~= '' then redis.call('ZREM', KEYS[2], ARGV[4]) end
return 1
"""

# KEYS: budget hash. ARGV: now, bucket ('r' or 'k'), per minute, level, idle ttl.
_TIGHTEN = _LEVEL + """
local name, cap, target = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local current = level(name, cap)
if target < current then
  redis.call('HSET', KEYS[1], name, tostring(target), name .. '_t', tostring(now))
  redis.call('EXPIRE', KEYS[1], ARGV[5])
end
return 1
"""


def _arg(value: Optional[float]) -> str:
    return "" if value is None else repr(float(value))


class RedisRateLimitStore(RateLimitStore):
    """Rate-limit budgets in Redis, shared by every process that uses the same server, prefix and key.

    Example::

        store = RedisRateLimitStore(redis.Redis.from_url("redis://localhost:6379/0"))
        provider = RateLimitedProvider(OpenAIProvider(model="gpt-4o-mini"),
                                       RateLimit(requests_per_minute=500), store=store, key="openai")

    Args:
        client: a ``redis.Redis`` the caller creates and closes (never closed here).
        prefix: put before every key.
        fail_open: on a Redis failure, log a warning and let the request
            through unmetered (True) instead of raising
            :class:`~agcore_sync.llm.errors.RateLimitStoreError` (False).
        slot_ttl: seconds a concurrency slot is held at most (a crashed holder's slot frees then).
        clock: ``() -> seconds`` shared by the processes, instead of the server's ``TIME`` (tests).

    Raises:
        TypeError: a client that is not a ``redis.Redis``, a prefix that is not a str.
        ValueError: a ``slot_ttl`` that is not a number > 0.

    .. versionadded:: 0.2
    """

    #: How often a caller waiting only for a free slot asks again (Redis does not tell).
    slot_poll_interval = SLOT_POLL_INTERVAL

    def __init__(self, client: Any, prefix: str = "agcore:", *, fail_open: bool = False,
                 slot_ttl: float = DEFAULT_SLOT_TTL, clock: Optional[Callable[[], float]] = None) -> None:
        self._client = check_client(client)
        self.prefix = check_prefix(prefix)
        self.fail_open = bool(fail_open)
        self.slot_ttl = check_limit("RedisRateLimitStore", "slot_ttl", slot_ttl)
        self.clock = clock
        self._acquire = client.register_script(_ACQUIRE)
        self._settle = client.register_script(_SETTLE)
        self._tighten = client.register_script(_TIGHTEN)

    def __repr__(self) -> str:
        return f"RedisRateLimitStore(prefix={self.prefix!r}, fail_open={self.fail_open})"

    def _keys(self, key: str) -> List[str]:
        return [f"{self.prefix}ratelimit:{{{key}}}", f"{self.prefix}ratelimit-slots:{{{key}}}"]

    def _now(self) -> str:
        return "" if self.clock is None else repr(float(self.clock()))

    def _failed(self, what: str, key: str, exc: Exception) -> None:
        if self.fail_open:
            logger.warning("rate limit %r: Redis failed to %s (%s); fail_open lets the request through unmetered",
                           key, what, exc)
            return
        raise RateLimitStoreError(f"rate limit {key!r}: Redis failed to {what}: {exc}; the request was not sent "
                                  "(RedisRateLimitStore(fail_open=True) lets requests through instead)") from exc

    def acquire(self, key: str, limit: RateLimit, tokens: int, slot: Optional[str]) -> float:
        """See :meth:`~agcore_sync.llm.ratelimit_store.RateLimitStore.acquire`: one ``EVALSHA``."""
        try:
            reply = self._acquire(keys=self._keys(key), args=[
                self._now(), _arg(limit.requests_per_minute), _arg(limit.tokens_per_minute),
                _arg(limit.max_concurrent), tokens, slot or "", self.slot_ttl, IDLE_TTL])
        except redis.RedisError as exc:
            self._failed("take from the budget", key, exc)
            return 0.0
        wait = float(as_text(reply))
        return math.inf if wait < 0 else wait

    def settle(self, key: str, limit: RateLimit, tokens_delta: int, slot: Optional[str]) -> None:
        """See :meth:`~agcore_sync.llm.ratelimit_store.RateLimitStore.settle`."""
        try:
            self._settle(keys=self._keys(key), args=[
                self._now(), _arg(limit.tokens_per_minute), tokens_delta, slot or "", IDLE_TTL])
        except redis.RedisError as exc:
            self._failed("settle a request", key, exc)

    def tighten(self, key: str, limit: RateLimit, bucket: str, level: float) -> None:
        """See :meth:`~agcore_sync.llm.ratelimit_store.RateLimitStore.tighten`."""
        per_minute = limit.requests_per_minute if bucket == REQUESTS else limit.tokens_per_minute
        if per_minute is None:
            return
        try:
            self._tighten(keys=self._keys(key)[:1], args=[
                self._now(), "r" if bucket == REQUESTS else "k", _arg(per_minute), repr(float(level)), IDLE_TTL])
        except redis.RedisError as exc:
            self._failed("tighten the budget", key, exc)
