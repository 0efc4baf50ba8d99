"""AG-UI 1.0, both ways: a turn's events as AG-UI events, and ``RunAgentInput`` as messages.

:func:`to_ag_ui` sends ``RUN_STARTED``; per provider round one assistant
message (a new ``messageId`` per round: its text as ``TEXT_MESSAGE_*``, its
reasoning as ``REASONING_*`` / ``REASONING_MESSAGE_*``, its tool calls as
``TOOL_CALL_START/ARGS/END`` under that message); ``TOOL_CALL_RESULT`` for
each tool output; then ``RUN_FINISHED`` (outcome ``success``, or
``interrupt`` with one interrupt per call waiting for approval) or
``RUN_ERROR``. :func:`from_ag_ui` reads the ``RunAgentInput`` a client posts
and :func:`ag_ui_decisions` its ``resume`` answers.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Iterable, List, Mapping, Optional

from agcore_sync.hooks import Approve, Decision, Deny
from agcore_sync.llm.types import Message, Role, TextBlock, ToolUseBlock
from agcore_sync.ui._frames import FrameStream
from agcore_sync.ui._messages import UiRequestError, file_block, json_data, json_text, nested_call

__all__ = ["to_ag_ui", "from_ag_ui", "ag_ui_decisions", "APPROVAL_SCHEMA"]

#: The answer an approval interrupt expects (its ``responseSchema``):
#: ``{"approved": true}``, or ``{"approved": false, "reason": "..."}``.
APPROVAL_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["approved"],
}


def to_ag_ui(events: Iterable[Any], *, thread_id: str, run_id: str) -> FrameStream:
    """Encode one turn's events as an AG-UI 1.0 event stream (SSE).

    Args:
        events: the turn's events (a ``TurnStream``, or any iterable of
            stream events, such as a background turn read from a relay).
        thread_id: the ``threadId`` of the ``RunAgentInput`` (the session).
        run_id: its ``runId``.

    Returns:
        An iterator of ``bytes`` (SSE ``data:`` frames) whose ``close()``
        closes ``events``; serve it as ``text/event-stream``.

    .. versionadded:: 0.3
    """
    return _AgUiStream(events, thread_id, run_id)


class _AgUiStream(FrameStream):
    """The AG-UI encoder: one provider round is one assistant message."""

    __slots__ = ("_thread_id", "_run_id", "_round", "_message_id", "_texts", "_blocks", "_open", "_tools",
                 "_interrupts", "_usage", "_output", "_failed", "_handlers")

    def __init__(self, events: Iterable[Any], thread_id: str, run_id: str) -> None:
        if not isinstance(thread_id, str) or not isinstance(run_id, str):
            raise TypeError("to_ag_ui needs thread_id and run_id as strings")
        super().__init__(events)
        self._thread_id = thread_id
        self._run_id = run_id
        self._round = 0
        self._message_id = f"{run_id}-0"
        self._texts = 0  # text blocks of this round so far
        self._blocks: Dict[int, Any] = {}  # open block index -> (kind, id)
        self._open: Dict[str, str] = {}  # kind -> the id of the latest open block of that kind
        self._tools: Dict[str, bool] = {}  # tool call id -> its START was sent
        self._interrupts: List[Dict[str, Any]] = []
        self._usage: Dict[str, int] = {}
        self._output: Any = None
        self._failed = False
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
        """Start the run."""
        return [{"type": "RUN_STARTED", "threadId": self._thread_id, "runId": self._run_id}]

    def translate(self, event: Any) -> List[Dict[str, Any]]:
        """Return the AG-UI events of one library event."""
        if self._failed:
            return []
        handler = self._handlers.get(getattr(event, "type", None))
        return handler(event) if handler is not None else []

    def finish(self, error: Optional[BaseException]) -> List[Dict[str, Any]]:
        """End the run: ``RUN_ERROR``, or ``RUN_FINISHED`` with its outcome."""
        if self._failed:
            return []
        if error is not None:
            return self._error_events(str(error))
        events = self._close_blocks()
        finished: Dict[str, Any] = {"type": "RUN_FINISHED", "threadId": self._thread_id, "runId": self._run_id}
        if self._interrupts:
            finished["outcome"] = {"type": "interrupt", "interrupts": self._interrupts}
        else:
            finished["outcome"] = {"type": "success"}
            if self._output is not None:
                finished["result"] = self._output
        if self._usage:
            finished["usage"] = [dict(self._usage)]
        events.append(finished)
        return events

    # -- provider rounds --------------------------------------------------------

    def _message_start(self, event: Any) -> List[Dict[str, Any]]:
        events = self._close_blocks()
        self._round += 1
        self._message_id = f"{self._run_id}-{self._round}"
        self._texts = 0
        return events

    def _block_start(self, event: Any) -> List[Dict[str, Any]]:
        kind = event.block_type
        if kind == "text":
            # One assistant message per round: a second text block of a round gets its own id.
            self._texts += 1
            text_id = self._message_id if self._texts == 1 else f"{self._message_id}-{self._texts}"
            self._opened(event.index, "text", text_id)
            return [{"type": "TEXT_MESSAGE_START", "messageId": text_id, "role": "assistant"}]
        if kind == "thinking" and event.redacted_data is None:
            reasoning_id = f"{self._message_id}-reasoning-{event.index}"
            self._opened(event.index, "reasoning", reasoning_id)
            return [{"type": "REASONING_START", "messageId": reasoning_id},
                    {"type": "REASONING_MESSAGE_START", "messageId": reasoning_id, "role": "reasoning"}]
        if kind == "tool_use" and event.tool_call_id:
            self._tools[event.tool_call_id] = True
            return [{"type": "TOOL_CALL_START", "toolCallId": event.tool_call_id,
                     "toolCallName": event.tool_name or "", "parentMessageId": self._message_id}]
        return []

    def _opened(self, index: int, kind: str, block_id: str) -> None:
        self._blocks[index] = (kind, block_id)
        self._open[kind] = block_id  # deltas name no index: they go to the latest open block of their kind

    def _text_delta(self, event: Any) -> List[Dict[str, Any]]:
        open_id = self._open.get("text")
        if open_id is None or not event.text:
            return []
        return [{"type": "TEXT_MESSAGE_CONTENT", "messageId": open_id, "delta": event.text}]

    def _thinking_delta(self, event: Any) -> List[Dict[str, Any]]:
        open_id = self._open.get("reasoning")
        if open_id is None or not event.text:  # signatures never reach a UI
            return []
        return [{"type": "REASONING_MESSAGE_CONTENT", "messageId": open_id, "delta": event.text}]

    def _arguments_delta(self, event: Any) -> List[Dict[str, Any]]:
        if not self._tools.get(event.tool_call_id) or not event.delta:
            return []
        return [{"type": "TOOL_CALL_ARGS", "toolCallId": event.tool_call_id, "delta": event.delta}]

    def _tool_call_end(self, event: Any) -> List[Dict[str, Any]]:
        events = []
        if not self._tools.get(event.tool_call_id):  # a provider that gave no block start
            self._tools[event.tool_call_id] = True
            events.append({"type": "TOOL_CALL_START", "toolCallId": event.tool_call_id,
                           "toolCallName": event.tool_name, "parentMessageId": self._message_id})
            if event.arguments:
                events.append({"type": "TOOL_CALL_ARGS", "toolCallId": event.tool_call_id,
                               "delta": event.arguments})
        events.append({"type": "TOOL_CALL_END", "toolCallId": event.tool_call_id})
        return events

    def _block_end(self, event: Any) -> List[Dict[str, Any]]:
        opened = self._blocks.pop(event.index, None)
        if opened is None:
            return []
        if self._open.get(opened[0]) == opened[1]:
            del self._open[opened[0]]
        return _end_events(*opened)

    def _close_blocks(self) -> List[Dict[str, Any]]:
        events: List[Dict[str, Any]] = []
        for kind, block_id in self._blocks.values():
            events.extend(_end_events(kind, block_id))
        self._blocks.clear()
        self._open.clear()
        return events

    def _cost_update(self, event: Any) -> List[Dict[str, Any]]:
        usage, totals = event.usage, self._usage
        for key, value in (("inputTokens", usage.prompt_tokens), ("outputTokens", usage.completion_tokens),
                           ("cachedInputTokens", usage.cache_read_tokens),
                           ("cacheWriteInputTokens", usage.cache_write_tokens)):
            totals[key] = totals.get(key, 0) + value
        totals["totalTokens"] = totals["inputTokens"] + totals["outputTokens"]
        return []

    def _message_complete(self, event: Any) -> List[Dict[str, Any]]:
        output = event.full_response.output
        if output is not None:
            self._output = json_data(output)
        return self._close_blocks()

    # -- the loop's events ------------------------------------------------------

    def _tool_completed(self, event: Any, call_id: Optional[str] = None) -> List[Dict[str, Any]]:
        call_id = call_id or event.tool_call_id
        return [{"type": "TOOL_CALL_RESULT", "messageId": f"{call_id}-result",
                 "toolCallId": call_id, "content": event.output or event.result_summary, "role": "tool"}]

    def _subagent_event(self, event: Any) -> List[Dict[str, Any]]:
        # A sub-agent's tool calls are tool calls of the round's message, their ids the path of call ids.
        call_path, inner = nested_call(event)
        if call_path is None:
            return []
        if inner.type == "tool_execution_started":
            if self._tools.get(call_path):
                return []
            self._tools[call_path] = True
            events = [{"type": "TOOL_CALL_START", "toolCallId": call_path, "toolCallName": inner.tool_name,
                       "parentMessageId": self._message_id}]
            if inner.arguments:
                events.append({"type": "TOOL_CALL_ARGS", "toolCallId": call_path, "delta": inner.arguments})
            events.append({"type": "TOOL_CALL_END", "toolCallId": call_path})
            return events
        return self._tool_completed(inner, call_path)

    def _error_events(self, message: str) -> List[Dict[str, Any]]:
        self._failed = True  # RUN_ERROR ends the run: nothing may follow it
        events = self._close_blocks()
        events.append({"type": "RUN_ERROR", "message": message})
        return events

    def _error(self, event: Any) -> List[Dict[str, Any]]:
        return self._error_events(event.message)

    def _approval_required(self, event: Any) -> List[Dict[str, Any]]:
        self._interrupts = [{"id": request.tool_call_id, "reason": "tool_approval",
                             "message": f"Allow the tool {request.tool_name!r} to run?",
                             "toolCallId": request.tool_call_id, "responseSchema": dict(APPROVAL_SCHEMA)}
                            for request in event.requests]
        return []


def _end_events(kind: str, block_id: str) -> List[Dict[str, Any]]:
    if kind == "text":
        return [{"type": "TEXT_MESSAGE_END", "messageId": block_id}]
    if kind == "reasoning":
        return [{"type": "REASONING_MESSAGE_END", "messageId": block_id},
                {"type": "REASONING_END", "messageId": block_id}]
    return []


# -- what a client posts ----------------------------------------------------------

def _run_input(run_input: Any) -> Mapping[str, Any]:
    if not isinstance(run_input, Mapping):
        raise UiRequestError("RunAgentInput", "the request body must be a JSON object")
    for key in ("threadId", "runId"):
        json_text(run_input, key, "RunAgentInput")
    if not isinstance(run_input.get("messages"), list):
        raise UiRequestError("RunAgentInput.messages", "must be a list")
    return run_input


def _content(content: Any, where: str) -> List[Any]:
    """Return the blocks of a user message's ``content`` (a string, or text / image / document parts)."""
    if isinstance(content, str):
        return [TextBlock(content)]
    if not isinstance(content, list):
        raise UiRequestError(where, "must be a string or a list of parts")
    blocks: List[Any] = []
    for k, part in enumerate(content):
        part_where = f"{where}[{k}]"
        if not isinstance(part, Mapping):
            raise UiRequestError(part_where, "must be a part object")
        kind = part.get("type")
        if kind == "text":
            blocks.append(TextBlock(json_text(part, "text", part_where)))
        elif kind in ("image", "document"):
            source = part.get("source")
            if not isinstance(source, Mapping):
                raise UiRequestError(f"{part_where}.source", "must be an object")
            value = json_text(source, "value", f"{part_where}.source")
            media_type = source.get("mimeType") or ("image/png" if kind == "image" else "application/pdf")
            url = f"data:{media_type};base64,{value}" if source.get("type") == "data" else value
            blocks.append(file_block(url, media_type, f"{part_where}.source"))
        # audio, video and unknown parts: skipped (no block takes them)
    return blocks


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, Mapping))
    return ""


