"""Client-side rate limits: RateLimit and RateLimitedProvider.

A :class:`RateLimitedProvider` waits, in the calling thread, until its
budget has room for a request, then sends it. The budget (the rules are in
:mod:`agcore_sync.llm.ratelimit_store`):

1. **Per minute.** ``requests_per_minute`` and ``tokens_per_minute`` are
   token buckets holding one minute's budget (a full minute may be spent at
   once), refilled continuously.
2. **Tokens are estimated, then corrected.** A request is charged
   ``ceil(len(its JSON) / 4) + max_tokens`` tokens
   (:func:`~agcore_sync.llm.tokens.estimate_tokens`, the rule compaction
   uses) before it is sent, and corrected to the response's usage after it
   (a stream: to its ``CostUpdate`` / ``MessageComplete`` usage). A failed
   request keeps its estimate (the provider may have counted it). A single
   request larger than a whole minute's tokens fails at once:
   :class:`RateLimitWaitExceeded` with ``wait=None``.
3. **Concurrency.** ``max_concurrent`` calls at most run at once; a stream
   holds its slot until it ends or is closed (a stream dropped unclosed
   gives it back when garbage-collected).
4. **Waiting.** The wait blocks the calling thread, up to ``max_wait``
   seconds; a wait the budget already says is longer raises
   :class:`RateLimitWaitExceeded` at once (``wait`` = the seconds needed,
   retryable). Closing a stream from another thread while it waits ends
   the wait: the stream ends with nothing sent.
5. **Server headers tighten.** ``x-ratelimit-remaining-*`` / ``reset-*``
   (OpenAI) and ``anthropic-ratelimit-*`` (Anthropic) lower the local
   bucket to what the server says is left (never raise it).
6. **Where the budget lives.** ``store=None``: in this process (one
   :class:`~agcore_sync.llm.ratelimit_store.InMemoryRateLimitStore` per
   provider). :class:`agcore_sync.contrib.redis.RedisRateLimitStore`:
   shared by every process using the same Redis and ``key``.

Composes with the other wrappers: ``RetryProvider(RateLimitedProvider(
FallbackProvider([...])))`` retries a :class:`RateLimitWaitExceeded` (it is
retryable, ``retry_after`` set) like a 429; the rate limit counts each
attempt of a fallback list as one request of its own key.
"""

from __future__ import annotations

import math
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Optional

import attrs

from agcore_sync import _check, _instrument
from agcore_sync.llm import _response_headers
from agcore_sync.llm._ratelimit_headers import read_headers, tightened_level
from agcore_sync.llm._resilience_check import check_limit
from agcore_sync.llm.errors import RateLimitWaitExceeded
from agcore_sync.llm.provider import LlmProvider
from agcore_sync.llm.ratelimit_store import REQUESTS, TOKENS, InMemoryRateLimitStore, RateLimitStore
from agcore_sync.llm.tokens import estimate_tokens
from agcore_sync.llm.types import MessageRequest, MessageResponse, Usage

if TYPE_CHECKING:  # pragma: no cover
    from agcore_sync.llm.events import StreamEvent

__all__ = ["RateLimit", "RateLimitedProvider"]

logger = _instrument.get_logger("agcore_sync.llm.ratelimit")

#: ``sleep(seconds)``; a true return value means the wait was cancelled.
Sleep = Callable[[float], Any]


def _optional_limit(integer: bool = False) -> Callable[[Any, Any, Any], None]:
    def check(instance: Any, attribute: Any, value: Any) -> None:
        if value is not None:
            check_limit("RateLimit", attribute.name, value, integer=integer)
    return check


def _check_max_wait(instance: Any, attribute: Any, value: Any) -> None:
    check_limit("RateLimit", "max_wait", value, allow_zero=True)


