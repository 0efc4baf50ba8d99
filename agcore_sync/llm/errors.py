"""The errors of the LLM layer.

Error tree (all under :class:`~agcore_sync.errors.AgcoreError`)::

    LlmError                   retryable: False
    +-- ProviderError          any HTTP error status; retryable for 408, 409, 429, 5xx
    |   +-- AuthenticationError   401 / 403, never retried
    |   +-- RateLimitError        429, retry_after from Retry-After
    |   +-- ServerError           5xx (and Anthropic 529 "overloaded")
    +-- LlmTimeoutError        retryable
    +-- LlmConnectionError     retryable (refused, reset, stream cut short)
    +-- ResponseParseError     a body or chunk that is not what the API documents
    +-- MaxToolTurnsExceeded   the tool loop ran out of rounds
    +-- OutputValidationError  a structured answer that does not match its schema (.errors, .raw)
    +-- OutputRefusedError     the model refused to give a structured answer (.refusal)
    +-- RateLimitWaitExceeded  the local rate limit would make the caller wait past max_wait (.wait)
    +-- RateLimitStoreError    a shared rate-limit store (Redis) failed; retryable
    +-- CircuitOpenError       a provider's circuit is open: no request was sent (.retry_after)
    +-- AllProvidersFailedError  every provider of a FallbackProvider failed (.errors, in order)

Loops and :class:`~agcore_sync.llm.retry.RetryProvider` read ``retryable``;
they never test classes.
"""

from __future__ import annotations

from typing import Any, ClassVar, Iterable, List, Optional

from agcore_sync.errors import AgcoreError

__all__ = [
    "LlmError",
    "ProviderError",
    "AuthenticationError",
    "RateLimitError",
    "ServerError",
    "LlmTimeoutError",
    "LlmConnectionError",
    "ResponseParseError",
    "MaxToolTurnsExceeded",
    "OutputValidationError",
    "OutputRefusedError",
    "RateLimitWaitExceeded",
    "RateLimitStoreError",
    "CircuitOpenError",
    "AllProvidersFailedError",
]


class LlmError(AgcoreError):
    """A failure talking to a language model.

    Args:
        message: what failed and what to do next (never a key or a prompt).
        status_code: the HTTP status, if there was one.
        retryable: whether trying again may help; None takes the class's
            default (:attr:`default_retryable`).
        retry_after: seconds the server asked us to wait (Retry-After).
        body: the server's error body, with any API key masked.
    """

    #: The ``retryable`` value used when the constructor gets None.
    default_retryable: ClassVar[bool] = False

    def __init__(
        self,
        message: str,
        *,
        status_code: Optional[int] = None,
        retryable: Optional[bool] = None,
        retry_after: Optional[float] = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.retryable = self._default_retryable(status_code) if retryable is None else retryable
        self.retry_after = retry_after
        self.body = body

    def _default_retryable(self, status_code: Optional[int]) -> bool:
        return self.default_retryable

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, status_code={self.status_code!r})"


class ProviderError(LlmError):
    """The provider answered with an HTTP error status.

    ``retryable`` follows ``status_code`` when not given: 408, 409, 429 and
    5xx are retryable, everything else is not.
    """

    def _default_retryable(self, status_code: Optional[int]) -> bool:
        if status_code is None:
            return self.default_retryable
        return status_code in (408, 409, 429) or status_code >= 500


class AuthenticationError(ProviderError):
    """The key is missing, wrong or not allowed (401 / 403); never retried."""

    def _default_retryable(self, status_code: Optional[int]) -> bool:
        return False


class RateLimitError(ProviderError):
    """Too many requests (429); see ``retry_after``."""

    default_retryable = True

    def _default_retryable(self, status_code: Optional[int]) -> bool:
        return True


class ServerError(ProviderError):
    """The provider failed (5xx, or an overloaded/api error mid-stream)."""

    default_retryable = True

    def _default_retryable(self, status_code: Optional[int]) -> bool:
        return True


class LlmTimeoutError(LlmError):
    """Connecting or reading took longer than the provider's ``timeout``."""

    default_retryable = True


class LlmConnectionError(LlmError):
    """The connection failed or a stream ended before its end marker."""

    default_retryable = True


class ResponseParseError(LlmError):
    """A response body or stream chunk is not valid JSON of the documented shape."""


class MaxToolTurnsExceeded(LlmError):
    """The tool loop made ``max_tool_turns`` provider calls and still got tool calls.

    The cycle's history keeps every round made so far.
    """


