"""The seam that shows a provider's HTTP response headers to a wrapper around it.

Who calls what, from which thread, how often:

- A wrapper (:class:`~agcore_sync.llm.ratelimit.RateLimitedProvider`) runs
  the part of a call that sends the request inside ``with watching(callback):``,
  in the calling thread (for a stream: the ``next()`` that yields its first
  event, which is where the request is sent).
- :class:`~agcore_sync.llm._http_provider.HttpProvider` calls
  :func:`report` once per HTTP response it receives, error statuses
  included, in that same thread, before the body is read.
- ``callback(headers)`` gets the ``requests`` case-insensitive header
  mapping; it must be quick and must not raise (a failure is logged and
  dropped: headers are advice, never a reason to fail a call).

The current callback is a :class:`contextvars.ContextVar`, so concurrent
calls in other threads each see their own. With no watcher, :func:`report`
is one ``ContextVar.get``.
"""

from __future__ import annotations

import contextvars
from typing import Any, Callable, Mapping, Optional

from agcore_sync import _instrument

__all__ = ["HeadersCallback", "report", "unwatch", "watch", "watching"]

logger = _instrument.get_logger("agcore_sync.llm")

#: ``callback(headers)``: receives a response's headers (case-insensitive mapping).
HeadersCallback = Callable[[Mapping[str, str]], Any]

_watcher: contextvars.ContextVar[Optional[HeadersCallback]] = contextvars.ContextVar(
    "agcore_response_headers", default=None)


class watching:
    """``with watching(callback):`` sends the headers of every response received in the block to ``callback``.

    A class, not a generator-based context manager: it runs on every
    rate-limited call, and costs a ``ContextVar`` set and reset.
    """

    __slots__ = ("_callback", "_token")

    def __init__(self, callback: HeadersCallback) -> None:
        self._callback = callback

    def __enter__(self) -> None:
        self._token = _watcher.set(self._callback)

    def __exit__(self, *exc_info: Any) -> None:
        _watcher.reset(self._token)


def watch(callback: HeadersCallback) -> contextvars.Token:
    """Start sending headers to ``callback`` in this context; give the result to :func:`unwatch`.

    The two calls :class:`watching` makes, for a hot path that cannot
    afford an object per call.
    """
    return _watcher.set(callback)


def unwatch(token: contextvars.Token) -> None:
    """Undo :func:`watch` (in the same context)."""
    _watcher.reset(token)


def report(headers: Mapping[str, str]) -> None:
    """Give ``headers`` to the current watcher, if there is one."""
    callback = _watcher.get()
    if callback is None:
        return
    try:
        callback(headers)
    except Exception:  # noqa: BLE001 - advice only; the call goes on
        logger.warning("reading rate-limit headers failed; the call goes on", exc_info=True)