@attrs.frozen
class RateLimit:
    """The budget of a :class:`RateLimitedProvider` (None: that dimension is not limited).

    Args:
        requests_per_minute: requests a minute (a number > 0).
        tokens_per_minute: tokens a minute, prompt and completion together.
        max_concurrent: calls running at once (an int > 0).
        max_wait: the most seconds a call waits for room (0: never wait).

    Raises:
        ValueError: a limit that is zero, negative or not a number (``"60"``
            included), or a negative ``max_wait``.

    .. versionadded:: 0.2
    """

    requests_per_minute: Optional[float] = attrs.field(default=None, validator=_optional_limit())
    tokens_per_minute: Optional[float] = attrs.field(default=None, validator=_optional_limit())
    max_concurrent: Optional[int] = attrs.field(default=None, validator=_optional_limit(integer=True))
    max_wait: float = attrs.field(default=60.0, validator=_check_max_wait)


class RateLimitedProvider(LlmProvider):
    """Wraps a provider and keeps its calls within a :class:`RateLimit` (rules in the module docstring).

    Example::

        provider = RateLimitedProvider(OpenAIProvider(model="gpt-4o-mini"),
                                       RateLimit(requests_per_minute=500, tokens_per_minute=200_000))

    Args:
        inner: the provider to call.
        limit: the budget.
        store: where the budget lives (None: in this process, this provider's own).
        key: the budget's name in the store; providers (and processes) with
            the same store and key share one budget. None:
            ``"<inner class>:<inner model>"``.
        clock: ``() -> seconds``, monotonic; also the in-process store's (tests pass a fake one).
        sleep: how to wait (tests pass one that moves a fake clock); None
            waits on the store, cancellable by closing the stream.

    .. versionadded:: 0.2
    """

    def __init__(self, inner: LlmProvider, limit: RateLimit, *, store: Optional[RateLimitStore] = None,
                 key: Optional[str] = None, clock: Callable[[], float] = time.monotonic,
                 sleep: Optional[Sleep] = None) -> None:
        _check.instance("RateLimitedProvider", "inner", inner, LlmProvider,
                        "an LlmProvider such as OpenAIProvider(...)")
        _check.instance("RateLimitedProvider", "limit", limit, RateLimit, "a RateLimit")
        _check.optional_instance("RateLimitedProvider", "store", store, RateLimitStore,
                                 "a RateLimitStore such as RedisRateLimitStore(...)")
        _check.optional_str("RateLimitedProvider", "key", key)
        if not callable(clock) or (sleep is not None and not callable(sleep)):
            raise TypeError("RateLimitedProvider: clock and sleep must be callable")
        self.inner = inner
        self.limit = limit
        self.clock = clock
        self.sleep = sleep
        self.store: RateLimitStore = store if store is not None else InMemoryRateLimitStore(clock)
        self.key: str = key or f"{type(inner).__name__}:{inner.model}"
        self.model = inner.model
        self.pricing = getattr(inner, "pricing", None)
        # Headers are read only when a per-minute bucket exists to tighten.
        reads_headers = limit.requests_per_minute is not None or limit.tokens_per_minute is not None
        self._headers_seen: Optional[Callable[[Mapping[str, str]], None]] = \
            self._read_headers if reads_headers else None

    def __repr__(self) -> str:
        return f"RateLimitedProvider({self.inner!r}, {self.limit!r}, key={self.key!r})"

    # -- calls ------------------------------------------------------------------

    def chat(self, request: MessageRequest) -> MessageResponse:
        """Wait for room in the budget, then call ``inner.chat``.

        Raises:
            RateLimitWaitExceeded: no room within ``max_wait`` (or never).
            LlmError: what ``inner`` raises.
        """
        tokens = 0 if self.limit.tokens_per_minute is None else self.estimate(request)
        slot = self.acquire(tokens, None)
        try:
            if self._headers_seen is not None:
                watch = _response_headers.watch(self._headers_seen)
                try:
                    response = self.inner.chat(request)
                finally:
                    _response_headers.unwatch(watch)
            else:
                response = self.inner.chat(request)
        except BaseException:
            if slot is not None:
                self.store.settle(self.key, self.limit, 0, slot)
            raise
        if slot is not None or tokens:
            self.settle(tokens, response.usage, slot)
        return response

    def chat_stream(self, request: MessageRequest) -> Iterator[StreamEvent]:
        """Wait for room (on the first ``next()``), then stream from ``inner``.

        The returned iterator's ``close()`` may be called from any thread;
        during the wait it ends the wait (the stream ends, nothing sent).
        """
        return _LimitedStream(self, request)

    def close(self) -> None:
        """Close the inner provider."""
        self.inner.close()

    # -- the budget ---------------------------------------------------------------

    def estimate(self, request: MessageRequest) -> int:
        """Return the tokens ``request`` is charged before it is sent (0 without a token limit)."""
        if self.limit.tokens_per_minute is None:
            return 0
        return estimate_tokens(request) + (request.max_tokens or 0)

    def acquire(self, tokens: int, cancel: Optional[threading.Event]) -> Optional[str]:
        """Take room for one request of ``tokens``, waiting up to ``max_wait``; return its slot id (or None).

        Raises:
            RateLimitWaitExceeded: no room within ``max_wait``, or ``tokens``
                above a minute's budget.
            _Cancelled: ``cancel`` was set during the wait (streams only).
        """
        limit = self.limit
        if limit.tokens_per_minute is not None and tokens > limit.tokens_per_minute:
            raise RateLimitWaitExceeded(
                f"rate limit {self.key!r}: a request of about {tokens} tokens (its JSON / 4 + max_tokens) "
                f"is larger than tokens_per_minute={limit.tokens_per_minute:g}; it can never be sent: "
                "shorten it, lower max_tokens or raise the limit", wait=None)
        slot = self.store.new_slot() if limit.max_concurrent is not None else None
        wait = self.store.acquire(self.key, limit, tokens, slot)
        if not wait:
            return slot
        deadline = self.clock() + limit.max_wait
        while True:
            left = deadline - self.clock()
            if (wait > left and not math.isinf(wait)) or left <= 0:
                raise self._exceeded(wait)
            pause = min(wait, left)
            if math.isinf(wait) and self.store.slot_poll_interval is not None:
                pause = min(left, self.store.slot_poll_interval)
            logger.debug("rate limit %r: waiting %.3fs for room", self.key, pause)
            if self._sleep(pause, cancel):
                raise _Cancelled()
            wait = self.store.acquire(self.key, limit, tokens, slot)
            if not wait:
                return slot

    def settle(self, tokens: int, usage: Optional[Usage], slot: Optional[str]) -> None:
        """Correct the charge of a finished request to ``usage`` and give its slot back."""
        delta = 0
        if usage is not None and self.limit.tokens_per_minute is not None:
            used = usage.prompt_tokens + usage.completion_tokens
            if used:
                delta = used - tokens
        if delta or slot is not None:
            self.store.settle(self.key, self.limit, delta, slot)

    def _sleep(self, seconds: float, cancel: Optional[threading.Event]) -> bool:
        if self.sleep is not None:
            return bool(self.sleep(seconds))
        return self.store.wait(self.key, seconds, cancel)

    def _exceeded(self, wait: float) -> RateLimitWaitExceeded:
        what = "a free concurrency slot" if math.isinf(wait) else f"room in {wait:.2f}s"
        return RateLimitWaitExceeded(
            f"rate limit {self.key!r}: no room within max_wait={self.limit.max_wait:g}s (the budget has "
            f"{what}); retry later, or raise max_wait or the limit",
            wait=None if math.isinf(wait) else wait)

    def _read_headers(self, headers: Mapping[str, str]) -> None:
        requests_left, tokens_left = read_headers(headers)
        rpm, tpm = self.limit.requests_per_minute, self.limit.tokens_per_minute
        # A server that has more left than a whole local minute cannot lower the bucket: no store call.
        if requests_left is not None and rpm is not None and requests_left[0] < rpm:
            self.store.tighten(self.key, self.limit, REQUESTS, tightened_level(requests_left, rpm, 1.0))
        if tokens_left is not None and tpm is not None and tokens_left[0] < tpm:
            self.store.tighten(self.key, self.limit, TOKENS, tightened_level(tokens_left, tpm, 0.0))


