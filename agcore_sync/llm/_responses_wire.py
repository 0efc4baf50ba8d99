"""The Responses API wire format: request bodies, plain responses, usage, errors (pure).

For :mod:`agcore_sync.llm.responses` (which sends) and
:mod:`agcore_sync.llm._responses_stream` (which reads streams). Nothing here
does I/O.

Request translation:

- ``MessageRequest.system`` is ``instructions``; a ``system`` role message
  stays in ``input`` as ``{"role": "system"}``.
- A user message is ``{"role": "user", "content": ...}``: its text, or a
  list of ``input_text`` / ``input_image`` / ``input_file`` parts when it
  holds images or documents.
- An assistant message becomes, in block order: a ``reasoning`` item for
  each of this provider's own reasoning blocks (the item as the server sent
  it, see :mod:`agcore_sync.llm._thinking_origin`), a ``message`` item for
  its text, a ``function_call`` item per tool call. Another provider's
  thinking is dropped. A reasoning item goes back only when it can be read
  statelessly (it has ``encrypted_content``) or the provider stores
  responses (``store=True``); the item that followed it then carries its
  server id again, as the API pairs the two by id.
- A tool result is a ``function_call_output`` item (its content as text, or
  as a list of input parts); the wire has no error flag, so an ``is_error``
  result is sent as its content, whose text names the tool and the failure.
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Mapping, Optional, Tuple, Type

from agcore_sync import _instrument
from agcore_sync._http.masking import Masker
from agcore_sync.llm._media_wire import responses_part, responses_tool_output
from agcore_sync.llm._thinking_origin import OPENAI_RESPONSES, make_envelope, origin_of, read_envelope
from agcore_sync.llm._tool_calls import ToolCallIds, arguments_text, parse_tool_arguments
from agcore_sync.llm.errors import (
    AuthenticationError,
    LlmError,
    ProviderError,
    RateLimitError,
    ResponseParseError,
    ServerError,
)
from agcore_sync.llm.output import OutputSchema, responses_text_format
from agcore_sync.llm.types import (
    ContentBlock,
    Message,
    MessageRequest,
    MessageResponse,
    Role,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolChoice,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)

__all__ = [
    "ENCRYPTED_REASONING",
    "is_reasoning_model",
    "request_body",
    "input_items",
    "usage_from_wire",
    "stop_reason",
    "error_from_payload",
    "reasoning_block",
    "parse_response",
]

logger = _instrument.get_logger("agcore_sync.llm")

#: The ``include`` value that asks for reasoning items a stateless request can send back.
ENCRYPTED_REASONING = "reasoning.encrypted_content"

# Reasoning models by name: o1, o3, o4-mini..., the gpt-5 family (not the
# gpt-5-chat models, which do not reason), codex-mini. A vendor prefix such as
# "openai/" (OpenRouter, LiteLLM) is ignored.
_REASONING_MODEL = re.compile(r"^(?:[\w.-]+/)?(?:o\d|gpt-5(?!(?:\.\d+)?-chat)|codex-mini)", re.IGNORECASE)

# Output items that become blocks (a reasoning item pairs with the next of these).
_KEPT_ITEMS = ("message", "function_call")

# The text of summary / reasoning-text parts is joined with a blank line.
PART_SEPARATOR = "\n\n"

# error code -> (error class, the HTTP status that code stands for).
_ERROR_CODES: Mapping[str, Tuple[Type[LlmError], Optional[int]]] = {
    "server_error": (ServerError, 500),
    "rate_limit_exceeded": (RateLimitError, 429),
    "insufficient_quota": (RateLimitError, 429),
    "invalid_prompt": (ProviderError, 400),
    "invalid_request_error": (ProviderError, 400),
    "invalid_api_key": (AuthenticationError, 401),
}


def is_reasoning_model(model: str) -> bool:
    """Return True if ``model`` names a reasoning model (o-series, gpt-5, codex-mini)."""
    return bool(_REASONING_MODEL.match(model or ""))


# -- request ------------------------------------------------------------------


def request_body(
    request: MessageRequest,
    model: str,
    *,
    stream: bool,
    store: bool,
    include_encrypted: bool,
    reasoning_summary: Optional[str],
) -> Dict[str, Any]:
    """Return the JSON body of ``POST /responses`` for ``request``."""
    body: Dict[str, Any] = {"model": model}
    if request.system is not None:
        body["instructions"] = request.system
    body["input"] = input_items(request.messages, store=store)
    if request.tools:
        body["tools"] = [_tool(t) for t in request.tools]
        body["tool_choice"] = _tool_choice(request.tool_choice)
        body["parallel_tool_calls"] = True
    if request.max_tokens is not None:
        body["max_output_tokens"] = request.max_tokens
    if request.temperature is not None:
        body["temperature"] = request.temperature
    # The API has no stop sequences; MessageRequest.stop is not sent.
    reasoning: Dict[str, Any] = {}
    effort = getattr(request, "reasoning_effort", None)
    if effort is not None:
        reasoning["effort"] = effort
    if reasoning_summary is not None:
        reasoning["summary"] = reasoning_summary
    if reasoning:
        body["reasoning"] = reasoning
    text_format = _text_format(request)
    if text_format is not None:
        body["text"] = {"format": text_format}
    if include_encrypted:
        body["include"] = [ENCRYPTED_REASONING]
    body["store"] = store
    if stream:
        body["stream"] = True
    extra = getattr(request, "extra_body", None)
    if extra:
        body.update(extra)
    return body


def _text_format(request: MessageRequest) -> Optional[Dict[str, Any]]:
    # Structured output travels on the request as an OutputSchema (issue 9);
    # only the native mode sends a format, the others change tools or prompt.
    output = getattr(request, "output", None)
    if output is None or getattr(request, "output_mode", "native") != "native":
        return None
    return responses_text_format(OutputSchema.of(output))


def _tool(tool: Any) -> Dict[str, Any]:
    # Tool schemas are not strict-mode schemas (optional properties, no
    # additionalProperties: false), so strict is off unless the tool asks.
    return {"type": "function", "name": tool.name, "description": tool.description,
            "parameters": tool.parameters, "strict": getattr(tool, "strict", False) is True}


def _tool_choice(choice: Any) -> Any:
    if isinstance(choice, ToolChoice):
        return {"type": "function", "name": choice.name}
    return choice


def input_items(messages: Tuple[Message, ...], *, store: bool) -> List[Dict[str, Any]]:
    """Translate the conversation into ``input`` items (see the module docstring)."""
    items: List[Dict[str, Any]] = []
    for message in messages:
        if message.role is Role.ASSISTANT:
            items.extend(_assistant_items(message, store=store))
            continue
        results = [{"type": "function_call_output", "call_id": b.tool_use_id,
                    "output": responses_tool_output(b.content)}
                   for b in message.content if isinstance(b, ToolResultBlock)]
        items.extend(results)
        parts = [b for b in message.content if not isinstance(b, (ToolResultBlock, ThinkingBlock, ToolUseBlock))]
        if message.role is Role.TOOL and not parts:
            continue
        role = "system" if message.role is Role.SYSTEM else "user"
        if all(isinstance(b, TextBlock) for b in parts):
            text = "".join(b.text for b in parts if isinstance(b, TextBlock))
            if text or not results or role == "system":
                items.append({"role": role, "content": text})
        else:
            items.append({"role": role, "content": [responses_part(b) for b in parts]})
    return items


def _assistant_items(message: Message, *, store: bool) -> List[Dict[str, Any]]:
    items: List[Dict[str, Any]] = []
    text: List[str] = []
    text_id: Optional[str] = None
    pending_id: Optional[str] = None  # the server id of the item after a reasoning item sent

    def flush_text() -> None:
        nonlocal text_id
        if not text:
            return
        joined = "".join(text)
        text.clear()
        if text_id is None:
            items.append({"role": "assistant", "content": joined})
        else:
            items.append({"type": "message", "role": "assistant", "id": text_id, "status": "completed",
                          "content": [{"type": "output_text", "text": joined, "annotations": []}]})
        text_id = None

    for block in message.content:
        if isinstance(block, TextBlock):
            if not text and pending_id is not None:
                text_id, pending_id = pending_id, None
            text.append(block.text)
            continue
        flush_text()
        if isinstance(block, ThinkingBlock):
            item = _own_reasoning_item(block, store=store)
            pending_id = None
            if item is not None:
                items.append(item[0])
                pending_id = item[1]
        elif isinstance(block, ToolUseBlock):
            arguments = block.input if isinstance(block.input, str) else json.dumps(block.input)
            call: Dict[str, Any] = {"type": "function_call", "call_id": block.id, "name": block.name,
                                    "arguments": arguments}
            if pending_id is not None:
                call["id"], pending_id = pending_id, None
            items.append(call)
    flush_text()
    return items


def _own_reasoning_item(block: ThinkingBlock, *, store: bool) -> Optional[Tuple[Dict[str, Any], Optional[str]]]:
    if origin_of(block) != OPENAI_RESPONSES:
        return None  # another provider's reasoning (or plain text): nothing this API can read
    envelope = read_envelope(block.signature)
    assert envelope is not None  # origin_of said so
    item = envelope["item"]
    if not (item.get("encrypted_content") or store):
        # Without encrypted content the server would look the id up, and a
        # response made with store=false was never kept: it answers 404.
        return None
    next_id = envelope.get("next_item_id")
    return item, next_id if isinstance(next_id, str) else None


# -- response -----------------------------------------------------------------


def _count(raw: Mapping[str, Any], key: str) -> int:
    value = raw.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def usage_from_wire(raw: Any) -> Usage:
    """Return the :class:`Usage` of a wire ``usage`` object (zeros when absent).

    ``input_tokens`` counts cached tokens too; ``output_tokens`` counts the
    reasoning tokens (``output_tokens_details.reasoning_tokens``) too, so
    both are in ``completion_tokens``.
    """
    if not isinstance(raw, dict):
        return Usage()
    details = raw.get("input_tokens_details")
    details = details if isinstance(details, dict) else {}
    return Usage(
        prompt_tokens=_count(raw, "input_tokens"),
        completion_tokens=_count(raw, "output_tokens"),
        cache_read_tokens=_count(details, "cached_tokens"),
        cache_write_tokens=_count(details, "cache_write_tokens"),
    )


def stop_reason(response: Mapping[str, Any], *, has_tool_calls: bool, refused: bool) -> StopReason:
    """Map a response's ``status`` (and ``incomplete_details.reason``) to a :class:`StopReason`."""
    status = response.get("status")
    if status == "incomplete":
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        if reason == "max_output_tokens":
            return StopReason.LENGTH
        if reason == "content_filter":
            return StopReason.CONTENT_FILTER
        return StopReason.ERROR
    if status not in (None, "completed"):
        return StopReason.ERROR
    if refused:
        return StopReason.CONTENT_FILTER
    return StopReason.TOOL_USE if has_tool_calls else StopReason.STOP


