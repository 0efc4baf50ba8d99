"""TurnStream: a session turn's stream, which ends that turn itself.

A :class:`~agcore_sync.loop.tool_stream.ToolLoopStream` (one worker thread,
owned and joined by the stream) whose end also ends the session's turn, in
the first thread that sees the stream end. Its turn may pause for approval
instead (its last event then is ``ApprovalRequired``); the session keeps
the paused turn. Created by :meth:`AgentSession.submit_turn_stream
<agcore_sync.agent.session.AgentSession.submit_turn_stream>` and
:meth:`AgentSession.resume_turn_stream
<agcore_sync.agent.session.AgentSession.resume_turn_stream>`.
"""

from __future__ import annotations

from typing import Callable, Mapping, Optional, Tuple, Union

from agcore_sync.hooks import Decision, HookError
from agcore_sync.llm.types import Message
from agcore_sync.loop._output import OutputPlan
from agcore_sync.loop.cycle import LlmCycle
from agcore_sync.loop.pause import PausedTurn
from agcore_sync.loop.tool_loop import TurnRecord
from agcore_sync.loop.tool_stream import ToolLoopStream
from agcore_sync.tools.registry import ToolRegistry

__all__ = ["TurnStream"]


class TurnStream(ToolLoopStream):
    """A :class:`ToolLoopStream` that also ends its session turn.

    The turn ends when the stream is exhausted, closed, or collected,
    whichever comes first (see :mod:`agcore_sync.loop.tool_stream`).
    Created by :meth:`AgentSession.submit_turn_stream
    <agcore_sync.agent.session.AgentSession.submit_turn_stream>`.

    Its turn may pause for approval: then the last event is
    ``ApprovalRequired`` and ``pending_approvals`` lists the calls.

    Args:
        cycle: the session's cycle, bound to its current slot.
        registry: the tools.
        user_input: the turn's user message, a str or a ``Message`` (None when resuming).
        end_turn: called once with the turn's
            :class:`~agcore_sync.loop.tool_loop.TurnRecord` when the stream
            ends (the messages are already in the cycle's history, unless the
            turn paused).
        max_buffered_events: bounds the event queue (None: unbounded).
        resume: ``(paused, decisions)`` to continue a paused turn.
        output: the turn's structured-output plan, or None.
    """

    def __init__(self, cycle: LlmCycle, registry: ToolRegistry, user_input: Union[str, Message, None], *,
                 end_turn: Callable[[TurnRecord], None], max_buffered_events: Optional[int] = None,
                 resume: Optional[Tuple[PausedTurn, Mapping[str, Decision]]] = None,
                 output: Optional[OutputPlan] = None) -> None:
        self._end_turn = end_turn
        super().__init__(cycle, registry, user_input, max_buffered_events=max_buffered_events, pausable=True,
                         resume=resume, output=output)

    def _on_end(self, record: TurnRecord) -> None:
        try:
            self._end_turn(record)
        except HookError as exc:
            # The iterator has already ended; the failure is logged (by Hooks)
            # and kept on the stream.
            self.error = self.error or exc
