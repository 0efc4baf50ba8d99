"""Building the library's messages from what a browser posts (both UI protocols).

A UI shows one assistant message per turn, made of steps; the session keeps
one assistant message per provider round, each followed by one ``tool``
message per call. :class:`MessageBuilder` does that regrouping, and
:class:`UiRequestError` names the field of a body that cannot be read.
"""

from __future__ import annotations

import json
from typing import Any, List, Mapping, Optional, Tuple

from agcore_sync.errors import AgcoreError
from agcore_sync.llm.content import ContentBlock
from agcore_sync.llm.media import DocumentBlock, ImageBlock
from agcore_sync.llm.types import Message, Role, TextBlock, ToolUseBlock

__all__ = ["UiRequestError", "MessageBuilder", "json_data", "json_text", "nested_call"]


class UiRequestError(AgcoreError, ValueError):
    """A request body from a UI is not what its protocol defines.

    A ``ValueError`` too, so a view answers it with 400. ``field`` is the
    JSON path of the first field that is wrong (``messages[1].parts[0].url``).

    .. versionadded:: 0.3
    """

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        #: The JSON path of the field.
        self.field = field

    def __reduce__(self) -> Any:
        return (type(self), (self.field, str(self).split(": ", 1)[-1]))


def nested_call(event: Any) -> Tuple[Optional[str], Any]:
    """Return ``(call path, tool event)`` of a sub-agent's tool event, else ``(None, innermost event)``.

    ``event`` is a ``SubagentEvent``; the path joins the agent tool calls'
    ids and the inner call's id with ``/`` (``a1/m1/e1``), the id a nested
    approval request names. Only ``ToolExecutionStarted`` and
    ``ToolExecutionCompleted`` have a path: a UI shows a sub-agent's tool
    calls, not its text.
    """
    ids = []
    while getattr(event, "type", None) == "subagent_event":
        ids.append(event.tool_call_id)
        event = event.event
    if getattr(event, "type", None) not in ("tool_execution_started", "tool_execution_completed"):
        return None, event
    return "/".join([*ids, event.tool_call_id]), event


def json_text(obj: Mapping[str, Any], key: str, where: str) -> str:
    """Return ``obj[key]``, which must be a string."""
    value = obj.get(key)
    if not isinstance(value, str):
        raise UiRequestError(f"{where}.{key}", "must be a string")
    return value


def file_block(url: Any, media_type: Any, where: str) -> ContentBlock:
    """Return the block of a file a browser sent as a URL (a data URL or an http(s) one).

    Images become :class:`ImageBlock`, PDFs and ``text/plain`` files
    :class:`DocumentBlock`; the size limits of those blocks apply.
    """
    if not isinstance(url, str):
        raise UiRequestError(f"{where}.url", "must be a string")
    if not isinstance(media_type, str):
        raise UiRequestError(f"{where}.mediaType", "must be a string")
    try:
        if media_type.startswith("image/"):
            return ImageBlock.from_url(url, media_type)
        if media_type == "application/pdf":
            return DocumentBlock.from_url(url)
        if media_type == "text/plain" and url.lower().startswith("data:"):
            import base64

            payload = url.partition(",")[2]
            return DocumentBlock("text/plain", text=base64.b64decode(payload, validate=True).decode("utf-8"))
    except ValueError as exc:  # a size limit, a malformed data URL, bad base64 or UTF-8
        raise UiRequestError(f"{where}.url", str(exc)) from None
    raise UiRequestError(f"{where}.mediaType", f"{media_type!r} is not an image, a PDF or a text/plain data URL")


class MessageBuilder:
    """Collect one UI message's parts into the session's messages, appended to ``out``.

    An assistant message is cut at each ``step-start``: its blocks become an
    assistant message, then its tool results ``tool`` messages, in order.
    """

    __slots__ = ("_role", "_out", "_blocks", "_results")

    def __init__(self, role: str, out: List[Message]) -> None:
        self._role = Role(role)
        self._out = out
        self._blocks: List[ContentBlock] = []
        self._results: List[Message] = []

    def text(self, text: str) -> None:
        """Add a text part."""
        self._blocks.append(TextBlock(text))

    def file(self, url: Any, media_type: Any, where: str) -> None:
        """Add a file part (see :func:`file_block`)."""
        self._blocks.append(file_block(url, media_type, where))

    def tool_call(self, call_id: str, name: str, arguments: Any) -> None:
        """Add a tool call of the current step."""
        self._blocks.append(ToolUseBlock(call_id, name, arguments if isinstance(arguments, dict) else {}))

    def tool_result(self, call_id: str, content: str, is_error: bool) -> None:
        """Add the result of a call of the current step."""
        self._results.append(Message.tool_result(call_id, content, is_error))

    def step(self) -> None:
        """End the current step (an assistant message and its results)."""
        self.flush()

    def flush(self) -> None:
        """Append what was collected."""
        if self._blocks:
            self._out.append(Message(self._role, tuple(self._blocks)))
        self._out.extend(self._results)
        self._blocks = []
        self._results = []


def json_data(value: Any) -> Any:
    """Return a structured-output value as JSON data, as a tool result is written (dataclasses etc. as dicts)."""
    from agcore_sync.tools.result_json import result_text

    return json.loads(result_text(value))


def output_text(output: Optional[Any]) -> str:
    """Return the text a model gets for a tool output a UI sent back (JSON unless a str)."""
    return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