def from_ag_ui(run_input: Mapping[str, Any]) -> List[Message]:
    """Read a ``RunAgentInput``'s messages as the library's messages.

    ``user`` messages keep their text, image and document parts (audio and
    video are skipped); ``system`` and ``developer`` messages become system
    messages; ``assistant`` messages their text and tool calls; ``tool``
    messages tool results (``error`` set makes an error result). Reasoning
    and activity messages are skipped.

    Raises:
        UiRequestError: the body is not a RunAgentInput; the message names
            the field. A ``ValueError``, so a view answers 400.

    .. versionadded:: 0.3
    """
    out: List[Message] = []
    for i, message in enumerate(_run_input(run_input)["messages"]):
        where = f"RunAgentInput.messages[{i}]"
        if not isinstance(message, Mapping):
            raise UiRequestError(where, "must be a message object")
        role = message.get("role")
        if role == "user":
            out.append(Message(Role.USER, tuple(_content(message.get("content"), f"{where}.content"))))
        elif role in ("system", "developer"):
            out.append(Message(Role.SYSTEM, (TextBlock(_text_of(message.get("content"))),)))
        elif role == "assistant":
            out.append(_assistant(message, where))
        elif role == "tool":
            error = message.get("error")
            content = _text_of(message.get("content")) or (error if isinstance(error, str) else "")
            out.append(Message.tool_result(json_text(message, "toolCallId", where), content, bool(error)))
        elif role not in ("reasoning", "activity"):
            raise UiRequestError(f"{where}.role", f"unknown role {role!r}")
    return _results_in_call_order(out)


