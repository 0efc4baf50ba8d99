"""Anthropic Messages wire values that a plain response and a stream share.

Pure helpers, no I/O: the stop reason of a wire ``stop_reason``, the
:class:`~agcore_sync.llm.types.Usage` of a ``usage`` object and the typed
error of an ``{"type": "error", ...}`` payload. :mod:`agcore_sync.llm.anthropic`
uses them for ``chat``, :mod:`agcore_sync.llm._anthropic_stream` for streams;
they live apart from the stream translator so that a provider that never
streams never loads the stream events.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Tuple, Type

from agcore_sync._http.masking import Masker
from agcore_sync.llm.errors import (
    AuthenticationError,
    LlmError,
    ProviderError,
    RateLimitError,
    ServerError,
)
from agcore_sync.llm.types import StopReason, Usage

__all__ = ["stop_reason", "usage_from_wire", "api_error", "TOOL_ID_PREFIX"]

#: The prefix of tool-call ids made for calls the server sent without one.
TOOL_ID_PREFIX = "toolu_"

_STOP_REASONS: Mapping[str, StopReason] = {
    "end_turn": StopReason.STOP,
    "stop_sequence": StopReason.STOP,
    "pause_turn": StopReason.STOP,
    "tool_use": StopReason.TOOL_USE,
    "max_tokens": StopReason.LENGTH,
    "model_context_window_exceeded": StopReason.LENGTH,
    "refusal": StopReason.CONTENT_FILTER,
}

# error.type -> (error class, the HTTP status the API documents for that type).
_ERROR_TYPES: Mapping[str, Tuple[Type[LlmError], int]] = {
    "invalid_request_error": (ProviderError, 400),
    "authentication_error": (AuthenticationError, 401),
    "billing_error": (ProviderError, 402),
    "permission_error": (AuthenticationError, 403),
    "not_found_error": (ProviderError, 404),
    "request_too_large": (ProviderError, 413),
    "rate_limit_error": (RateLimitError, 429),
    "api_error": (ServerError, 500),
    "timeout_error": (ProviderError, 504),
    "overloaded_error": (ServerError, 529),
}

def stop_reason(value: Optional[str], has_tool_calls: bool) -> StopReason:
    """Map a wire ``stop_reason``; a missing one is TOOL_USE with tool calls, else STOP."""
    if value is None:
        return StopReason.TOOL_USE if has_tool_calls else StopReason.STOP
    return _STOP_REASONS.get(value, StopReason.ERROR)


def _count(raw: Mapping[str, Any], key: str) -> int:
    value = raw.get(key)
    return value if isinstance(value, int) else 0


def usage_from_wire(raw: Mapping[str, Any]) -> Usage:
    """Return the :class:`Usage` of a wire ``usage`` object (prompt counts cached tokens too)."""
    cache_read = _count(raw, "cache_read_input_tokens")
    cache_write = _count(raw, "cache_creation_input_tokens")
    return Usage(
        prompt_tokens=_count(raw, "input_tokens") + cache_read + cache_write,
        completion_tokens=_count(raw, "output_tokens"),
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
    )


def api_error(data: Mapping[str, Any], *, streaming: bool, masker: Masker) -> LlmError:
    """Return the typed error for an ``{"type": "error", "error": {...}}`` payload."""
    error = data.get("error")
    error = error if isinstance(error, dict) else {}
    error_type = error.get("type")
    cls, status = _ERROR_TYPES.get(error_type, (ProviderError, None))  # type: ignore[arg-type]
    where = "stream" if streaming else "response"
    message = f"Anthropic {where} error {error_type or 'unknown'}"
    if isinstance(error.get("message"), str):
        message += f": {error['message']}"
    return cls(masker.text(message), status_code=status, body=masker.json(dict(data)))
