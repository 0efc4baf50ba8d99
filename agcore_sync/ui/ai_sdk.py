"""The Vercel AI SDK UI message stream (protocol v1), both ways.

:func:`to_ai_sdk` turns one turn's events into the stream ``useChat``
reads (the ``ai`` package 6 and 7); :func:`from_ai_sdk` reads back the
``UIMessage`` list it posts, and :func:`ai_sdk_decisions` the tool approvals
in it. A Flask view is three lines::

    messages = from_ai_sdk(request.json["messages"])
    events = session.submit_turn_stream(messages[-1])
    return Response(to_ai_sdk(events), headers=AI_SDK_HEADERS)

What is sent (one ``data:`` frame each): ``start``; per provider round a
``start-step``, its text / reasoning / tool-input parts, the tool outputs of
that round and a ``finish-step``; a ``tool-approval-request`` for each call
of a paused turn; ``message-metadata`` with usage and cost as they become
known; a ``data-output`` part with a structured-output value; ``error`` if
the turn failed; then ``finish`` and ``[DONE]``. Reasoning signatures never
reach the browser.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from agcore_sync.hooks import Approve, Decision, Deny
from agcore_sync.llm.types import Message
from agcore_sync.ui._frames import FrameStream
from agcore_sync.ui._messages import MessageBuilder, UiRequestError, json_data, json_text, nested_call, output_text

__all__ = ["AI_SDK_HEADERS", "to_ai_sdk", "from_ai_sdk", "ai_sdk_decisions"]

#: The response headers of an AI SDK UI message stream. No hop-by-hop header
#: (WSGI forbids ``connection``); ``x-accel-buffering`` keeps nginx from
#: holding the stream back.
AI_SDK_HEADERS: Mapping[str, str] = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",
}

_DONE = b"data: [DONE]\n\n"

# The library's stop reasons as the AI SDK's finish reasons.
_FINISH_REASONS = {"stop": "stop", "tool_use": "tool-calls", "length": "length",
                   "content_filter": "content-filter", "error": "error"}


def to_ai_sdk(events: Iterable[Any], *, message_id: Optional[str] = None) -> FrameStream:
    """Encode one turn's events as an AI SDK UI message stream.

    Args:
        events: the turn's events: a ``TurnStream`` / ``ToolLoopStream``, or
            any iterable of stream events (``e for _, e in relay.read(t)``
            serves a background turn).
        message_id: the assistant message's id, sent in the ``start`` chunk.
            Leave it None for a resumed turn, so the browser goes on with the
            paused message.

    Returns:
        An iterator of ``bytes`` (SSE frames, the last ``data: [DONE]``)
        with a ``close()`` that closes ``events``: give it to the web
        framework as the response body, with :data:`AI_SDK_HEADERS`.

    .. versionadded:: 0.3
    """
    return _AiSdkStream(events, message_id)


class _AiSdkStream(FrameStream):
    """The AI SDK encoder: one provider round is one step."""

    __slots__ = ("_message_id", "_blocks", "_open", "_counter", "_in_step", "_stop", "_usage", "_cost", "_inputs",
                 "_handlers")

    def __init__(self, events: Iterable[Any], message_id: Optional[str]) -> None:
        super().__init__(events)
        self._message_id = message_id
        self._blocks: Dict[int, Any] = {}  # open block index -> (kind, part id)
        self._open: Dict[str, str] = {}  # kind -> the id of the latest open part of that kind
        self._counter = 0
        self._in_step = False
        self._stop = "stop"
        self._usage: Dict[str, int] = {}
        self._cost: Optional[float] = None
        self._inputs: Dict[str, str] = {}  # tool call id -> tool name, for calls whose input is streaming
        self._handlers = {
            "message_start": self._message_start, "content_block_start": self._block_start,
            "text_delta": self._text_delta, "thinking_delta": self._thinking_delta,
            "tool_call_arguments_delta": self._arguments_delta, "tool_call_end": self._tool_call_end,
            "content_block_end": self._block_end, "cost_update": self._cost_update,
            "message_complete": self._message_complete, "tool_execution_completed": self._tool_completed,
            "error": self._error, "approval_required": self._approval_required,
            "subagent_event": self._subagent_event,
        }

    def begin(self) -> List[Dict[str, Any]]:
        """Open the message."""
        return [{"type": "start", "messageId": self._message_id} if self._message_id else {"type": "start"}]

    def translate(self, event: Any) -> List[Dict[str, Any]]:
        """Return the chunks of one event; events the protocol has no part for give none."""
        handler = self._handlers.get(getattr(event, "type", None))
        return handler(event) if handler is not None else []

    def finish(self, error: Optional[BaseException]) -> List[Dict[str, Any]]:
        """Close what is open, then ``finish`` with the finish reason and the metadata."""
        chunks = [] if error is None else self._error_chunks(str(error))
        chunks.extend(self._close_step())
        chunks.append({"type": "finish", "finishReason": self._stop, "messageMetadata": self._metadata()})
        return chunks

    def trailer(self) -> List[bytes]:
        """End with ``[DONE]``."""
        return [_DONE]

    # -- provider rounds --------------------------------------------------------

    def _message_start(self, event: Any) -> List[Dict[str, Any]]:
        chunks = self._close_step()
        chunks.append({"type": "start-step"})
        self._in_step = True
        return chunks

    def _next_id(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}-{self._counter}"

    def _block_start(self, event: Any) -> List[Dict[str, Any]]:
        kind = event.block_type
        if kind == "text":
            part_id = self._next_id("text")
            self._opened(event.index, "text", part_id)
            return [{"type": "text-start", "id": part_id}]
        if kind == "thinking":
            if event.redacted_data is not None:  # nothing a person can read
                return []
            part_id = self._next_id("reasoning")
            self._opened(event.index, "reasoning", part_id)
            return [{"type": "reasoning-start", "id": part_id}]
        if kind == "tool_use" and event.tool_call_id:
            self._blocks[event.index] = ("tool", event.tool_call_id)
            self._inputs[event.tool_call_id] = event.tool_name or ""
            return [{"type": "tool-input-start", "toolCallId": event.tool_call_id, "toolName": event.tool_name}]
        return []

    def _opened(self, index: int, kind: str, part_id: str) -> None:
        self._blocks[index] = (kind, part_id)
        self._open[kind] = part_id  # deltas name no index: they go to the latest open block of their kind

    def _text_delta(self, event: Any) -> List[Dict[str, Any]]:
        part_id = self._open.get("text")
        return [{"type": "text-delta", "id": part_id, "delta": event.text}] if part_id and event.text else []

    def _thinking_delta(self, event: Any) -> List[Dict[str, Any]]:
        part_id = self._open.get("reasoning")  # a signature alone (no text) is never sent
        return [{"type": "reasoning-delta", "id": part_id, "delta": event.text}] if part_id and event.text else []

    def _arguments_delta(self, event: Any) -> List[Dict[str, Any]]:
        if event.tool_call_id not in self._inputs or not event.delta:
            return []
        return [{"type": "tool-input-delta", "toolCallId": event.tool_call_id, "inputTextDelta": event.delta}]

    def _tool_call_end(self, event: Any) -> List[Dict[str, Any]]:
        chunks = []
        if event.tool_call_id not in self._inputs:  # a provider that gave no block start
            chunks.append({"type": "tool-input-start", "toolCallId": event.tool_call_id,
                           "toolName": event.tool_name})
        self._inputs.pop(event.tool_call_id, None)
        text = event.arguments
        try:
            arguments = json.loads(text) if text.strip() else {}
        except ValueError:
            chunks.append({"type": "tool-input-error", "toolCallId": event.tool_call_id,
                           "toolName": event.tool_name, "input": text,
                           "errorText": "the model sent arguments that are not JSON"})
            return chunks
        chunks.append({"type": "tool-input-available", "toolCallId": event.tool_call_id,
                       "toolName": event.tool_name, "input": arguments})
        return chunks

    def _block_end(self, event: Any) -> List[Dict[str, Any]]:
        opened = self._blocks.pop(event.index, None)
        if opened is None or opened[0] == "tool":
            return []
        kind, part_id = opened
        if self._open.get(kind) == part_id:
            del self._open[kind]
        return [{"type": f"{kind}-end", "id": part_id}]

    def _close_blocks(self) -> List[Dict[str, Any]]:
        chunks = [{"type": f"{kind}-end", "id": part_id}
                  for kind, part_id in self._blocks.values() if kind != "tool"]
        self._blocks.clear()
        self._open.clear()
        return chunks

    def _close_step(self) -> List[Dict[str, Any]]:
        chunks = self._close_blocks()
        if self._in_step:
            chunks.append({"type": "finish-step"})
            self._in_step = False
        return chunks

    def _cost_update(self, event: Any) -> List[Dict[str, Any]]:
        usage = event.usage
        totals = self._usage
        for key, value in (("inputTokens", usage.prompt_tokens), ("outputTokens", usage.completion_tokens),
                           ("cacheReadTokens", usage.cache_read_tokens),
                           ("cacheWriteTokens", usage.cache_write_tokens)):
            totals[key] = totals.get(key, 0) + value
        if event.cost_usd is not None:
            self._cost = (self._cost or 0.0) + event.cost_usd
        return [{"type": "message-metadata", "messageMetadata": self._metadata()}]

    def _metadata(self) -> Dict[str, Any]:
        return {"usage": dict(self._usage), "costUsd": self._cost}

    def _message_complete(self, event: Any) -> List[Dict[str, Any]]:
        response = event.full_response
        self._stop = _FINISH_REASONS.get(getattr(response.stop_reason, "value", ""), "other")
        chunks = self._close_blocks()
        if response.output is not None:
            chunks.append({"type": "data-output", "data": json_data(response.output)})
        return chunks

    # -- the loop's events ------------------------------------------------------

    def _tool_completed(self, event: Any, call_id: Optional[str] = None) -> List[Dict[str, Any]]:
        text = event.output or event.result_summary
        call_id = call_id or event.tool_call_id
        if event.is_error:
            return [{"type": "tool-output-error", "toolCallId": call_id, "errorText": text}]
        return [{"type": "tool-output-available", "toolCallId": call_id, "output": _parsed(text)}]

    def _subagent_event(self, event: Any) -> List[Dict[str, Any]]:
        # A sub-agent's tool calls become tool parts of their own, their ids the path of call ids
        # ("a1/m1/e1", the id a nested approval request names); its text stays inside the agent tool.
        call_path, inner = nested_call(event)
        if call_path is None:
            return []
        if inner.type == "tool_execution_started":
            if call_path in self._inputs:
                return []
            self._inputs[call_path] = inner.tool_name
            return [{"type": "tool-input-start", "toolCallId": call_path, "toolName": inner.tool_name},
                    {"type": "tool-input-available", "toolCallId": call_path, "toolName": inner.tool_name,
                     "input": inner.parsed_arguments}]
        return self._tool_completed(inner, call_path)

    def _error_chunks(self, message: str) -> List[Dict[str, Any]]:
        self._stop = "error"
        chunks = self._close_blocks()
        chunks.append({"type": "error", "errorText": message})
        return chunks

    def _error(self, event: Any) -> List[Dict[str, Any]]:
        return self._error_chunks(event.message)

    def _approval_required(self, event: Any) -> List[Dict[str, Any]]:
        self._stop = "tool-calls"
        return [{"type": "tool-approval-request", "approvalId": request.tool_call_id,
                 "toolCallId": request.tool_call_id} for request in event.requests]


def _parsed(text: str) -> Any:
    """Return the tool's output as the UI gets it: parsed when it is JSON, else the text."""
    if not text or text[0] not in '{["-0123456789tfn':
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