class _EventKinds:
    """The event classes a stream's usage is read from, imported with the first stream."""

    CostUpdate: Any = None
    MessageComplete: Any = None


_kinds = _EventKinds()


def _load_event_kinds() -> None:
    if _kinds.CostUpdate is None:
        from agcore_sync.llm.events import CostUpdate, MessageComplete  # the stream modules load with the first stream

        _kinds.CostUpdate, _kinds.MessageComplete = CostUpdate, MessageComplete


class _Cancelled(Exception):
    """A stream's wait for room was ended by its ``close()``."""


class _LimitedStream:
    """The iterator of :meth:`RateLimitedProvider.chat_stream`: waits, streams, gives the slot back once.

    ``close()`` may come from any thread. While ``__next__`` runs (waiting
    for room or reading the inner stream), close only sets the cancel event
    and wakes the wait; the running ``__next__`` then closes the inner
    stream and ends. Otherwise close does that itself.
    """

    __slots__ = ("_provider", "_request", "_cancel", "_lock", "_running", "_inner", "_tokens", "_slot",
                 "_usage", "_settled", "__weakref__")

    def __init__(self, provider: RateLimitedProvider, request: MessageRequest) -> None:
        self._provider = provider
        self._request = request
        self._cancel = threading.Event()
        self._lock = threading.Lock()
        self._running = False
        self._inner: Optional[Iterator[StreamEvent]] = None
        self._tokens = 0
        self._slot: Optional[str] = None
        self._usage: Optional[Usage] = None
        self._settled = False

    def __iter__(self) -> _LimitedStream:
        return self

    def __next__(self) -> StreamEvent:
        with self._lock:
            if self._cancel.is_set() or self._settled:
                raise StopIteration
            self._running = True
        try:
            event = self._step()
        except StopIteration:
            self._end()
            raise
        except _Cancelled:
            self._end()
            raise StopIteration from None
        except BaseException:
            self._end()
            raise
        finally:
            with self._lock:
                self._running = False
        if self._cancel.is_set():  # closed from another thread while we read
            self._end()
            raise StopIteration
        return event

    def _step(self) -> StreamEvent:
        provider = self._provider
        if self._inner is None:
            _load_event_kinds()
            self._tokens = provider.estimate(self._request)
            self._slot = provider.acquire(self._tokens, self._cancel)
            self._inner = provider.inner.chat_stream(self._request)
            if provider._headers_seen is not None:
                with _response_headers.watching(provider._headers_seen):
                    event = next(self._inner)  # the request is sent here
            else:
                event = next(self._inner)
        else:
            event = next(self._inner)
        kind = type(event)
        if kind is _kinds.CostUpdate:
            self._usage = event.usage  # type: ignore[attr-defined]
        elif kind is _kinds.MessageComplete:
            self._usage = event.full_response.usage  # type: ignore[attr-defined]
        return event

    def _end(self) -> None:
        with self._lock:
            if self._settled:
                return
            self._settled = True
        inner, self._inner = self._inner, None
        try:
            if inner is not None:
                close = getattr(inner, "close", None)
                if close is not None:
                    close()
        finally:
            if inner is not None or self._slot is not None:
                self._provider.settle(self._tokens, self._usage, self._slot)

    def close(self) -> None:
        """End the stream: from any thread, idempotent; during a wait, the wait ends."""
        with self._lock:
            self._cancel.set()
            running = self._running
        if running:
            self._provider.store.wake(self._provider.key)
        else:
            self._end()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - never raise from a finaliser
            pass

