"""Redis integrations: a session store and an event relay for background turns.

Needs the optional ``redis`` package (``pip install 'agcore_sync[redis]'``,
redis-py 5 or later) and a Redis server 5 or later; without the package,
importing this module raises one :class:`ImportError` naming the extra.
Both classes take a ``redis.Redis`` client that the caller creates,
configures and closes; they never close it. The client may use
``decode_responses`` either way, and RESP2 or RESP3.

- :class:`RedisSessionStore`: the :class:`~agcore_sync.agent.store.SessionStore`
  interface over Redis, for sessions shared by processes on several machines.
- :class:`RedisEventRelay`: a turn running in a job worker (RQ, Celery)
  publishes its events to a Redis stream; any web process reads them, as
  :class:`~agcore_sync.llm.events.StreamEvent` values or as Server-Sent
  Events, and a browser that reconnects with ``Last-Event-ID`` gets what it
  missed, once. Job workers mark a turn alive and watch for a cancel
  (:meth:`~RedisEventRelay.keep_alive`, :meth:`~RedisEventRelay.cancel`):
  a reader of a turn whose worker died ends with an ``Error`` event
  (:class:`WorkerLostError`). :mod:`agcore_sync.contrib.jobs` runs turns
  this way.
- :class:`RedisRateLimitStore`: the budget of a
  :class:`~agcore_sync.llm.ratelimit.RateLimitedProvider` shared by
  processes (one Lua script per acquire).
"""

from __future__ import annotations

from agcore_sync.contrib._redis_ratelimit import RedisRateLimitStore
from agcore_sync.contrib._redis_relay import (
    CANCEL_MARK_TTL,
    READ_BATCH,
    READ_BLOCK_SLICE,
    RedisEventRelay,
    RelayError,
    WorkerLostError,
)
from agcore_sync.contrib._redis_store import SCHEMA_VERSION, RedisSessionStore

__all__ = ["RedisSessionStore", "RedisEventRelay", "RelayError", "WorkerLostError", "SCHEMA_VERSION",
           "READ_BLOCK_SLICE", "READ_BATCH", "CANCEL_MARK_TTL", "RedisRateLimitStore"]
