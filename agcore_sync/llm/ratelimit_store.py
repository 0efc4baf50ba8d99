"""Where a rate limit's budget lives: the store interface and the in-process store.

The budget of one key (see :class:`~agcore_sync.llm.ratelimit.RateLimit`):

1. **Requests and tokens** are token buckets. Each holds one minute's budget
   (``requests_per_minute``, ``tokens_per_minute``): a full minute may be
   spent at once, and it refills continuously at a minute's budget per 60
   seconds. A bucket starts full. A key never seen is full.
2. **Acquire is all or nothing.** A request takes one request, its estimated
   tokens and, with ``max_concurrent``, a slot, in one atomic step; when any
   is short nothing is taken and the step says how long until it could fit
   (``math.inf``: until a slot is given back).
3. **Settle** corrects the tokens to what the response's usage says (a
   bucket may go below zero: that is debt the refill pays off first, and it
   never exceeds its minute) and gives the slot back.
4. **Tighten** lowers a bucket to what the server's ``x-ratelimit-*`` headers
   say is left; it never raises one.

:class:`InMemoryRateLimitStore` keeps this in a dict under one lock (one
process); :class:`agcore_sync.contrib.redis.RedisRateLimitStore` keeps it in
Redis, one Lua script per step, so processes share it.
"""

from __future__ import annotations

import abc
import itertools
import math
import os
import threading
import time
from typing import Any, Callable, Dict, List, Optional

# ``limit`` below is a :class:`~agcore_sync.llm.ratelimit.RateLimit`, read by its
# attributes (``requests_per_minute``, ``tokens_per_minute``, ``max_concurrent``);
# not imported: ratelimit.py imports this module, and imports run one way.
_Limit = Any

__all__ = ["RateLimitStore", "InMemoryRateLimitStore", "REQUESTS", "TOKENS"]

#: The name of the requests bucket (``tighten``'s ``bucket``).
REQUESTS = "requests"
#: The name of the tokens bucket.
TOKENS = "tokens"


# Slot ids: unique across processes (a random prefix, new in a forked child) and cheap.
_slot_prefix = os.urandom(6).hex()
_slot_ids = itertools.count(1)


def _reseed() -> None:
    global _slot_prefix
    _slot_prefix = os.urandom(6).hex()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reseed)


class RateLimitStore(abc.ABC):
    """Keeps the budgets of rate-limit keys (see the module docstring for the rules).

    Methods are called by :class:`~agcore_sync.llm.ratelimit.RateLimitedProvider`
    from the calling threads, concurrently; an implementation makes each one
    atomic.

    .. versionadded:: 0.2
    """

    #: How often a caller waiting only for a free slot asks again; None: the
    #: store's :meth:`wait` returns when a slot is given back, no polling.
    slot_poll_interval: Optional[float] = None

    @abc.abstractmethod
    def acquire(self, key: str, limit: _Limit, tokens: int, slot: Optional[str]) -> float:
        """Take one request, ``tokens`` tokens and (if ``slot``) a concurrency slot, all or nothing.

        Args:
            key: the budget's name.
            limit: its sizes (a bucket whose limit is None is not used).
            tokens: the request's estimated tokens.
            slot: a unique id for the slot to hold, or None without ``max_concurrent``.

        Returns:
            0.0 when taken; else the seconds until it may fit, ``math.inf``
            when only a slot is missing (wait for a release).
        """

    @abc.abstractmethod
    def settle(self, key: str, limit: _Limit, tokens_delta: int, slot: Optional[str]) -> None:
        """Charge ``tokens_delta`` more tokens (negative: give back) and release ``slot``."""

    @abc.abstractmethod
    def tighten(self, key: str, limit: _Limit, bucket: str, level: float) -> None:
        """Lower ``bucket`` (:data:`REQUESTS` or :data:`TOKENS`) to ``level`` if it holds more."""

    def new_slot(self) -> str:
        """Return an id for a concurrency slot, unique across processes (a random prefix and a counter)."""
        return f"{_slot_prefix}-{next(_slot_ids)}"

    def wait(self, key: str, seconds: float, cancel: Optional[threading.Event]) -> bool:
        """Block up to ``seconds`` for the budget of ``key`` to change; return True if cancelled.

        The default waits on ``cancel`` (or a fresh event); a store that
        knows when its budget changes may return earlier.
        """
        return (cancel or threading.Event()).wait(seconds)

    def wake(self, key: str) -> None:  # noqa: B027 - optional hook
        """Wake the waiters of ``key`` (a cancel happened); the default does nothing."""


class _Budget:
    """The state of one key: two bucket levels with their times, and the slots held."""

    __slots__ = ("requests", "requests_at", "tokens", "tokens_at", "active")

    def __init__(self, limit: _Limit, now: float) -> None:
        self.requests = float(limit.requests_per_minute or 0)
        self.tokens = float(limit.tokens_per_minute or 0)
        self.requests_at = self.tokens_at = now
        self.active = 0


