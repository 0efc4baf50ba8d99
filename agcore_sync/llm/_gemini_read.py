"""Reading Gemini ``GenerateContentResponse`` values (pure, no I/O).

What a plain response and a stream share: the stop reason of a
``finishReason`` (or of ``promptFeedback.blockReason``), the
:class:`~agcore_sync.llm.types.Usage` of ``usageMetadata``, the typed error
of an ``{"error": {...}}`` body, the ``retryDelay`` of a 429, and the blocks
one part stands for. A plain ``chat`` reads its response with
:func:`parse_response`; :mod:`agcore_sync.llm._gemini_stream` applies the
same part rule chunk by chunk.

The part rule (what :mod:`agcore_sync.llm._gemini_wire` sends back):

- ``{"text", "thought": true}``: a :class:`ThinkingBlock` with that text,
  its signature the envelope of the part's other keys;
- ``{"text": ""}`` with a ``thoughtSignature``: a ThinkingBlock with no
  text, standing for that part;
- a text or ``functionCall`` part with a ``thoughtSignature``: a
  ThinkingBlock holding the signature, then the TextBlock / ToolUseBlock;
- other parts (inline images, executable code) are skipped.

Only candidate 0 is read (the provider never asks for more).
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional

from agcore_sync import _instrument
from agcore_sync._http.masking import Masker
from agcore_sync.llm._gemini_wire import TOOL_ID_PREFIX, part_signature_envelope, thought_envelope
from agcore_sync.llm._tool_calls import ToolCallIds
from agcore_sync.llm.errors import LlmError, ResponseParseError
from agcore_sync.llm.types import (
    ContentBlock,
    Message,
    MessageResponse,
    Role,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
)

__all__ = [
    "stop_reason",
    "usage_from_wire",
    "error_from_body",
    "retry_delay",
    "blocks_of_part",
    "first_candidate",
    "parse_response",
]

logger = _instrument.get_logger("agcore_sync.llm")

#: finishReason values that mean the answer was blocked (DESIGN.md: content filter).
CONTENT_FILTER_REASONS = frozenset([
    "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
    "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION",
])


def stop_reason(finish_reason: Optional[str], has_tool_calls: bool) -> StopReason:
    """Map a ``finishReason``: STOP (TOOL_USE with calls), MAX_TOKENS -> LENGTH, the safety ones -> CONTENT_FILTER.

    Any other value (``MALFORMED_FUNCTION_CALL``, ``OTHER``, a future one)
    is ERROR; a missing one is STOP or TOOL_USE.
    """
    if finish_reason is None or finish_reason == "STOP":
        return StopReason.TOOL_USE if has_tool_calls else StopReason.STOP
    if finish_reason == "MAX_TOKENS":
        return StopReason.LENGTH
    if finish_reason in CONTENT_FILTER_REASONS:
        return StopReason.CONTENT_FILTER
    return StopReason.ERROR


def _count(raw: Mapping[str, Any], key: str) -> int:
    value = raw.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def usage_from_wire(raw: Mapping[str, Any]) -> Usage:
    """Return the Usage of ``usageMetadata``.

    prompt = promptTokenCount + toolUsePromptTokenCount (the cached tokens
    are part of promptTokenCount); completion = candidatesTokenCount +
    thoughtsTokenCount; cache_read = cachedContentTokenCount.
    """
    return Usage(
        prompt_tokens=_count(raw, "promptTokenCount") + _count(raw, "toolUsePromptTokenCount"),
        completion_tokens=_count(raw, "candidatesTokenCount") + _count(raw, "thoughtsTokenCount"),
        cache_read_tokens=_count(raw, "cachedContentTokenCount"),
    )


def retry_delay(body: Any) -> Optional[float]:
    """Return the seconds of a ``google.rpc.RetryInfo`` ``retryDelay`` (``"31s"``) in an error body, or None."""
    error = body.get("error") if isinstance(body, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    for detail in details if isinstance(details, list) else ():
        delay = detail.get("retryDelay") if isinstance(detail, dict) else None
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                return max(0.0, float(delay[:-1]))
            except ValueError:
                return None
    return None


def error_from_body(data: Mapping[str, Any], provider_name: str, masker: Masker) -> LlmError:
    """Return the typed error of an ``{"error": {"code", "message", "status"}}`` body (sent in a stream)."""
    from agcore_sync.llm._http_provider import error_for_status  # the provider module, loaded already

    error = data.get("error")
    error = error if isinstance(error, dict) else {}
    code = error.get("code")
    status = code if isinstance(code, int) and not isinstance(code, bool) and code >= 400 else 500
    message = f"{provider_name} stream error {error.get('status') or code or 'unknown'}"
    if isinstance(error.get("message"), str):
        message += f": {error['message']}"
    return error_for_status(status, masker.text(message), retry_after=retry_delay(data),
                            body=masker.json(dict(data)))


def _args(value: Any) -> Any:
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    return json.dumps(value)  # not an object: kept as text so the registry refuses it


def blocks_of_part(part: Mapping[str, Any], ids: ToolCallIds) -> List[ContentBlock]:
    """Return the blocks one wire part stands for (see the module docstring)."""
    signature = part.get("thoughtSignature")
    text = part.get("text")
    if isinstance(text, str) and part.get("thought") is True:
        if not text and not signature:
            return []
        return [ThinkingBlock(text, thought_envelope({k: v for k, v in part.items() if k != "text"}))]
    call = part.get("functionCall")
    if isinstance(call, dict):
        block: ContentBlock = ToolUseBlock(ids.take(call.get("id")), str(call.get("name") or ""),
                                           _args(call.get("args")))
    elif isinstance(text, str):
        if not text:
            return [ThinkingBlock("", thought_envelope({"thoughtSignature": signature}))] if signature else []
        block = TextBlock(text)
    else:
        logger.debug("Gemini: skipping a part with the keys %s", sorted(part))
        return []
    if isinstance(signature, str) and signature:
        return [ThinkingBlock("", part_signature_envelope(signature)), block]
    return [block]


def first_candidate(data: Mapping[str, Any]) -> Optional[Mapping[str, Any]]:
    """Return candidate 0 of a response or chunk, or None."""
    candidates = data.get("candidates")
    if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict):
        return candidates[0]
    return None


def parse_response(data: Any, model: str, provider_name: str, masker: Masker) -> MessageResponse:
    """Return the MessageResponse of a plain ``generateContent`` body.

    A prompt blocked by ``promptFeedback.blockReason`` (no candidates) is an
    empty response with the stop reason CONTENT_FILTER.

    Raises:
        ResponseParseError: a body of an unknown shape.
    """
    if not isinstance(data, dict):
        raise ResponseParseError(f"{provider_name} sent a response body that is not a JSON object",
                                 body=masker.json(data))
    try:
        candidate = first_candidate(data)
        ids = ToolCallIds(TOOL_ID_PREFIX)
        blocks: List[ContentBlock] = []
        finish: Optional[str] = None
        if candidate is not None:
            content = candidate.get("content") or {}
            for part in content.get("parts") or ():
                blocks.extend(blocks_of_part(part, ids))
            finish = candidate.get("finishReason")
        message = Message(Role.ASSISTANT, blocks)
        if candidate is None and (data.get("promptFeedback") or {}).get("blockReason"):
            reason = StopReason.CONTENT_FILTER
        else:
            reason = stop_reason(finish, bool(message.tool_uses))
        usage: Dict[str, Any] = data.get("usageMetadata") or {}
        return MessageResponse(str(data.get("responseId") or ""), str(data.get("modelVersion") or model), message,
                               reason, usage_from_wire(usage))
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise ResponseParseError(f"{provider_name} sent a response body of an unknown shape",
                                 body=masker.json(data)) from exc
