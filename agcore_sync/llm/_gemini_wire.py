"""Gemini ``generateContent`` request bodies, built from the neutral values (pure, no I/O).

The Gemini API and Vertex AI take the same body (DESIGN.md, "Native
providers"); :mod:`agcore_sync.llm.gemini` posts it, the reading side is in
:mod:`agcore_sync.llm._gemini_read` (plain responses) and
:mod:`agcore_sync.llm._gemini_stream` (streams).

Messages become ``contents``: user and tool messages the role ``user``,
assistant messages ``model``; consecutive messages of one role are merged
into one content (the results of parallel calls travel together, as the API
asks). System text is ``systemInstruction``. Parts:

- text: ``{"text": ...}`` (an empty text part is left out);
- images and PDFs: ``inlineData`` ``{mimeType, data}`` (base64), or
  ``fileData`` ``{mimeType, fileUri}`` for a URL; a text document is a text
  part, its title first;
- a tool call: ``functionCall`` ``{id, name, args}``, the id left out when
  this library made it up (the model gave none);
- a tool result: ``functionResponse`` ``{id, name, response}``, ``response``
  ``{"output": text}`` or ``{"error": text}`` (the keys google-genai
  documents); the name is the call's, found earlier in the history; images
  of a result follow it as ``inlineData`` parts;
- Gemini's reasoning: a :class:`~agcore_sync.llm.types.ThinkingBlock` whose
  signature is a ``gemini`` envelope (:mod:`agcore_sync.llm._thinking_origin`)
  goes back as the wire shows it, byte for byte: a thought part (its text,
  ``thought: true`` and any ``thoughtSignature``), or the ``thoughtSignature``
  of the part made from the next block (:func:`part_signature_envelope`).
  Other providers' reasoning is dropped, and calls Gemini did not make go
  without a signature (no placeholder).

The generation settings are ``generationConfig`` (``maxOutputTokens``,
``temperature``, ``stopSequences``, ``thinkingConfig`` only when
``thinking`` or ``reasoning_effort`` is set, ``responseMimeType:
application/json`` with ``responseJsonSchema`` for a native structured
output); ``tool_choice`` other than ``"auto"`` is ``toolConfig``;
``extra_body`` is merged last, its keys replacing the body's.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Tuple

from agcore_sync.llm._thinking_origin import GEMINI, make_envelope, read_envelope
from agcore_sync.llm.types import (
    ContentBlock,
    Message,
    MessageRequest,
    Role,
    TextBlock,
    ThinkingBlock,
    ToolChoice,
    ToolResultBlock,
    ToolUseBlock,
)

__all__ = [
    "TOOL_ID_PREFIX",
    "DYNAMIC_THINKING_BUDGET",
    "request_body",
    "thought_envelope",
    "part_signature_envelope",
    "gemini_item",
]

#: The prefix of the ids this library gives calls the model sent without one;
#: such ids are never sent back (the model did not make them).
TOOL_ID_PREFIX = "gcall_"

#: ``thinkingBudget`` for ``thinking="adaptive"``: the model decides (the API's -1).
DYNAMIC_THINKING_BUDGET = -1

_PART_KEY = "part"  # envelope item key: a part of its own (a thought, or an empty text part with a signature)
_NEXT_KEY = "thoughtSignature"  # envelope item key: the signature of the part made from the next block


def thought_envelope(part_keys: Dict[str, Any]) -> str:
    """Return the signature of a ThinkingBlock standing for a whole part (its text kept as the block's text).

    Args:
        part_keys: the part's keys other than ``text`` (``thought``,
            ``thoughtSignature``), as the server sent them.
    """
    return make_envelope(GEMINI, {_PART_KEY: part_keys}, None)


def part_signature_envelope(signature: str) -> str:
    """Return the signature of a ThinkingBlock that carries the ``thoughtSignature`` of the next block's part."""
    return make_envelope(GEMINI, {_NEXT_KEY: signature}, None)


def gemini_item(block: ThinkingBlock) -> Optional[Dict[str, Any]]:
    """Return the envelope item of a Gemini thinking block, or None for any other block."""
    envelope = read_envelope(block.signature)
    if envelope is None or envelope.get("agcore_origin") != GEMINI:
        return None
    return envelope["item"]


# -- parts ---------------------------------------------------------------------


def _media_part(block: ContentBlock) -> Dict[str, Any]:
    if block.type == "document" and block.text is not None:
        return {"text": f"{block.title}\n\n{block.text}" if block.title else block.text}
    media_type = block.media_type or ("application/pdf" if block.type == "document" else None)
    if block.data is not None:
        return {"inlineData": {"mimeType": media_type, "data": block.data}}
    url = block.url or ""
    if url.lower().startswith("data:"):
        header, _, payload = url[5:].partition(",")
        return {"inlineData": {"mimeType": header.split(";")[0].lower() or media_type, "data": payload}}
    part: Dict[str, Any] = {"fileUri": url}
    if media_type:
        part = {"mimeType": media_type, "fileUri": url}
    return {"fileData": part}


def _call_id(tool_id: str) -> Optional[str]:
    """Return the id to send with a call or its result: None for ids this library made up."""
    return None if not tool_id or tool_id.startswith(TOOL_ID_PREFIX) else tool_id


