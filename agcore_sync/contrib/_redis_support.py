"""The ``redis`` import and the helpers both Redis integrations share.

Importing this module imports ``redis``; when it is missing it raises one
:class:`ImportError` naming the extra to install.
"""

from __future__ import annotations

from typing import Any

try:
    import redis
except ImportError as exc:  # exercised in a subprocess by the tests
    raise ImportError("agcore_sync.contrib.redis needs the optional `redis` package; install the extra: "
                      "pip install 'agcore_sync[redis]'") from exc

__all__ = ["redis", "as_text", "ms", "check_client", "check_prefix"]


def as_text(value: Any) -> str:
    """Return a reply value as str (clients with and without ``decode_responses``)."""
    return value.decode("utf-8") if isinstance(value, (bytes, bytearray)) else str(value)


def ms(seconds: float) -> int:
    """Return seconds as whole milliseconds, at least 1 (Redis reads 0 as "no limit" in places)."""
    return max(1, int(round(seconds * 1000)))


def check_client(client: Any) -> Any:
    """Return ``client`` if it is a ``redis.Redis``; else raise TypeError."""
    if not isinstance(client, redis.Redis):
        raise TypeError(f"client must be a redis.Redis, not {type(client).__name__}")
    return client


def check_prefix(prefix: Any) -> str:
    """Return ``prefix`` if it is a str; else raise TypeError."""
    if not isinstance(prefix, str):
        raise TypeError(f"prefix must be a str, not {type(prefix).__name__}")
    return prefix