# -- what useChat posts ---------------------------------------------------------

def _ui_messages(messages: Union[Sequence[Any], Mapping[str, Any]]) -> List[Mapping[str, Any]]:
    """Return the UIMessage list of a request body, or the list itself, checked."""
    if isinstance(messages, Mapping):
        if "messages" not in messages:
            raise UiRequestError("messages", "the request body has no 'messages' list")
        messages = messages["messages"]
    if not isinstance(messages, (list, tuple)):
        raise UiRequestError("messages", "'messages' must be a list of UIMessage objects")
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise UiRequestError(f"messages[{i}]", "must be a UIMessage object")
        if message.get("role") not in ("system", "user", "assistant"):
            raise UiRequestError(f"messages[{i}].role", "must be 'system', 'user' or 'assistant'")
        if not isinstance(message.get("parts"), list):
            raise UiRequestError(f"messages[{i}].parts", "must be a list of parts")
    return list(messages)


def _tool_name(part: Mapping[str, Any]) -> Optional[str]:
    kind = part.get("type")
    if kind == "dynamic-tool":
        return part.get("toolName")
    if isinstance(kind, str) and kind.startswith("tool-"):
        return kind[5:]
    return None


def from_ai_sdk(messages: Union[Sequence[Any], Mapping[str, Any]]) -> List[Message]:
    """Read the ``UIMessage`` list ``useChat`` posts as the library's messages.

    Args:
        messages: the ``messages`` list of the request body (or the whole
            body, a dict holding it).

    Returns:
        The messages in the session's shape: user text and files (images as
        :class:`~agcore_sync.llm.media.ImageBlock`, PDFs and text files as
        :class:`~agcore_sync.llm.media.DocumentBlock`); each assistant step
        as an assistant message with its text and tool calls, followed by one
        ``tool`` message per call that has an output (``output-error`` and
        ``output-denied`` parts as error results). Reasoning parts are
        skipped (the browser never had their signatures), and so are parts
        the library has no block for (sources, custom and ``data-*`` parts).

    Raises:
        UiRequestError: the body is not a UIMessage list; the message names
            the field (``messages[2].parts[0].url``). A ``ValueError``, so a
            view answers 400.

    .. versionadded:: 0.3
    """
    out: List[Message] = []
    for i, ui_message in enumerate(_ui_messages(messages)):
        builder = MessageBuilder(ui_message["role"], out)
        for j, part in enumerate(ui_message["parts"]):
            where = f"messages[{i}].parts[{j}]"
            if not isinstance(part, Mapping):
                raise UiRequestError(where, "must be a part object")
            kind = part.get("type")
            if kind == "text":
                builder.text(json_text(part, "text", where))
            elif kind == "file":
                builder.file(part.get("url"), part.get("mediaType"), where)
            elif kind == "step-start":
                builder.step()
            elif _tool_name(part) is not None and part.get("state") != "input-streaming":
                _tool_part(builder, part, where)
        builder.flush()
    return out


