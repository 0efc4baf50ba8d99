"""ToolCall: one call of a tool; ToolInvocation: its record; CompletionCallback: how a batch reports one.

:class:`ToolCall` is the one shape of a call across ``tools/`` and ``loop/``:
what ``ToolRegistry.invoke_all`` takes (tuples are accepted too) and what a
tool loop hands the registry for each ``ToolUseBlock`` the model sent.
A :class:`~agcore_sync.tools.registry.ToolRegistry` returns one
:class:`ToolInvocation` per call; the loops turn it into the tool result the
model reads (:meth:`ToolInvocation.content`). Pure values, no I/O.
"""

from __future__ import annotations

from typing import Any, Optional, Protocol, Tuple, Union

import attrs

from agcore_sync._values import value_methods
from agcore_sync.llm.types import ContentBlock, TextBlock
from agcore_sync.tools.error import ToolExecutionError
from agcore_sync.tools.result_json import result_text

__all__ = ["ToolCall", "ToolCallLike", "ToolInvocation", "CompletionCallback"]

#: The block types a tool may return as its result, by tag: text and image
#: (an ``ImageBlock`` is told by its tag, so a program without images never
#: loads :mod:`agcore_sync.llm.media`).
_RESULT_BLOCK_TAGS = ("text", "image")


@attrs.frozen
@value_methods
class ToolCall:
    """One call of a tool: which tool, with what arguments, under which id.

    ``ToolRegistry.invoke_all`` takes these (or the tuples
    ``(name, arguments)`` / ``(id, name, arguments)``, see :meth:`of`).

    Args:
        name: the tool's name.
        arguments: the arguments; anything but a dict is invalid (never
            coerced), reported in the invocation's ``error``.
        id: the model's id for the call, copied to
            :attr:`ToolInvocation.tool_call_id`; None if there is none.

    .. versionadded:: 0.1.0
    """

    name: str
    arguments: Any
    id: Optional[str] = None

    @classmethod
    def of(cls, call: ToolCallLike) -> ToolCall:
        """Return ``call`` as a ToolCall: itself, or made of a ``(name, arguments)`` / ``(id, name, arguments)`` tuple.

        Raises:
            ValueError: ``call`` is neither a ToolCall nor a 2- or 3-item sequence.
        """
        if isinstance(call, ToolCall):
            return call
        if isinstance(call, (tuple, list)):
            if len(call) == 2:
                return cls(call[0], call[1])
            if len(call) == 3:
                return cls(call[1], call[2], call[0])
            raise ValueError(f"a tool call is (name, args) or (tool_call_id, name, args), got {len(call)} items")
        raise ValueError(f"a tool call is a ToolCall or a (name, args) / (tool_call_id, name, args) tuple, "
                         f"got {type(call).__name__}")


#: What ``ToolRegistry.invoke_all`` accepts as a call: a :class:`ToolCall`,
#: ``(name, arguments)`` or ``(tool_call_id, name, arguments)``.
ToolCallLike = Union[ToolCall, Tuple[str, Any], Tuple[Optional[str], str, Any]]


@attrs.frozen
@value_methods
class ToolInvocation:
    """The record of one tool call: what was asked and what came of it.

    Exactly one of ``output`` and ``error`` is meaningful: ``error`` is None
    when the call succeeded.

    Args:
        tool_name: the tool that was called.
        input: the arguments as given (not necessarily a dict).
        output: the tool's result; None on error.
        error: the :class:`~agcore_sync.tools.error.ToolError` (or other
            exception) the call ended with, or None.
        tool_call_id: the model's id for the call, if any.
        duration_s: how long validation and execution took, in seconds; for
            a call that timed out, how long it was waited for.
        text: (keyword-only) the text :meth:`content` returns, when the
            caller already made it (the registry does); None: made on demand.
    """

    tool_name: str
    input: Any
    output: Any = None
    error: Optional[BaseException] = None
    tool_call_id: Optional[str] = None
    duration_s: float = 0.0
    _text: Optional[str] = attrs.field(default=None, eq=False, repr=False, kw_only=True)

    @property
    def ok(self) -> bool:
        """True if the call succeeded."""
        return self.error is None

    def result(self) -> Any:
        """Return the output.

        Raises:
            BaseException: the call's ``error``, if it failed.
        """
        if self.error is not None:
            raise self.error
        return self.output

    @property
    def blocks(self) -> Optional[Tuple[ContentBlock, ...]]:
        """The result as content blocks, when the tool returned an ``ImageBlock``, a ``TextBlock`` or a list of them.

        None for any other result and for an error. The loops send these
        blocks as the tool result (images reach the model as images).

        .. versionadded:: 0.1.0
        """
        if self.error is not None:
            return None
        return _as_blocks(self.output)

    def result_content(self) -> Union[str, Tuple[ContentBlock, ...]]:
        """Return what the tool result carries: :attr:`blocks` when there are some, else :meth:`content`.

        .. versionadded:: 0.1.0
        """
        blocks = self.blocks
        return blocks if blocks is not None else self.content()

    def content(self) -> str:
        """Return the text sent back to the model.

        A str result is itself; a result of blocks (see :attr:`blocks`) is
        the text of its text blocks with ``[image: <media type>]`` for each
        image; any other result is its JSON (``ensure_ascii=False``; dates,
        Decimal, UUID, Enum, sets, dataclasses, attrs and pydantic objects
        as :mod:`.result_json` says); an error is ``Error in tool "<name>": <error>``.

        Raises:
            ToolExecutionError: the result is not JSON-serialisable (bytes,
                arbitrary objects...). Invocations made by a registry never
                raise here: the registry has already turned such a result into
                an error.
        """
        if self._text is None:
            if self.error is not None:
                text = f'Error in tool "{self.tool_name}": {self.error}'
            else:
                text = _result_text(self.tool_name, self.output)
            # Frozen, so cache through object.__setattr__; racing threads compute the same text.
            object.__setattr__(self, "_text", text)
        return self._text


def _as_blocks(output: Any) -> Optional[Tuple[ContentBlock, ...]]:
    """Return ``output`` as tool-result blocks if it is a ``TextBlock`` / ``ImageBlock`` or a non-empty list of them."""
    if _is_result_block(output):
        return (output,)
    if isinstance(output, (list, tuple)) and output and all(_is_result_block(b) for b in output):
        return tuple(output)
    return None


def _is_result_block(value: Any) -> bool:
    return isinstance(value, ContentBlock) and value.type in _RESULT_BLOCK_TAGS


def _result_text(tool_name: str, output: Any) -> str:
    if isinstance(output, str):
        return output
    blocks = _as_blocks(output)
    if blocks is not None:
        return "".join(b.text if isinstance(b, TextBlock) else f"[image: {b.media_type or 'from a URL'}]"
                       for b in blocks)
    try:
        return result_text(output)
    except ToolExecutionError as exc:
        raise ToolExecutionError(f'tool "{tool_name}": {exc}', tool_name=tool_name) from exc.__cause__


class CompletionCallback(Protocol):
    """The ``on_complete(position, invocation)`` callback of ``ToolRegistry.invoke_all``.

    Called once per call of a batch, as soon as its result is known;
    ``position`` indexes the batch's calls. It runs in the thread that
    settled the call: a pool worker (in the copy of the submitting thread's
    ``contextvars`` context that the call's tool ran in) or the submitting
    thread itself.
    """

    def __call__(self, position: int, invocation: ToolInvocation) -> None:
        """Take the result of the call at ``position``."""
