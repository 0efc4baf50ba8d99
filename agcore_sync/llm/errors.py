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
