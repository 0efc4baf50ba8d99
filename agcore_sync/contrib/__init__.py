"""Integrations that need an optional package, one module each.

Import each from its own module, never from the top-level package, so that
``import agcore_sync`` never imports the optional package:

- :mod:`agcore_sync.contrib.redis`: ``RedisSessionStore`` and
  ``RedisEventRelay`` (the ``redis`` extra: ``pip install
  'agcore_sync[redis]'``).
- :mod:`agcore_sync.contrib.jobs`: ``TurnJob`` and ``TurnRunner``, a
  session turn run as a background job, its events relayed through Redis
  (the ``redis`` extra).
- :mod:`agcore_sync.contrib.rq`: ``enqueue_turn`` for RQ (the ``rq`` extra).
- :mod:`agcore_sync.contrib.celery`: ``register_turn_task`` and
  ``enqueue_turn`` for Celery (the ``celery`` extra).

A module whose package is missing raises one :class:`ImportError` naming
the extra to install.
"""

from __future__ import annotations

__all__: list = []