def _tool_part(builder: MessageBuilder, part: Mapping[str, Any], where: str) -> None:
    call_id = json_text(part, "toolCallId", where)
    state = part.get("state")
    builder.tool_call(call_id, _tool_name(part) or "", part.get("input"))
    if state == "output-available":
        output = part.get("output")
        builder.tool_result(call_id, output_text(output), False)
    elif state == "output-error":
        builder.tool_result(call_id, str(part.get("errorText") or "the tool failed"), True)
    elif state == "output-denied":
        approval = part.get("approval") or {}
        builder.tool_result(call_id, str(approval.get("reason") or "denied by the user"), True)


def ai_sdk_decisions(messages: Union[Sequence[Any], Mapping[str, Any]]) -> Dict[str, Decision]:
    """Read the tool approvals in a ``useChat`` post, for ``session.resume_turn``.

    Only tool parts in state ``approval-responded`` count: approved ones
    become :class:`~agcore_sync.hooks.Approve`, refused ones
    :class:`~agcore_sync.hooks.Deny` with the user's reason (or "denied by
    the user").

    Args:
        messages: the ``messages`` list of the request body (or the body).

    Returns:
        ``{tool call id: decision}`` (the approval id is the call's id).

    Raises:
        UiRequestError: the body is not a UIMessage list, or an approval has
            no ``approved`` flag.

    .. versionadded:: 0.3
    """
    decisions: Dict[str, Decision] = {}
    for i, ui_message in enumerate(_ui_messages(messages)):
        for j, part in enumerate(ui_message["parts"]):
            if not isinstance(part, Mapping) or part.get("state") != "approval-responded":
                continue
            where = f"messages[{i}].parts[{j}]"
            approval = part.get("approval")
            if not isinstance(approval, Mapping) or not isinstance(approval.get("approved"), bool):
                raise UiRequestError(f"{where}.approval.approved", "must be true or false")
            call_id = json_text(part, "toolCallId", where)
            decisions[call_id] = (Approve() if approval["approved"]
                                  else Deny(str(approval.get("reason") or "denied by the user")))
    return decisions
