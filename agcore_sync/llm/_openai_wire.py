"""Chat Completions wire values that a plain response and a stream share.

Pure helpers, no I/O: the stop reason of a ``finish_reason``, the
:class:`~agcore_sync.llm.types.Usage` of a ``usage`` object and the typed
error of an ``{"error": ...}`` body or chunk. :mod:`agcore_sync.llm.openai`
uses them for ``chat``, :mod:`agcore_sync.llm._openai_stream` for streams;
they live apart from the stream translator so that a provider that never
streams never loads the stream events.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from agcore_sync._http.masking import Masker
from agcore_sync.llm._http_provider import error_for_status
from agcore_sync.llm.errors import LlmError, ProviderError, ServerError
from agcore_sync.llm.types import StopReason, Usage

__all__ = ["stop_reason", "usage_from_wire", "error_from_body"]

_FINISH_REASONS = {
    "stop": StopReason.STOP,
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    "length": StopReason.LENGTH,
    "content_filter": StopReason.CONTENT_FILTER,
}


def stop_reason(finish_reason: Any, refused: bool) -> Optional[StopReason]:
    """Map a ``finish_reason``; None when there was none (the caller decides)."""
    if refused:
        return StopReason.CONTENT_FILTER
    if finish_reason is None:
        return None
    return _FINISH_REASONS.get(finish_reason, StopReason.ERROR)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def usage_from_wire(data: Any) -> Usage:
    """Return the :class:`Usage` of a wire ``usage`` object (zeros when absent)."""
    if not isinstance(data, dict):
        return Usage()
    details = data.get("prompt_tokens_details")
    details = details if isinstance(details, dict) else {}
    return Usage(
        prompt_tokens=_count(data.get("prompt_tokens")),
        completion_tokens=_count(data.get("completion_tokens")),
        cache_read_tokens=_count(details.get("cached_tokens")),
        cache_write_tokens=_count(details.get("cache_write_tokens")),
    )


def error_from_body(data: Dict[str, Any], masker: Masker) -> LlmError:
    """Return the typed error for an ``{"error": ...}`` body or chunk."""
    error = data.get("error")
    detail = error.get("message") if isinstance(error, dict) else error
    message = masker.text(f"OpenAI reported an error: {detail}")
    code = error.get("code") if isinstance(error, dict) else None
    body = masker.json(data)
    if isinstance(code, int) and not isinstance(code, bool) and code >= 400:
        return error_for_status(code, message, body=body)
    if isinstance(error, dict) and error.get("type") == "server_error":
        return ServerError(message, body=body)
    return ProviderError(message, body=body)
