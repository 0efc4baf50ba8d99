"""OutputPlan: how one call or turn asks for structured output, and reads the answer.

Every submit method that takes ``output=`` builds one :class:`OutputPlan`
at the call (so a schema ``jsonschema`` cannot compile raises there, before
any request) and the loops consult it at three points:

1. building each request (:meth:`OutputPlan.adjust`): ``"native"`` puts the
   schema on ``MessageRequest.output`` (the providers send OpenAI
   ``response_format`` / Anthropic ``output_config.format``); ``"tool"``
   offers the ``final_result`` tool, forced when it is the only tool, else
   beside the others with ``tool_choice="required"``; ``"prompted"`` appends
   the schema to the system prompt;
2. reading a response (:meth:`OutputPlan.is_answer`, :meth:`OutputPlan.settle`):
   in the native and prompted modes an answer is a response without tool
   calls, in the tool mode one that calls ``final_result`` (or, against the
   forced choice, calls nothing); a refusal (``StopReason.CONTENT_FILTER``)
   is an :class:`~agcore_sync.llm.errors.OutputRefusedError`, never retried;
   anything else is parsed and validated;
3. after a failed answer (:meth:`OutputPlan.retry_messages`): the messages
   that send the validation errors back (a user message, or the output
   tool's error result), and after a good one in the tool mode
   (:meth:`OutputPlan.closing_messages`) the tool results that pair every
   call of the final message, so the history stays valid for the next turn.

Pure: no I/O, no threads. :mod:`agcore_sync.llm.output` (and jsonschema
with it) is imported by the first plan, not with the loops: a program that
never asks for structured output never loads it.
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

import attrs

from agcore_sync.llm.errors import LlmError, OutputRefusedError, OutputValidationError
from agcore_sync.llm.types import Message, MessageRequest, MessageResponse, Role, StopReason, ToolResultBlock
from agcore_sync.loop.config import CycleConfig

__all__ = ["OutputPlan", "FINAL_RESULT_TEXT", "NOT_RUN_TEXT"]

#: The ``"tool"`` mode's tool name (``agcore_sync.llm.output.OUTPUT_TOOL_NAME``, checked by a test).
OUTPUT_TOOL_NAME = "final_result"

#: The tool result the ``"tool"`` mode's accepted ``final_result`` call gets.
FINAL_RESULT_TEXT = "Final answer received."
#: The tool result of any other call in the message that gave the final answer.
NOT_RUN_TEXT = "Not run: the final answer was given in the same message."


class OutputPlan:
    """The structured output of one call or turn: its schema, mode and retry budget.

    Args:
        output: anything ``output=`` takes (see :class:`~agcore_sync.llm.output.OutputSchema`).
        config: supplies ``output_mode`` and ``output_retries``.

    Raises:
        TypeError, ValueError: ``output`` cannot be a schema (from ``OutputSchema``).
    """

    def __init__(self, output: Any, config: CycleConfig) -> None:
        from agcore_sync.llm import output as wire  # on first use, see the module docstring

        self._wire = wire
        self.schema = wire.OutputSchema.of(output)
        self.mode = config.output_mode
        self.retries = config.output_retries
        self._tool, self._forced = wire.output_tool(self.schema) if self.mode == "tool" else (None, None)

    @classmethod
    def of(cls, output: Any, config: CycleConfig) -> Optional[OutputPlan]:
        """Return the plan for ``output``, or None when no output was asked for."""
        return None if output is None else cls(output, config)

    # -- requests ---------------------------------------------------------------

    def adjust(self, request: MessageRequest) -> MessageRequest:
        """Return ``request`` with what the mode needs."""
        if self.mode == "native":
            return attrs.evolve(request, output=self.schema)
        if self.mode == "prompted":
            instructions = self._wire.prompted_instructions(self.schema)
            system = f"{request.system}\n\n{instructions}" if request.system else instructions
            return attrs.evolve(request, system=system)
        others = tuple(t for t in request.tools if t.name != OUTPUT_TOOL_NAME)
        return attrs.evolve(request, tools=(*others, self._tool), tool_choice="required" if others else self._forced)

    # -- responses --------------------------------------------------------------

    def is_answer(self, response: MessageResponse) -> bool:
        """Tell whether ``response`` is an attempt at the final answer (not a round of tool calls)."""
        calls = response.message.tool_uses
        if self.mode == "tool":
            return not calls or any(call.name == OUTPUT_TOOL_NAME for call in calls)
        return not calls

    def settle(self, response: MessageResponse) -> Tuple[MessageResponse, Optional[LlmError]]:
        """Return ``(response with .output, None)``, or ``(response, the error)`` for a refusal or a bad answer."""
        if response.stop_reason is StopReason.CONTENT_FILTER:
            text = response.message.text or None
            return response, OutputRefusedError(
                f"the model refused to answer in the output schema {self.schema.name!r}"
                + (f": {text[:200]}" if text else ""),
                refusal=text,
            )
        try:
            if self.mode == "tool":
                value = self._parse_tool_call(response)
            else:
                value = self.schema.parse(response.message.text)
        except OutputValidationError as exc:
            return response, exc
        return attrs.evolve(response, output=value), None

    def _parse_tool_call(self, response: MessageResponse) -> Any:
        for call in response.message.tool_uses:
            if call.name == OUTPUT_TOOL_NAME:
                return self.schema.parse_tool_input(call.input)
        raise OutputValidationError(
            f"the model answered without calling the output tool {OUTPUT_TOOL_NAME!r}",
            errors=[f"$: the answer must be given by calling the tool {OUTPUT_TOOL_NAME!r}"],
            raw=response.message.text,
        )

    def retry_messages(self, response: MessageResponse, error: OutputValidationError) -> List[Message]:
        """Return the messages that follow a bad answer and ask for a corrected one."""
        feedback = self._wire.retry_instructions(error)
        calls = response.message.tool_uses
        if self.mode != "tool" or not calls:
            return [Message.user(feedback)]
        return [_results(response, lambda call: (feedback, True) if call.name == OUTPUT_TOOL_NAME
                         else (NOT_RUN_TEXT, True))]

    def closing_messages(self, response: MessageResponse) -> List[Message]:
        """Return what follows an accepted answer: tool results pairing its calls (tool mode), else nothing."""
        if not response.message.tool_uses:
            return []
        return [_results(response, lambda call: (FINAL_RESULT_TEXT, False) if call.name == OUTPUT_TOOL_NAME
                         else (NOT_RUN_TEXT, True))]


def _results(response: MessageResponse, answer: Any) -> Message:
    blocks = []
    for call in response.message.tool_uses:
        text, is_error = answer(call)
        blocks.append(ToolResultBlock(call.id, text, is_error))
    return Message(Role.TOOL, blocks)
