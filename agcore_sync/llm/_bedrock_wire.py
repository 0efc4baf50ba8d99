"""Amazon Bedrock Converse wire values: request bodies, responses, usage, errors (pure, no I/O).

:mod:`agcore_sync.llm.bedrock` sends what :func:`request_body` builds and
parses plain answers with :func:`parse_response`; the stream translator
(:mod:`agcore_sync.llm._bedrock_stream`) shares the stop reasons, the usage
and the typed errors. The Converse shapes are those of boto3's
``bedrock-runtime`` client (blobs as base64 text, as its JSON protocol
sends them).

- Messages alternate ``user`` / ``assistant`` (consecutive ones of one role
  are merged); ``tool`` messages are ``user`` messages of ``toolResult``
  blocks, whose ``status`` (``success`` / ``error``) is sent for Anthropic
  Claude and Amazon Nova model ids only (:func:`takes_tool_status`).
- A text block that is empty or whitespace only is left out (Converse
  refuses it as blank); a message left with no block is left out too.
- Reasoning goes back as ``reasoningContent`` only when Bedrock made it
  (origin ``aws-bedrock``, see :mod:`agcore_sync.llm._thinking_origin`):
  ``reasoningText`` with its ``signature``, or ``redactedContent``.
- ``prompt_cache`` places ``cachePoint`` blocks after the tools, after the
  system prompt, and at the end of the last message and of the message two
  before it (the previous round's prompt in a tool loop), as the Anthropic
  provider places its breakpoints.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any, Dict, List, Mapping, Optional, Tuple, Type

from agcore_sync._http.masking import Masker
from agcore_sync.llm._thinking_origin import BEDROCK, make_envelope, origin_of, read_envelope
from agcore_sync.llm._tool_calls import ToolCallIds, wire_tool_id
from agcore_sync.llm.errors import (
    AuthenticationError,
    LlmError,
    ProviderError,
    RateLimitError,
    ResponseParseError,
    ServerError,
)
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
    "TOOL_ID_PREFIX",
    "DEFAULT_MAX_TOKENS",
    "takes_tool_status",
    "request_body",
    "parse_response",
    "stop_reason",
    "usage_from_wire",
    "error_of_type",
    "thinking_block",
]

#: The prefix of tool-call ids made for calls the server sent without one.
TOOL_ID_PREFIX = "tooluse_"

#: ``maxTokens`` sent with a thinking budget when the request has no ``max_tokens``
#: (Claude needs the budget below it), as the Anthropic provider does.
DEFAULT_MAX_TOKENS = 4096

_STOP_REASONS: Mapping[str, StopReason] = {
    "end_turn": StopReason.STOP,
    "stop_sequence": StopReason.STOP,
    "tool_use": StopReason.TOOL_USE,
    "max_tokens": StopReason.LENGTH,
    "model_context_window_exceeded": StopReason.LENGTH,
    "guardrail_intervened": StopReason.CONTENT_FILTER,
    "content_filtered": StopReason.CONTENT_FILTER,
}

# Error type (HTTP x-amzn-errortype / __type, or a stream exception frame's
# :exception-type, first letter lowered) -> (class, the status AWS documents).
_ERROR_TYPES: Mapping[str, Tuple[Type[LlmError], int]] = {
    "throttlingException": (RateLimitError, 429),
    "serviceQuotaExceededException": (RateLimitError, 429),
    "modelNotReadyException": (RateLimitError, 429),
    "internalServerException": (ServerError, 500),
    "serviceUnavailableException": (ServerError, 503),
    "modelStreamErrorException": (ServerError, 424),
    "modelTimeoutException": (ServerError, 408),
    "modelErrorException": (ServerError, 424),
    "validationException": (ProviderError, 400),
    "resourceNotFoundException": (ProviderError, 404),
    "conflictException": (ProviderError, 400),
    "accessDeniedException": (AuthenticationError, 403),
    "unrecognizedClientException": (AuthenticationError, 403),
    "invalidSignatureException": (AuthenticationError, 403),
    "expiredTokenException": (AuthenticationError, 403),
    "incompleteSignatureException": (AuthenticationError, 403),
    "missingAuthenticationTokenException": (AuthenticationError, 403),
}

_IMAGE_FORMATS = {"image/jpeg": "jpeg", "image/jpg": "jpeg", "image/png": "png", "image/gif": "gif",
                  "image/webp": "webp"}

# A document name: letters, digits, single spaces, hyphens, parentheses and square brackets.
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9\-()\[\] ]+")


def takes_tool_status(model_id: str) -> bool:
    """Whether ``toolResult.status`` is sent for ``model_id`` (Anthropic Claude and Amazon Nova ids, ARNs too)."""
    lowered = model_id.lower()
    return "anthropic." in lowered or "claude" in lowered or "nova" in lowered


def stop_reason(value: Optional[str], has_tool_calls: bool) -> StopReason:
    """Map a Converse ``stopReason``; a missing one is TOOL_USE with tool calls, else STOP."""
    if value is None:
        return StopReason.TOOL_USE if has_tool_calls else StopReason.STOP
    return _STOP_REASONS.get(value, StopReason.ERROR)


def _count(raw: Mapping[str, Any], key: str) -> int:
    value = raw.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def usage_from_wire(raw: Mapping[str, Any]) -> Usage:
    """Return the :class:`Usage` of a Converse ``usage`` object.

    Bedrock's ``inputTokens`` leaves out the cached tokens; here they are
    parts of the prompt: prompt = inputTokens + cacheReadInputTokens +
    cacheWriteInputTokens.
    """
    cache_read = _count(raw, "cacheReadInputTokens")
    cache_write = _count(raw, "cacheWriteInputTokens")
    return Usage(
        prompt_tokens=_count(raw, "inputTokens") + cache_read + cache_write,
        completion_tokens=_count(raw, "outputTokens"),
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
    )


def _type_key(error_type: str) -> str:
    # "ValidationException:http://internal.amazon.com/..." or "com.amazon...#ValidationException".
    name = error_type.split(":", 1)[0].rsplit("#", 1)[-1].strip()
    return name[:1].lower() + name[1:]


def error_of_type(error_type: Optional[str], message: str, *, status: Optional[int], masker: Masker,
                  retry_after: Optional[float] = None, body: Any = None) -> LlmError:
    """Return the typed error for an AWS error type (HTTP or a stream exception frame).

    Throttling is :class:`RateLimitError`; internal-server, service-unavailable
    and model-stream errors are :class:`ServerError` (retryable); validation
    and the other client faults :class:`ProviderError`, not retryable; the
    signature and access errors :class:`AuthenticationError`. An unknown
    type is typed by its status.
    """
    key = _type_key(error_type or "")
    known = _ERROR_TYPES.get(key)
    if known is not None:
        cls, documented = known
        code = status if status is not None else documented
        retryable: Optional[bool] = cls in (RateLimitError, ServerError)
    else:
        code = status
        if status is None:
            cls = ProviderError
        elif status in (401, 403):
            cls = AuthenticationError
        elif status == 429:
            cls = RateLimitError
        elif status >= 500:
            cls = ServerError
        else:
            cls = ProviderError
        retryable = None
    return cls(masker.text(message), status_code=code, retryable=retryable, retry_after=retry_after,
               body=masker.json(body))


# -- requests ---------------------------------------------------------------


def _image_to_wire(block: ContentBlock) -> Dict[str, Any]:
    data = block.data
    media_type = (block.media_type or "").lower()
    url = block.url or ""
    if data is None and url.lower().startswith("data:"):
        header, _, data = url[5:].partition(",")
        media_type = header.split(";")[0].lower()
    if data is None:
        if url.startswith("s3://"):
            fmt = _IMAGE_FORMATS.get(media_type) or url.rsplit(".", 1)[-1].lower().replace("jpg", "jpeg")
            return {"image": {"format": fmt, "source": {"s3Location": {"uri": url}}}}
        raise ValueError("Bedrock takes images as bytes or s3:// locations, not by URL: build the ImageBlock "
                         "with from_path() or from_bytes()")
    fmt = _IMAGE_FORMATS.get(media_type)
    if fmt is None:
        raise ValueError(f"Bedrock takes JPEG, PNG, GIF and WebP images, not {media_type or 'an unknown type'}")
    return {"image": {"format": fmt, "source": {"bytes": data}}}


def _document_name(block: ContentBlock, used: Dict[str, int]) -> str:
    name = " ".join(_NAME_UNSAFE.sub(" ", block.title or "").split()) or "document"
    seen = used.get(name, 0) + 1
    used[name] = seen
    return name if seen == 1 else f"{name} ({seen})"


def _document_to_wire(block: ContentBlock, used: Dict[str, int]) -> Dict[str, Any]:
    name = _document_name(block, used)
    if block.text is not None:
        return {"document": {"format": "txt", "name": name,
                             "source": {"bytes": base64.b64encode(block.text.encode("utf-8")).decode("ascii")}}}
    url = block.url or ""
    data = block.data
    if data is None and url.lower().startswith("data:"):
        data = url.partition(",")[2]
    if data is not None:
        return {"document": {"format": "pdf", "name": name, "source": {"bytes": data}}}
    if url.startswith("s3://"):
        return {"document": {"format": "pdf", "name": name, "source": {"s3Location": {"uri": url}}}}
    raise ValueError("Bedrock takes documents as bytes or s3:// locations, not by URL: build the DocumentBlock "
                     "with from_path() or from_bytes()")


def _tool_result_to_wire(block: ToolResultBlock, with_status: bool, used: Dict[str, int]) -> Dict[str, Any]:
    if isinstance(block.content, str):
        content: List[Dict[str, Any]] = [{"text": block.content}]
    else:
        content = [{"text": b.text} if isinstance(b, TextBlock) else _image_to_wire(b) for b in block.content]
    result: Dict[str, Any] = {"toolUseId": wire_tool_id(block.tool_use_id), "content": content}
    if with_status:
        result["status"] = "error" if block.is_error else "success"
    return {"toolResult": result}


def _thinking_to_wire(block: ThinkingBlock) -> Optional[Dict[str, Any]]:
    if origin_of(block) != BEDROCK:
        # Unsigned reasoning, or another provider's blob: Bedrock would refuse it.
        return None
    envelope = read_envelope(block.signature) or {}
    item = envelope.get("item") or {}
    if "redactedContent" in item:
        return {"reasoningContent": {"redactedContent": item["redactedContent"]}}
    return {"reasoningContent": {"reasoningText": {"text": block.text, "signature": item.get("signature")}}}


def _block_to_wire(block: ContentBlock, with_status: bool, used: Dict[str, int]) -> Optional[Dict[str, Any]]:
    if isinstance(block, TextBlock):
        # Converse refuses a blank text block, whitespace-only too ("\n\n" before a tool call,
        # as some OpenAI-compatible servers send it): such a block is left out.
        return {"text": block.text} if block.text.strip() else None
    if isinstance(block, ToolUseBlock):
        tool_input = block.input if isinstance(block.input, dict) else {}
        return {"toolUse": {"toolUseId": wire_tool_id(block.id), "name": block.name, "input": tool_input}}
    if isinstance(block, ToolResultBlock):
        return _tool_result_to_wire(block, with_status, used)
    if isinstance(block, ThinkingBlock):
        return _thinking_to_wire(block)
    if block.type == "image":
        return _image_to_wire(block)
    if block.type == "document":
        return _document_to_wire(block, used)
    raise TypeError(f"Bedrock: cannot send a content block of type {type(block).__name__}")


def messages_to_wire(messages: Tuple[Message, ...], model_id: str) -> Tuple[List[str], List[Dict[str, Any]]]:
    """Return the text of system messages and the alternating Converse messages."""
    with_status = takes_tool_status(model_id)
    system: List[str] = []
    wire: List[Dict[str, Any]] = []
    used: Dict[str, int] = {}
    for message in messages:
        if message.role is Role.SYSTEM:
            if message.text:
                system.append(message.text)
            continue
        role = "assistant" if message.role is Role.ASSISTANT else "user"
        blocks = [b for b in (_block_to_wire(block, with_status, used) for block in message.content)
                  if b is not None]
        if not blocks:
            continue
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})
    return system, wire


def _tool_choice_to_wire(choice: Any) -> Optional[Dict[str, Any]]:
    if isinstance(choice, ToolChoice):
        return {"tool": {"name": choice.name}}
    if choice == "required":
        return {"any": {}}
    if choice == "auto":
        return {"auto": {}}
    return None  # "none": Converse has no such choice


#: A cache point: the default (five-minute) cache.
CACHE_POINT = {"cachePoint": {"type": "default"}}


def _place_cache_points(body: Dict[str, Any]) -> None:
    tool_config = body.get("toolConfig")
    if tool_config and tool_config.get("tools"):
        tool_config["tools"].append(dict(CACHE_POINT))
    if body.get("system"):
        body["system"].append(dict(CACHE_POINT))
    messages = body.get("messages") or []
    for index in (len(messages) - 1, len(messages) - 3):
        if index >= 0:
            messages[index]["content"].append(dict(CACHE_POINT))


def _is_claude(model_id: str) -> bool:
    lowered = model_id.lower()
    return "anthropic." in lowered or "claude" in lowered


def _model_fields(request: MessageRequest, model_id: str) -> Dict[str, Any]:
    fields: Dict[str, Any] = {}
    if request.thinking is not None and _is_claude(model_id):
        fields["thinking"] = ({"type": "adaptive"} if request.thinking == "adaptive"
                              else {"type": "enabled", "budget_tokens": int(request.thinking)})
    if request.reasoning_effort is not None:
        if _is_claude(model_id):
            fields["output_config"] = {"effort": request.reasoning_effort}
        elif "nova" in model_id.lower():
            fields["reasoningConfig"] = {"type": "enabled", "maxReasoningEffort": request.reasoning_effort}
        else:
            fields["reasoning_effort"] = request.reasoning_effort
    return fields


def request_body(request: MessageRequest, model_id: str) -> Dict[str, Any]:
    """Return the Converse body for ``request`` (the model id goes in the URL, not here).

    Raises:
        ValueError: an image or document given by an http(s) URL (Bedrock
            takes bytes or ``s3://`` locations), or an image type it does not take.
    """
    system, messages = messages_to_wire(request.messages, model_id)
    if request.system:
        system.insert(0, request.system)
    body: Dict[str, Any] = {"messages": messages}
    if system:
        body["system"] = [{"text": "\n\n".join(system)}]
    inference: Dict[str, Any] = {}
    max_tokens = request.max_tokens
    if max_tokens is None and isinstance(request.thinking, int) and _is_claude(model_id):
        max_tokens = DEFAULT_MAX_TOKENS + request.thinking
    if max_tokens is not None:
        inference["maxTokens"] = max_tokens
    if request.temperature is not None:
        inference["temperature"] = request.temperature
    if request.stop:
        inference["stopSequences"] = list(request.stop)
    if inference:
        body["inferenceConfig"] = inference
    history_has_tools = any(isinstance(b, (ToolUseBlock, ToolResultBlock)) for m in request.messages
                            for b in m.content)
    if request.tools and (request.tool_choice != "none" or history_has_tools):
        tools = []
        for tool in request.tools:
            spec: Dict[str, Any] = {"name": tool.name}
            if tool.description:
                spec["description"] = tool.description
            spec["inputSchema"] = {"json": tool.parameters}
            tools.append({"toolSpec": spec})
        tool_config: Dict[str, Any] = {"tools": tools}
        choice = _tool_choice_to_wire(request.tool_choice)
        if choice is not None:
            tool_config["toolChoice"] = choice
        body["toolConfig"] = tool_config
    fields = _model_fields(request, model_id)
    if fields:
        body["additionalModelRequestFields"] = fields
    if request.output is not None:
        body["outputConfig"] = {"textFormat": {"type": "json_schema", "structure": {"jsonSchema": {
            "schema": json.dumps(request.output.json_schema), "name": request.output.name}}}}
    if request.prompt_cache:
        _place_cache_points(body)
    if request.extra_body:
        body.update(request.extra_body)
    return body


# -- responses --------------------------------------------------------------


def thinking_block(text: str, signature: Optional[str], redacted: Optional[str]) -> ThinkingBlock:
    """Return the :class:`ThinkingBlock` of Bedrock reasoning, its signature kept with origin ``aws-bedrock``."""
    if redacted is not None:
        return ThinkingBlock("", make_envelope(BEDROCK, {"redactedContent": redacted}, None), redacted)
    if signature is None:
        return ThinkingBlock(text)
    return ThinkingBlock(text, make_envelope(BEDROCK, {"signature": signature}, None))


def _tool_input(value: Any) -> Any:
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    return json.dumps(value)  # kept as text so the registry refuses it


def _block_from_wire(block: Mapping[str, Any], ids: ToolCallIds) -> Optional[ContentBlock]:
    if "text" in block:
        return TextBlock(block["text"])
    if "toolUse" in block:
        use = block["toolUse"]
        return ToolUseBlock(ids.take(use.get("toolUseId")), use["name"], _tool_input(use.get("input")))
    if "reasoningContent" in block:
        reasoning = block["reasoningContent"]
        if "redactedContent" in reasoning:
            return thinking_block("", None, reasoning["redactedContent"])
        text = reasoning["reasoningText"]
        return thinking_block(text.get("text") or "", text.get("signature"), None)
    return None  # citations, guard content and future types have no provider-neutral form


def parse_response(data: Any, *, request_id: str, model: str, masker: Masker) -> MessageResponse:
    """Return the response of a Converse answer body.

    Raises:
        ResponseParseError: a body of another shape.
    """
    try:
        ids = ToolCallIds(TOOL_ID_PREFIX)
        content = data["output"]["message"]["content"]
        blocks = [b for b in (_block_from_wire(block, ids) for block in content) if b is not None]
        message = Message(Role.ASSISTANT, blocks)
        return MessageResponse(request_id, model, message, stop_reason(data.get("stopReason"), bool(message.tool_uses)),
                               usage_from_wire(data.get("usage") or {}))
    except (KeyError, TypeError, AttributeError) as exc:
        raise ResponseParseError("Bedrock sent a response body of an unknown shape",
                                 body=masker.json(data)) from exc
