"""What the tool loop does to a round's calls and results before the model sees them.

:func:`cut_utf8` / :func:`cut_output` cut a result past
``CycleConfig.max_tool_result_bytes``; :class:`RepeatGuard` refuses a call
repeated too often in a row (``CycleConfig.max_repeated_tool_calls``);
:func:`runnable_calls` gives a response's calls distinct ids and arguments
that are JSON before anything runs or is kept.
"""

from __future__ import annotations

import json
from typing import List, Optional, Tuple

import attrs

from agcore_sync._http import peer_json
from agcore_sync.llm._tool_calls import ToolCallIds
from agcore_sync.llm.types import MessageResponse, TextBlock, ToolUseBlock
from agcore_sync.tools.error import ToolError
from agcore_sync.tools.invocation import ToolInvocation

__all__ = ["RepeatGuard", "cut_output", "cut_utf8", "runnable_calls"]


def _as_text(arguments: object) -> str:
    """Return parsed arguments that are no JSON object the tool may get (NaN, too deep) as the text they were."""
    try:
        return json.dumps(arguments, ensure_ascii=False)  # NaN stays NaN: the registry says why it refuses
    except (ValueError, RecursionError):
        return "<arguments nested too deep>"


def runnable_calls(response: MessageResponse) -> MessageResponse:
    """Return ``response`` with its tool calls fit to run and to keep, or ``response`` itself when they are.

    Whatever the provider (``MockProvider`` and hand-made responses too):

    - calls sharing an id, or with a blank one, get distinct ids (the first
      keeps its own), so one approval or one result can never stand for two
      calls;
    - parsed arguments holding ``NaN``/``Infinity`` or nested deeper than
      :data:`~agcore_sync._http.peer_json.MAX_DEPTH` become their text, which
      the registry refuses as invalid arguments: the tool never runs, and the
      message the history keeps is still JSON (the session can be saved).

    The assistant message the history and a paused turn keep is this one.
    """
    calls = response.message.tool_uses
    if not calls:
        return response
    ids = ToolCallIds()
    fixed: List[Tuple[ToolUseBlock, ToolUseBlock]] = []
    for call in calls:
        new_id = ids.take(call.id)
        arguments = call.input
        if not isinstance(arguments, str):
            try:
                peer_json.check_value(arguments)
            except ValueError:
                arguments = _as_text(arguments)
        if new_id != call.id or arguments is not call.input:
            fixed.append((call, attrs.evolve(call, id=new_id, input=arguments)))
    if not fixed:
        return response
    replace = {id(old): new for old, new in fixed}
    content = tuple(replace.get(id(block), block) for block in response.message.content)
    return attrs.evolve(response, message=attrs.evolve(response.message, content=content))


def cut_utf8(text: str, max_bytes: Optional[int]) -> str:
    """Return ``text`` cut to ``max_bytes`` of UTF-8 on a character boundary.

    A cut text ends with a marker saying how many bytes were cut. ASCII text
    (``str.isascii()`` is a flag lookup) is cut without copying more than
    the part kept.
    """
    if max_bytes is None or len(text) * 4 <= max_bytes:  # a character is at most 4 bytes
        return text
    if text.isascii():
        if len(text) <= max_bytes:
            return text
        head, cut = text[:max_bytes], len(text) - max_bytes
    else:
        data = text.encode("utf-8", "surrogatepass")
        if len(data) <= max_bytes:
            return text
        head = data[:max_bytes].decode("utf-8", "ignore")
        cut = len(data) - len(head.encode("utf-8", "surrogatepass"))
    return f"{head}\n[... {cut} bytes cut: the result was longer than {max_bytes} bytes]"


def cut_output(invocation: ToolInvocation, max_bytes: Optional[int]) -> ToolInvocation:
    """Return ``invocation`` with its output replaced by the cut text if too long."""
    if max_bytes is None or not invocation.ok:
        return invocation
    blocks = invocation.blocks
    if blocks is not None:  # cut each text block; images have their own size limit
        cut_blocks = tuple(TextBlock(cut_utf8(b.text, max_bytes)) if isinstance(b, TextBlock) else b for b in blocks)
        if cut_blocks == blocks:
            return invocation
        return ToolInvocation(invocation.tool_name, invocation.input, output=cut_blocks,
                              tool_call_id=invocation.tool_call_id, duration_s=invocation.duration_s)
    text = invocation.content()
    cut = cut_utf8(text, max_bytes)
    if cut is text:
        return invocation
    return ToolInvocation(invocation.tool_name, invocation.input, output=cut,
                          tool_call_id=invocation.tool_call_id, duration_s=invocation.duration_s)


class RepeatGuard:
    """Refuses a call identical to the previous ``limit`` calls in a row."""

    def __init__(self, limit: Optional[int]) -> None:
        self.limit = limit
        self.last: Optional[Tuple[str, str]] = None
        self.count = 0

    def refuse(self, call: ToolUseBlock) -> Optional[ToolError]:
        key = (call.name, json.dumps(call.input, sort_keys=True, separators=(",", ":")))
        self.count = self.count + 1 if key == self.last else 1
        self.last = key
        if self.limit is None or self.count <= self.limit:
            return None
        return ToolError(
            f'tool "{call.name}" was called with the same arguments {self.count} times in a row and was '
            "not run again; change the arguments or answer without this tool",
            call.name,
        )

    def state(self) -> Tuple[Optional[Tuple[str, str]], int]:
        """Return what the guard remembers (saved with a paused turn)."""
        return self.last, self.count

    def restore(self, state: Tuple[Optional[Tuple[str, str]], int]) -> None:
        """Remember ``state`` again (a resumed turn)."""
        self.last, self.count = state
