"""Integrations that need an optional package, one module each.

Import each from its own module, never from the top-level package, so that
``import agcore_sync`` never imports the optional package:

- :mod:`agcore_sync.contrib.redis`: ``RedisSessionStore`` and
  ``RedisEventRelay`` (the ``redis`` extra: ``pip install
  'agcore_sync[redis]'``).

A module whose package is missing raises one :class:`ImportError` naming
the extra to install.
"""

from __future__ import annotations

__all__: list = []