def error_from_payload(error: Any, masker: Masker, *, where: str) -> LlmError:
    """Return the typed error for an ``error`` object (``response.failed``, an ``error`` event).

    ``where`` says what carried it ("stream", "response").
    """
    error = error if isinstance(error, dict) else {"message": str(error)}
    code = error.get("code")
    cls, status = _ERROR_CODES.get(code if isinstance(code, str) else "", (ProviderError, None))
    message = masker.text(f"OpenAI Responses reported an error in the {where}: "
                          f"{error.get('message') or 'no message'}" + (f" ({code})" if code else ""))
    return cls(message, status_code=status, body=masker.json(error))


def _part_texts(item: Mapping[str, Any]) -> List[str]:
    texts: List[str] = []
    for key in ("summary", "content"):
        for part in item.get(key) or ():
            if isinstance(part, dict) and isinstance(part.get("text"), str) and part["text"]:
                texts.append(part["text"])
    return texts


def reasoning_block(item: Dict[str, Any], next_item_id: Optional[str]) -> ThinkingBlock:
    """Return the :class:`ThinkingBlock` of a reasoning item: summary text, the item in the signature."""
    return ThinkingBlock(PART_SEPARATOR.join(_part_texts(item)),
                         make_envelope(OPENAI_RESPONSES, item, next_item_id))


