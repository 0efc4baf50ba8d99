"""Retrying provider calls: RetryConfig, RetryProvider and the shared retry loop.

The wait before retry ``k`` (1-based) is::

    max(min(max_backoff, initial_backoff * multiplier ** (k - 1)) * f, retry_after or 0)

with ``f`` uniform in [0.5, 1] when ``jitter`` is on, else 1. A
``retry_after`` longer than ``max_backoff`` is honoured as given, up to
``max_retry_after``: a server that asks for a longer wait gets no retry, the
error is raised at once with its ``retry_after`` so the caller decides (a web
request is never held for an hour). Only errors
whose ``retryable`` flag is set are retried; a stream is retried only while
it has yielded nothing. Every wait goes through an injected ``sleep``; a
``sleep`` that returns True (``threading.Event.wait``) means "cancelled" and
the last error is raised at once.
"""

from __future__ import annotations

import random
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, Optional, TypeVar

import attrs

from agcore_sync import _check, _instrument
from agcore_sync._values import value_methods
from agcore_sync.llm.errors import LlmError
from agcore_sync.llm.provider import LlmProvider
from agcore_sync.llm.types import MessageRequest, MessageResponse

if TYPE_CHECKING:  # pragma: no cover - the stream events load with the first stream
    from agcore_sync.llm.events import StreamEvent

__all__ = ["RetryConfig", "RetryProvider", "backoff_delay", "call_with_retry", "stream_with_retry"]

logger = _instrument.get_logger("agcore_sync.llm.retry")

T = TypeVar("T")

#: ``sleep(seconds)``; a true return value means the wait was cancelled.
Sleep = Callable[[float], Any]


@attrs.frozen
@value_methods
class RetryConfig:
    """How often and how long to retry a failed provider call.

    Args:
        max_retries: retries after the first attempt (so at most
            ``max_retries + 1`` attempts).
        initial_backoff: seconds before the first retry.
        max_backoff: cap of the exponential backoff (not of ``retry_after``).
        multiplier: growth of the backoff per retry.
        jitter: multiply each backoff by a uniform factor in [0.5, 1].
        max_retry_after: the longest ``retry_after`` (seconds) that is waited
            for; a longer one raises the error at once, ``retry_after`` set.
            The official SDKs cap it at 60 s the same way.

    .. versionchanged:: 0.2 ``max_retry_after``.
    """

    max_retries: int = attrs.field(default=3, validator=attrs.validators.ge(0))
    initial_backoff: float = attrs.field(default=0.5, validator=attrs.validators.ge(0))
    max_backoff: float = attrs.field(default=30.0, validator=attrs.validators.ge(0))
    multiplier: float = attrs.field(default=2.0, validator=attrs.validators.ge(1))
    jitter: bool = True
    max_retry_after: float = attrs.field(default=60.0, validator=attrs.validators.ge(0))

    def to_dict(self) -> Dict[str, Any]:
        """Return a JSON-ready dict."""
        return attrs.asdict(self)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> RetryConfig:
        """Build a config from ``to_dict()`` output (older dicts lack newer fields)."""
        return cls(**data)


def backoff_delay(config: RetryConfig, retry: int, retry_after: Optional[float] = None,
                  rng: Callable[[], float] = random.random) -> float:
    """Return the seconds to wait before retry number ``retry`` (1-based)."""
    backoff = min(config.max_backoff, config.initial_backoff * config.multiplier ** (retry - 1))
    if config.jitter:
        backoff *= 0.5 + 0.5 * rng()
    return max(backoff, retry_after or 0.0)


def _should_retry(exc: LlmError, config: RetryConfig, retry: int, sleep: Sleep) -> bool:
    """Wait before ``retry`` if ``exc`` allows it; False means give up."""
    if not exc.retryable or retry > config.max_retries:
        return False
    if exc.retry_after is not None and exc.retry_after > config.max_retry_after:
        logger.warning("not retrying %s: the server asks to wait %.0fs, more than max_retry_after=%.0fs",
                       type(exc).__name__, exc.retry_after, config.max_retry_after)
        return False
    delay = backoff_delay(config, retry, exc.retry_after)
    logger.warning("retry %d/%d in %.2fs after %s: %s", retry, config.max_retries, delay,
                   type(exc).__name__, exc)
    _instrument.on_retry(exc, retry, delay)
    return not sleep(delay)


def call_with_retry(call: Callable[[], T], config: RetryConfig, sleep: Sleep = time.sleep) -> T:
    """Return ``call()``, retrying retryable :class:`LlmError` as ``config`` says."""
    retry = 0
    while True:
        try:
            return call()
        except LlmError as exc:
            retry += 1
            if not _should_retry(exc, config, retry, sleep):
                raise


def stream_with_retry(open_stream: Callable[[], Iterator[T]], config: RetryConfig,
                      sleep: Sleep = time.sleep) -> Iterator[T]:
    """Yield from ``open_stream()``, retrying only while nothing was yielded yet."""
    retry = 0
    while True:
        stream = open_stream()
        try:
            first = next(stream)
        except StopIteration:
            return
        except LlmError as exc:
            _close(stream)
            retry += 1
            if not _should_retry(exc, config, retry, sleep):
                raise
            continue
        try:
            yield first
            yield from stream
        finally:
            _close(stream)
        return


def _close(stream: Iterator[Any]) -> None:
    close = getattr(stream, "close", None)
    if close is not None:
        close()


class RetryProvider(LlmProvider):
    """Wraps a provider and retries its retryable failures.

    Args:
        inner: the provider to call.
        config: backoff settings.
        sleep: how to wait (tests pass a recorder; ``threading.Event.wait``
            makes waits cancellable).
    """

    def __init__(self, inner: LlmProvider, config: RetryConfig = RetryConfig(), *,
                 sleep: Sleep = time.sleep) -> None:
        _check.instance("RetryProvider", "inner", inner, LlmProvider, "an LlmProvider such as OpenAIProvider(...)")
        _check.instance("RetryProvider", "config", config, RetryConfig, "a RetryConfig")
        if not callable(sleep):
            raise TypeError(f"RetryProvider: sleep must be callable, got {type(sleep).__name__}")
        self.inner = inner
        self.config = config
        self.sleep = sleep
        self.model = inner.model

    def __repr__(self) -> str:
        return f"RetryProvider({self.inner!r}, {self.config!r})"

    def chat(self, request: MessageRequest) -> MessageResponse:
        """Call ``inner.chat``, retrying retryable errors."""
        return call_with_retry(lambda: self.inner.chat(request), self.config, self.sleep)

    def chat_stream(self, request: MessageRequest) -> Iterator[StreamEvent]:
        """Stream from ``inner``, retrying only before the first event."""
        return stream_with_retry(lambda: self.inner.chat_stream(request), self.config, self.sleep)

    def close(self) -> None:
        """Close the inner provider."""
        self.inner.close()