def _function_call(block: ToolUseBlock) -> Dict[str, Any]:
    args = block.input
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            args = {}
    call: Dict[str, Any] = {"name": block.name, "args": args if isinstance(args, dict) else {}}
    call_id = _call_id(block.id)
    if call_id is not None:
        call["id"] = call_id
    return {"functionCall": call}


def _function_response(block: ToolResultBlock, names: Dict[str, str]) -> List[Dict[str, Any]]:
    images: List[Dict[str, Any]] = []
    if isinstance(block.content, str):
        text = block.content
    else:
        text = "".join(b.text for b in block.content if isinstance(b, TextBlock))
        images = [_media_part(b) for b in block.content if b.type in ("image", "document")]
    response: Dict[str, Any] = {"name": names.get(block.tool_use_id, block.tool_use_id),
                                "response": {"error" if block.is_error else "output": text}}
    call_id = _call_id(block.tool_use_id)
    if call_id is not None:
        response["id"] = call_id
    return [{"functionResponse": response}, *images]


def _parts(message: Message, names: Dict[str, str]) -> List[Dict[str, Any]]:
    parts: List[Dict[str, Any]] = []
    signature: Optional[str] = None  # a thoughtSignature waiting for the next part
    for block in message.content:
        part: Optional[Dict[str, Any]] = None
        extra: List[Dict[str, Any]] = []
        if isinstance(block, ThinkingBlock):
            item = gemini_item(block)
            if item is None:
                continue  # unsigned reasoning or another provider's: Gemini cannot read it
            if _PART_KEY in item:
                part = {"text": block.text, **item[_PART_KEY]}
            elif isinstance(item.get(_NEXT_KEY), str):
                signature = item[_NEXT_KEY]
                continue
        elif isinstance(block, TextBlock):
            if block.text:
                part = {"text": block.text}
        elif isinstance(block, ToolUseBlock):
            names[block.id] = block.name
            part = _function_call(block)
        elif isinstance(block, ToolResultBlock):
            part, *extra = _function_response(block, names)
        elif block.type in ("image", "document"):
            part = _media_part(block)
        else:
            raise TypeError(f"Gemini: cannot send a content block of type {type(block).__name__}")
        if part is None:
            continue
        if signature is not None:
            part["thoughtSignature"] = signature
            signature = None
        parts.append(part)
        parts.extend(extra)
    return parts


def contents(messages: Tuple[Message, ...]) -> Tuple[List[str], List[Dict[str, Any]]]:
    """Return the text of the system messages and the ``contents`` of the others."""
    system: List[str] = []
    wire: List[Dict[str, Any]] = []
    names: Dict[str, str] = {}  # call id -> function name, for functionResponse
    for message in messages:
        if message.role is Role.SYSTEM:
            if message.text:
                system.append(message.text)
            continue
        role = "model" if message.role is Role.ASSISTANT else "user"
        parts = _parts(message, names)
        if not parts:
            continue
        if wire and wire[-1]["role"] == role:
            wire[-1]["parts"].extend(parts)
        else:
            wire.append({"role": role, "parts": parts})
    return system, wire


# -- the body ------------------------------------------------------------------


def _tool_config(choice: Any) -> Optional[Dict[str, Any]]:
    if isinstance(choice, ToolChoice):
        return {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [choice.name]}}
    if choice == "required":
        return {"functionCallingConfig": {"mode": "ANY"}}
    if choice == "none":
        return {"functionCallingConfig": {"mode": "NONE"}}
    return None  # "auto" is the API's default


def _thinking_config(request: MessageRequest) -> Optional[Dict[str, Any]]:
    if request.thinking is None and request.reasoning_effort is None:
        return None
    config: Dict[str, Any] = {"includeThoughts": True}
    if request.thinking is not None:
        budget = DYNAMIC_THINKING_BUDGET if request.thinking == "adaptive" else int(request.thinking)
        config["thinkingBudget"] = budget
    if request.reasoning_effort is not None:
        config["thinkingLevel"] = str(request.reasoning_effort).upper()
    return config


def request_body(request: MessageRequest) -> Dict[str, Any]:
    """Return the ``generateContent`` body of ``request`` (the model is in the URL, not the body)."""
    system, wire = contents(request.messages)
    if request.system:
        system.insert(0, request.system)
    body: Dict[str, Any] = {"contents": wire}
    if system:
        body["systemInstruction"] = {"role": "user", "parts": [{"text": "\n\n".join(system)}]}
    if request.tools:
        body["tools"] = [{"functionDeclarations": [
            {"name": t.name, "description": t.description, "parametersJsonSchema": t.parameters}
            for t in request.tools]}]
        tool_config = _tool_config(request.tool_choice)
        if tool_config is not None:
            body["toolConfig"] = tool_config
    config: Dict[str, Any] = {}
    if request.max_tokens is not None:
        config["maxOutputTokens"] = request.max_tokens
    if request.temperature is not None:
        config["temperature"] = request.temperature
    if request.stop:
        config["stopSequences"] = list(request.stop)
    if request.output is not None:
        config["responseMimeType"] = "application/json"
        config["responseJsonSchema"] = request.output.json_schema
    thinking = _thinking_config(request)
    if thinking is not None:
        config["thinkingConfig"] = thinking
    if config:
        body["generationConfig"] = config
    if request.extra_body:
        body.update(request.extra_body)
    return body
