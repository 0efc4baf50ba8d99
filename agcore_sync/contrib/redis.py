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
  missed, once.
"""

from __future__ import annotations

from agcore_sync.contrib._redis_relay import READ_BATCH, READ_BLOCK_SLICE, RedisEventRelay, RelayError
from agcore_sync.contrib._redis_store import SCHEMA_VERSION, RedisSessionStore

__all__ = ["RedisSessionStore", "RedisEventRelay", "RelayError", "SCHEMA_VERSION", "READ_BLOCK_SLICE", "READ_BATCH"]