def _results_in_call_order(messages: List[Message]) -> List[Message]:
    """Put each run of tool results in the order of the calls before it.

    A client appends results as they arrive, and parallel tools finish in any
    order; the session keeps them in the order the model made the calls.
    """
    order: Dict[str, int] = {}
    out: List[Message] = []
    run: List[Message] = []
    for message in messages + [Message(Role.USER, ())]:  # a sentinel ends the last run
        if message.role is Role.TOOL:
            run.append(message)
            continue
        run.sort(key=lambda result: order.get(result.content[0].tool_use_id, len(order)))
        out.extend(run)
        run = []
        if message.role is Role.ASSISTANT:
            order = {call.id: i for i, call in enumerate(message.tool_uses)}
        out.append(message)
    return out[:-1]


def _assistant(message: Mapping[str, Any], where: str) -> Message:
    blocks: List[Any] = []
    text = message.get("content")
    if isinstance(text, str) and text:
        blocks.append(TextBlock(text))
    calls = message.get("toolCalls") or []
    if not isinstance(calls, list):
        raise UiRequestError(f"{where}.toolCalls", "must be a list")
    for k, call in enumerate(calls):
        call_where = f"{where}.toolCalls[{k}]"
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            raise UiRequestError(f"{call_where}.function", "must be an object")
        arguments = json_text(function, "arguments", f"{call_where}.function")
        try:
            parsed = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            raise UiRequestError(f"{call_where}.function.arguments", "must be JSON text") from None
        blocks.append(ToolUseBlock(json_text(call, "id", call_where), json_text(function, "name", call_where),
                                   parsed if isinstance(parsed, dict) else {}))
    return Message(Role.ASSISTANT, tuple(blocks))


