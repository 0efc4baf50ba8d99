"""Hand-offs: :func:`handoff` makes a tool that moves the conversation to another agent.

The model calls the tool (it takes no arguments); the tool makes the target
agent with ``factory()`` (an ``AgentSession`` that serves as the agent's
description: its provider, config, system prompt and tools) and asks the
loop to switch once the round is over. From the next request on, the rest of
the turn runs with the target's provider, config, system prompt and tools, on
the same history (the hand-off call and its result included; an
``input_filter`` may trim it); the session stays with the target for the
next turns, and ``to_dict`` / stores keep who is current (``from_dict``
replays the hand-offs through the same tools). The session's hooks, slots,
usage and limits stay the session's. Handing off to an agent of another
provider works as assigning ``session.provider`` does: each provider sends
the history in its own wire format.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Callable, Dict, List, Optional

from agcore_sync import _instrument
from agcore_sync.agent import _roster
from agcore_sync.agent.session import AgentSession
from agcore_sync.agent.subagents import _check_factory, make_session
from agcore_sync.llm.types import Message
from agcore_sync.loop import _nesting
from agcore_sync.tools.base import BaseTool
from agcore_sync.tools.error import ToolError

__all__ = ["HandoffTool", "handoff"]

#: ``input_filter(history) -> history``: the messages the target agent goes on with.
InputFilter = Callable[[List[Message]], List[Message]]


def _agent_name(factory: Any) -> str:
    name = getattr(factory, "__name__", "") or type(factory).__name__
    name = re.sub(r"[^A-Za-z0-9_-]", "_", name).strip("_")
    return name or "agent"


class HandoffTool(BaseTool):
    """The tool :func:`handoff` returns (see the module docstring).

    Args:
        factory: makes the target agent's session.
        name: the tool's name.
        description: what the model reads about the target.
        agent_name: the target's name (``AgentSession.current_agent`` once handed to).
        input_filter: trims the history at the hand-off, or None.
    """

    parameters: Dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}

    def __init__(self, factory: Callable[[], AgentSession], name: str, description: str, agent_name: str,
                 input_filter: Optional[InputFilter]) -> None:
        self.factory = factory
        self.name = name
        self.description = description
        self.agent_name = agent_name
        self.input_filter = input_filter

    def execute(self, args: Dict[str, Any]) -> Any:
        """Make the target agent and ask the running loop to move to it after this round."""
        nest = _nesting.current()
        if nest is None:
            raise ToolError(f'"{self.name}" hands a turn off to another agent: it only runs inside a tool loop '
                            "(an AgentSession turn)", self.name)
        target = make_session(self.factory, f'handoff "{self.name}"')
        nest.hand_off(_instrument.current_tool_call_id() or "", functools.partial(self._switch, target))
        return f"Transferred to {self.agent_name}; it takes the conversation from here."

    def _switch(self, target: AgentSession, loop: Any) -> Any:
        """Move ``loop`` (and its session) to ``target``; return the registry the loop goes on with."""
        cycle = loop.cycle
        _take_agent(cycle, target)
        if self.input_filter is not None:
            kept = self.input_filter(list(cycle.history_and(loop.new_messages)))
            if not isinstance(kept, list) or not all(isinstance(m, Message) for m in kept):
                raise TypeError(f'handoff "{self.name}": input_filter must return a list of Message')
            cycle.clear()  # the session's slot, trimmed in place
            cycle.extend_messages(kept)
            loop.new_messages = []
        session = getattr(cycle, "session", None)
        if session is not None:
            _roster.switched(session, self.name, self.agent_name, target)
        return target.registry

    def switch_for(self, loop: Any) -> Any:
        """Make the target and move ``loop`` to it (a hand-off asked for in a round that then paused)."""
        return self._switch(make_session(self.factory, f'handoff "{self.name}"'), loop)

    def restore_into(self, session: AgentSession) -> None:
        """Move a session just loaded by ``from_dict`` to this tool's agent (replaying a saved hand-off)."""
        target = make_session(self.factory, f'handoff "{self.name}"')
        _take_agent(session._cycle, target)
        _roster.switched(session, self.name, self.agent_name, target)


def _take_agent(cycle: Any, target: AgentSession) -> None:
    own = target._cycle
    cycle.provider = own.provider
    cycle.config = own.config
    cycle.system_prompt = own.system_prompt
    cycle.compact = own.compact


def handoff(factory: Callable[[], AgentSession], *, name: Optional[str] = None, description: Optional[str] = None,
            input_filter: Optional[InputFilter] = None) -> BaseTool:
    """Return a tool (no arguments) that hands the rest of the turn, and the session, to another agent.

    Register it in the registry of the agent that may hand off. When the
    model calls it, ``factory()`` makes the target (an ``AgentSession``
    whose provider, config, system prompt and tools are the agent's; its
    history is not used); after the round the turn goes on with the target
    on the same history, and so do the next turns
    (``AgentSession.current_agent`` names it; ``to_dict`` keeps it). The
    target may hold hand-off tools of its own (back to triage, on to
    another agent).

    Args:
        factory: a callable returning a new :class:`AgentSession`.
        name: the tool's name (None: ``transfer_to_<factory's name>``).
        description: what the model reads (None: ``"Hand the conversation
            over to the <name> agent."``).
        input_filter: ``filter(history) -> history``, applied once at the
            hand-off to the whole history (the session's and the turn's so
            far, the hand-off call and result last); what it returns
            replaces the session's history. Keep tool calls with their
            results.

    Raises:
        TypeError: ``factory`` is not callable, or ``name`` / ``description``
            is not a str. A factory that returns something other than an
            ``AgentSession`` raises
            :class:`~agcore_sync.agent.subagents.AgentFactoryError` (a
            ``TypeError``) when the model first calls the tool.

    .. versionadded:: 0.3
    """
    _check_factory(factory, "handoff")
    agent = _agent_name(factory)
    for field, value in (("name", name), ("description", description)):
        if value is not None and (not isinstance(value, str) or not value):
            raise TypeError(f"handoff: {field} must be a non-empty str or None, got {value!r}")
    if input_filter is not None and not callable(input_filter):
        raise TypeError(f"handoff: input_filter must be callable or None, got {type(input_filter).__name__}")
    return HandoffTool(factory, name or f"transfer_to_{agent}",
                       description or f"Hand the conversation over to the {agent} agent.", agent, input_filter)
