"""The agents a session has handed off to: who is current, saved and replayed with the session.

A hand-off (:func:`agcore_sync.agent.handoff.handoff`) moves a session to
another agent: its provider, config, system prompt and tools replace the
session's. The session keeps a :class:`Roster` (made at the first hand-off):
the hand-off tools taken, in order, the target sessions (alive, since their
registries run the tools) and the session's own registry. ``to_dict`` saves
the tool names; ``from_dict`` replays them, each tool found in the registry
current at that step, so a loaded session is at the same agent.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from agcore_sync.agent.errors import AgentError

__all__ = ["Roster", "close", "current_agent", "restore", "state", "switched"]


class Roster:
    """A session's hand-offs so far (owned by the session; closed by its ``close()``)."""

    __slots__ = ("root_registry", "chain", "names", "agents")

    def __init__(self, root_registry: Any) -> None:
        self.root_registry = root_registry
        self.chain: List[str] = []  # the hand-off tools' names, in order
        self.names: List[str] = []  # the agents they moved to
        self.agents: List[Any] = []  # the target sessions, closed with the session


def _roster(session: Any) -> Optional[Roster]:
    return getattr(session, "_roster", None)


def switched(session: Any, tool_name: str, agent_name: str, target: Any) -> None:
    """Record that ``session`` moved to ``target`` through the tool ``tool_name``; use its tools from now on."""
    roster = _roster(session)
    if roster is None:
        roster = session._roster = Roster(session.registry)
    roster.chain.append(tool_name)
    roster.names.append(agent_name)
    roster.agents.append(target)
    session.registry = target.registry


def current_agent(session: Any) -> Optional[str]:
    """Return the name of the agent ``session`` was last handed to, or None (its own)."""
    roster = _roster(session)
    return roster.names[-1] if roster is not None and roster.names else None


def state(session: Any) -> Optional[Dict[str, Any]]:
    """Return what ``to_dict`` keeps of the hand-offs (None: none happened)."""
    roster = _roster(session)
    if roster is None or not roster.chain:
        return None
    return {"current": roster.names[-1], "chain": list(roster.chain)}


def restore(session: Any, saved: Optional[Dict[str, Any]]) -> None:
    """Replay the saved hand-offs on a session just built by ``from_dict``.

    Each hand-off tool of the chain is looked up in the registry current at
    its step. When the registry given to ``from_dict`` has none of them, the
    caller passed the current agent's own parts (its provider and tools; the
    saved config and system prompt are already the current agent's): the
    session is taken to be at that agent as it is.

    Raises:
        AgentError: the chain breaks after its first step (a later hand-off tool is missing).
    """
    if not saved:
        return
    chain = list(saved.get("chain") or ())
    for step, tool_name in enumerate(chain):
        tool = session.registry.get(tool_name)
        if tool is None or not hasattr(tool, "restore_into"):
            if step == 0:
                roster = session._roster = Roster(session.registry)
                roster.chain, roster.names = chain, [str(saved.get("current") or chain[-1])]
                return
            close(session)  # the agents made so far
            raise AgentError(f'the saved session was handed off through the tool "{tool_name}", which the registry '
                             "of the agent before it has no hand-off of; register the same handoff() tools as when "
                             "it was saved")
        tool.restore_into(session)


def close(session: Any) -> None:
    """Close the target sessions and give ``session`` its own registry back."""
    roster = _roster(session)
    if roster is None:
        return
    session.registry = roster.root_registry
    agents, roster.agents = roster.agents, []
    for agent in agents:
        agent.close()