def _message_text(item: Mapping[str, Any]) -> Tuple[str, bool]:
    """Return a message item's text (output text and refusals) and whether it refused."""
    pieces: List[str] = []
    refused = False
    for part in item.get("content") or ():
        if not isinstance(part, dict):
            continue
        if part.get("type") == "refusal" and isinstance(part.get("refusal"), str):
            pieces.append(part["refusal"])
            refused = True
        elif isinstance(part.get("text"), str):
            pieces.append(part["text"])
    return "".join(pieces), refused


def parse_response(data: Any, model: str, masker: Masker) -> MessageResponse:
    """Translate a plain (not streamed) response body.

    Raises:
        LlmError: the response failed (typed by its ``error.code``), or the
            body is not a response (:class:`ResponseParseError`).
    """
    if not isinstance(data, dict) or not isinstance(data.get("output"), list):
        if isinstance(data, dict) and data.get("error"):
            raise error_from_payload(data["error"], masker, where="response")
        raise ResponseParseError("OpenAI Responses sent a body that is not a response", body=masker.json(data))
    if data.get("status") == "failed":
        raise error_from_payload(data.get("error"), masker, where="response")
    blocks: List[ContentBlock] = []
    ids = ToolCallIds("call_")
    refused = False
    output = [item for item in data["output"] if isinstance(item, dict)]
    for position, item in enumerate(output):
        kind = item.get("type")
        if kind == "reasoning":
            after = output[position + 1] if position + 1 < len(output) else {}
            following = after.get("id") if after.get("type") in _KEPT_ITEMS else None
            blocks.append(reasoning_block(item, following if isinstance(following, str) else None))
        elif kind == "message":
            text, refusal = _message_text(item)
            refused = refused or refusal
            blocks.append(TextBlock(text))
        elif kind == "function_call":
            arguments = item.get("arguments")
            arguments = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
            blocks.append(ToolUseBlock(ids.take(item.get("call_id")), str(item.get("name") or ""),
                                       parse_tool_arguments(arguments_text(arguments))))
        else:
            # Built-in tool calls (web search, file search...) have no
            # provider-neutral form; they are left out of the message.
            logger.debug("OpenAI Responses: skipping an output item of type %r", kind)
    message = Message(Role.ASSISTANT, blocks)
    stop = stop_reason(data, has_tool_calls=bool(message.tool_uses), refused=refused)
    return MessageResponse(str(data.get("id") or ""), str(data.get("model") or model), message, stop,
                           usage_from_wire(data.get("usage")))
