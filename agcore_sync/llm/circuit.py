"""CircuitBreaker: stop calling a provider that keeps failing, and try it again later.

The states and their rules:

1. **closed** (the start): calls go through. Each failure counts; a success
   resets the count. ``failure_threshold`` failures in a row open the circuit.
2. **open**: calls are refused at once with :class:`CircuitOpenError`, no
   request sent, for ``reset_after`` seconds from the failure that opened it.
3. **half-open**: after ``reset_after``, exactly one caller gets a trial
   request (the others are refused as in *open*). Its success closes the
   circuit; its failure opens it again for another ``reset_after``. A trial
   that ends without a verdict (a stream closed early) frees the trial slot.

What counts as a failure is the caller's choice (a
:class:`~agcore_sync.llm.fallback.FallbackProvider` counts the errors of its
``fall_back_on``; a 400 says nothing about the provider's health). Every
state change is logged at WARNING on ``agcore_sync.llm.circuit``.

The clock is injectable (``clock=``, default :func:`time.monotonic`), so
tests move time by hand. Thread-safe: one lock guards the state.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Optional

from agcore_sync import _instrument
from agcore_sync.llm._resilience_check import check_limit
from agcore_sync.llm.errors import CircuitOpenError

__all__ = ["CircuitBreaker", "CLOSED", "OPEN", "HALF_OPEN"]

logger = _instrument.get_logger("agcore_sync.llm.circuit")

#: Calls go through.
CLOSED = "closed"
#: Calls are refused without a request.
OPEN = "open"
#: One trial call goes through; its result decides.
HALF_OPEN = "half-open"


class CircuitBreaker:
    """A circuit breaker for one provider (see the module docstring for the rules).

    Used as a *template* by :class:`~agcore_sync.llm.fallback.FallbackProvider`
    (``circuit=CircuitBreaker(...)``): each provider gets its own breaker with
    these settings, made by :meth:`copy`. Use one directly around any call::

        breaker = CircuitBreaker(failure_threshold=3, reset_after=10.0)
        breaker.before_call()            # raises CircuitOpenError when open
        try:
            result = call()
        except LlmError:
            breaker.record_failure()
            raise
        breaker.record_success()

    Args:
        failure_threshold: failures in a row that open the circuit (an int >= 1).
        reset_after: seconds the circuit stays open before a trial request
            (a number > 0).
        clock: ``() -> seconds``, monotonic (tests pass a fake one).
        name: what the log lines and errors call the guarded thing.

    Raises:
        ValueError: a threshold or delay that is zero, negative or not a
            number (``"60"`` included).

    .. versionadded:: 0.2
    """

    def __init__(self, failure_threshold: int = 5, reset_after: float = 30.0, *,
                 clock: Callable[[], float] = time.monotonic, name: str = "provider") -> None:
        check_limit("CircuitBreaker", "failure_threshold", failure_threshold, integer=True)
        check_limit("CircuitBreaker", "reset_after", reset_after)
        if not callable(clock):
            raise TypeError(f"CircuitBreaker: clock must be callable, got {type(clock).__name__}")
        self.failure_threshold = failure_threshold
        self.reset_after = float(reset_after)
        self.clock = clock
        self.name = name
        self._lock = threading.Lock()
        self._state = CLOSED
        self._failures = 0
        self._opened_at = 0.0
        self._trial_running = False

    def __repr__(self) -> str:
        return (f"CircuitBreaker(failure_threshold={self.failure_threshold}, reset_after={self.reset_after}, "
                f"name={self.name!r}, state={self.state!r})")

    def copy(self, name: Optional[str] = None) -> CircuitBreaker:
        """Return a new, closed breaker with the same settings (and clock)."""
        return CircuitBreaker(self.failure_threshold, self.reset_after, clock=self.clock,
                              name=self.name if name is None else name)

    @property
    def state(self) -> str:
        """``"closed"``, ``"open"`` or ``"half-open"`` (an open one past ``reset_after`` reads half-open)."""
        with self._lock:
            if self._state == OPEN and self.clock() - self._opened_at >= self.reset_after:
                return HALF_OPEN
            return self._state

    def retry_after(self) -> float:
        """Return the seconds until a trial request may go (0 when calls go through)."""
        with self._lock:
            if self._state != OPEN:
                return 0.0
            return max(0.0, self.reset_after - (self.clock() - self._opened_at))

    def before_call(self) -> None:
        """Let a call through, or raise :class:`CircuitOpenError` without one.

        In *half-open*, the first caller becomes the trial and the others
        are refused until its result is recorded.
        """
        with self._lock:
            if self._state == CLOSED:
                return
            now = self.clock()
            if self._state == OPEN:
                left = self.reset_after - (now - self._opened_at)
                if left > 0:
                    raise self._refusal(left)
                self._move(HALF_OPEN)
            if self._trial_running:
                raise self._refusal(None)
            self._trial_running = True

    def record_success(self) -> None:
        """Note a successful call: the count resets, a trial closes the circuit."""
        with self._lock:
            self._failures = 0
            self._trial_running = False
            if self._state != CLOSED:
                self._move(CLOSED)

    def record_failure(self) -> None:
        """Note a failed call: the threshold reached (or a failed trial) opens the circuit."""
        with self._lock:
            self._failures += 1
            self._trial_running = False
            if self._state == HALF_OPEN or (self._state == CLOSED and self._failures >= self.failure_threshold):
                self._opened_at = self.clock()
                self._move(OPEN)

    def record_abandoned(self) -> None:
        """Note a call that ended without a verdict (closed early): a trial slot is freed."""
        with self._lock:
            self._trial_running = False

    def _move(self, state: str) -> None:
        # Called with the lock held.
        old, self._state = self._state, state
        if state == OPEN:
            logger.warning("circuit of %s: %s -> open for %.1fs after %d failure(s)", self.name, old,
                           self.reset_after, self._failures)
        else:
            logger.warning("circuit of %s: %s -> %s", self.name, old, state)

    def _refusal(self, left: Optional[float]) -> CircuitOpenError:
        if left is None:
            return CircuitOpenError(f"circuit of {self.name} is half-open and its trial request is running; "
                                    "no request was sent", retry_after=None)
        return CircuitOpenError(f"circuit of {self.name} is open after {self._failures} failure(s); no request "
                                f"was sent; a trial request may go in {left:.1f}s", retry_after=left)