def ag_ui_decisions(run_input: Mapping[str, Any]) -> Dict[str, Decision]:
    """Read the ``resume`` answers of a ``RunAgentInput``, for ``session.resume_turn``.

    Each entry answers an approval interrupt (its ``interruptId`` is the
    call's id): ``status: "resolved"`` with payload ``{"approved": true}``
    (or ``true``) approves; ``{"approved": false, "reason": ...}`` (or
    ``false``) and ``status: "cancelled"`` deny.

    Raises:
        UiRequestError: the body is not a RunAgentInput, or an answer is not
            of that shape.

    .. versionadded:: 0.3
    """
    entries = _run_input(run_input).get("resume") or []
    if not isinstance(entries, list):
        raise UiRequestError("RunAgentInput.resume", "must be a list")
    decisions: Dict[str, Decision] = {}
    for i, entry in enumerate(entries):
        where = f"RunAgentInput.resume[{i}]"
        if not isinstance(entry, Mapping):
            raise UiRequestError(where, "must be an object")
        call_id = json_text(entry, "interruptId", where)
        status = entry.get("status")
        if status == "cancelled":
            decisions[call_id] = Deny("cancelled by the user")
            continue
        if status != "resolved":
            raise UiRequestError(f"{where}.status", "must be 'resolved' or 'cancelled'")
        payload = entry.get("payload")
        approved = payload.get("approved") if isinstance(payload, Mapping) else payload
        if not isinstance(approved, bool):
            raise UiRequestError(f"{where}.payload.approved", "must be true or false")
        reason = payload.get("reason") if isinstance(payload, Mapping) else None
        decisions[call_id] = Approve() if approved else Deny(str(reason or "denied by the user"))
    return decisions