class OutputValidationError(LlmError):
    """A structured answer is not JSON, or does not match the output schema.

    Args:
        message: what failed, on which schema.
        errors: one line per problem, ``"<JSON path>: <what is wrong>"``
            (``$`` is the whole answer), e.g.
            ``"$.items[0].price: 'x' is not of type 'number'"``.
        raw: the model's text, as it came.
        status_code: see :class:`LlmError`.
        retryable: see :class:`LlmError`.
        retry_after: see :class:`LlmError`.
        body: see :class:`LlmError`.

    .. versionadded:: 0.1.0
    """

    def __init__(
        self,
        message: str,
        *,
        errors: Iterable[str] = (),
        raw: Optional[str] = None,
        status_code: Optional[int] = None,
        retryable: Optional[bool] = None,
        retry_after: Optional[float] = None,
        body: Any = None,
    ) -> None:
        super().__init__(
            message, status_code=status_code, retryable=retryable, retry_after=retry_after, body=body
        )
        #: The problems found, one ``"<JSON path>: <message>"`` string each.
        self.errors: List[str] = list(errors)
        #: The model's text as it came (None when there was none).
        self.raw = raw


class OutputRefusedError(LlmError):
    """The model refused to answer in the asked structure (OpenAI ``refusal``, Anthropic ``refusal``).

    Never retried: asking again rarely changes a refusal.

    Args:
        message: what happened.
        refusal: the model's refusal text, when it gave one.
        status_code: see :class:`LlmError`.
        retryable: see :class:`LlmError`.
        retry_after: see :class:`LlmError`.
        body: see :class:`LlmError`.

    .. versionadded:: 0.1.0
    """

    def __init__(
        self,
        message: str,
        *,
        refusal: Optional[str] = None,
        status_code: Optional[int] = None,
        retryable: Optional[bool] = None,
        retry_after: Optional[float] = None,
        body: Any = None,
    ) -> None:
        super().__init__(
            message, status_code=status_code, retryable=retryable, retry_after=retry_after, body=body
        )
        #: The model's refusal text (None when it gave none).
        self.refusal = refusal


class RateLimitWaitExceeded(LlmError):
    """A :class:`~agcore_sync.llm.ratelimit.RateLimitedProvider` would have to wait too long.

    Raised before any request is sent: the local budget (requests, tokens
    or concurrent calls per minute) has no room within ``max_wait`` seconds,
    or a single request needs more tokens than a whole minute's budget (then
    ``wait`` is None: no wait would help). Retryable when a wait would help.

    Args:
        message: what is exhausted, on which key, and what to do next.
        wait: the seconds the budget needed (None: it can never fit).

    .. versionadded:: 0.2
    """

    def __init__(self, message: str, *, wait: Optional[float] = None) -> None:
        super().__init__(message, retryable=wait is not None, retry_after=wait)
        #: Seconds until the budget has room, or None when the request can never fit.
        self.wait = wait

    def __reduce__(self) -> Any:
        return (_rebuild_wait_exceeded, (self.message, self.wait))


def _rebuild_wait_exceeded(message: str, wait: Optional[float]) -> RateLimitWaitExceeded:
    return RateLimitWaitExceeded(message, wait=wait)


class RateLimitStoreError(LlmError):
    """The store of a shared rate limit (Redis) failed; the request was not sent.

    Retryable. A store built with ``fail_open=True`` logs instead and lets
    the request through.

    .. versionadded:: 0.2
    """

    default_retryable = True


class CircuitOpenError(LlmError):
    """A provider's circuit breaker is open: the call was refused without a request.

    ``retry_after`` is the seconds until the breaker lets a trial request
    through. Retryable (after that wait).

    .. versionadded:: 0.2
    """

    default_retryable = True


class AllProvidersFailedError(LlmError):
    """Every provider of a :class:`~agcore_sync.llm.fallback.FallbackProvider` failed.

    The message names each attempt (provider, model, error); ``errors`` holds
    the errors themselves, in the order the providers were tried (a skipped
    provider whose circuit is open counts with its :class:`CircuitOpenError`).
    Retryable if any of them is; ``retry_after`` is the shortest one given.

    Args:
        message: one line per attempt.
        errors: the errors, in order.

    .. versionadded:: 0.2
    """

    def __init__(self, message: str, *, errors: Iterable[LlmError] = ()) -> None:
        errors = list(errors)
        waits = [e.retry_after for e in errors if e.retry_after is not None]
        super().__init__(message, retryable=any(e.retryable for e in errors),
                         retry_after=min(waits) if waits else None)
        #: The errors of the attempts, in order.
        self.errors: List[LlmError] = errors

    def __reduce__(self) -> Any:
        return (_rebuild_all_failed, (self.message, self.errors))


def _rebuild_all_failed(message: str, errors: List[LlmError]) -> AllProvidersFailedError:
    return AllProvidersFailedError(message, errors=errors)