def _refilled(level: float, since: float, now: float, per_minute: float) -> float:
    return min(per_minute, level + per_minute * max(0.0, now - since) / 60.0)


class InMemoryRateLimitStore(RateLimitStore):
    """The budgets of one process, in a dict under one lock (the default store).

    Args:
        clock: ``() -> seconds``, monotonic (tests pass a fake one).

    Waiters block on a condition of the lock, so a slot given back or a
    refund wakes them at once. The hot path (a request with room) takes
    the plain lock and touches the condition only when someone waits.

    .. versionadded:: 0.2
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._budgets: Dict[str, _Budget] = {}
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._waiting = 0

    def __repr__(self) -> str:
        return f"InMemoryRateLimitStore(keys={len(self._budgets)})"

    def new_slot(self) -> str:
        """Return a slot id: this store counts slots, so one id serves every holder."""
        return "slot"

    def _budget(self, key: str, limit: _Limit, now: float) -> _Budget:
        budget = self._budgets.get(key)
        if budget is None:
            budget = self._budgets[key] = _Budget(limit, now)
        return budget

    def acquire(self, key: str, limit: _Limit, tokens: int, slot: Optional[str]) -> float:
        """See :meth:`RateLimitStore.acquire`."""
        rpm, tpm, most = limit.requests_per_minute, limit.tokens_per_minute, limit.max_concurrent
        with self._lock:
            now = self.clock()
            budget = self._budgets.get(key)
            if budget is None:
                budget = self._budgets[key] = _Budget(limit, now)
            wait = 0.0
            # The refill of _refilled, inlined: this runs on every request.
            if rpm is not None:
                level = budget.requests + rpm * (now - budget.requests_at) / 60.0
                budget.requests = level = rpm if level > rpm else level
                budget.requests_at = now
                if level < 1:
                    wait = (1 - level) * 60.0 / rpm
            if tpm is not None:
                level = budget.tokens + tpm * (now - budget.tokens_at) / 60.0
                budget.tokens = level = tpm if level > tpm else level
                budget.tokens_at = now
                if level < tokens:
                    need = (tokens - level) * 60.0 / tpm
                    wait = need if need > wait else wait
            if most is not None and wait == 0.0 and budget.active >= most:
                wait = math.inf
            if wait:
                return wait
            if rpm is not None:
                budget.requests -= 1
            if tpm is not None:
                budget.tokens -= tokens
            if most is not None:
                budget.active += 1
            return 0.0

    def settle(self, key: str, limit: _Limit, tokens_delta: int, slot: Optional[str]) -> None:
        """See :meth:`RateLimitStore.settle`."""
        tpm = limit.tokens_per_minute
        with self._lock:
            budget = self._budgets.get(key)
            if budget is None:
                return
            if tokens_delta and tpm is not None:
                now = self.clock()
                level = _refilled(budget.tokens, budget.tokens_at, now, tpm) - tokens_delta
                budget.tokens, budget.tokens_at = max(-float(tpm), min(float(tpm), level)), now
            if slot is not None and budget.active > 0:
                budget.active -= 1
            if self._waiting and (slot is not None or tokens_delta < 0):
                self._changed.notify_all()

    def tighten(self, key: str, limit: _Limit, bucket: str, level: float) -> None:
        """See :meth:`RateLimitStore.tighten`."""
        per_minute = limit.requests_per_minute if bucket == REQUESTS else limit.tokens_per_minute
        if per_minute is None:
            return
        with self._lock:
            now = self.clock()
            budget = self._budget(key, limit, now)
            if bucket == REQUESTS:
                current = _refilled(budget.requests, budget.requests_at, now, per_minute)
                budget.requests, budget.requests_at = min(current, level), now
            else:
                current = _refilled(budget.tokens, budget.tokens_at, now, per_minute)
                budget.tokens, budget.tokens_at = min(current, level), now

    def wait(self, key: str, seconds: float, cancel: Optional[threading.Event]) -> bool:
        """Block on the store's condition up to ``seconds``; True if ``cancel`` is set."""
        with self._changed:
            if cancel is not None and cancel.is_set():
                return True
            self._waiting += 1
            try:
                self._changed.wait(seconds)
            finally:
                self._waiting -= 1
        return cancel is not None and cancel.is_set()

    def wake(self, key: str) -> None:
        """Wake every waiter (they check their cancel event)."""
        with self._changed:
            self._changed.notify_all()

    def levels(self, key: str) -> List[float]:
        """Return ``[requests, tokens, active slots]`` of ``key`` as last updated (tests, diagnostics)."""
        with self._lock:
            budget = self._budgets.get(key)
            if budget is None:
                return []
            return [budget.requests, budget.tokens, float(budget.active)]
