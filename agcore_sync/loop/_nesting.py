"""Nest: what a tool loop offers the agents it runs as tools, and the hand-offs its tools ask for.

An agent used as a tool (``agcore_sync.agent.subagents.agent_tool``) runs a
turn of its own inside one of the loop's tool calls. It finds the loop that
called it through a ``ContextVar`` the loop sets before it yields a batch
(each batch runs in a copy of the loop's context, see ``loop/_driver.py``),
and through the loop's :class:`Nest` it:

- streams: ``emit`` is the parent's (None when the parent does not stream);
- stops: ``cancel`` is the parent's cancel Event and ``deadline`` the
  running round's tool deadline (see :class:`LinkedCancel`);
- counts: :meth:`Nest.report` hands the sub-turn's usage to the parent,
  which folds it into its own after the batch (:meth:`Nest.fold`);
- pauses: :meth:`Nest.pause` marks its call as waiting for the inner
  calls' approval; the parent pauses with their ids prefixed by the call's
  (``<agent call id>/<inner call id>``) and saves the inner session's state
  in :attr:`PausedTurn.subagents <agcore_sync.loop.pause.PausedTurn.subagents>`;
  on resume :meth:`Nest.load` gives each such call its inner decisions.

A hand-off tool (``agcore_sync.agent.handoff``) asks, through
:meth:`Nest.hand_off`, for the loop to move to another agent once the round
is over. This module does no I/O and starts no thread.
"""

from __future__ import annotations

import contextvars
import threading
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from agcore_sync.hooks import Approve, Decision
from agcore_sync.llm.types import Usage
from agcore_sync.loop.limits import RunUsage, TurnAccount

__all__ = ["LinkedCancel", "Nest", "current", "minus", "nest_of"]

_current: contextvars.ContextVar[Optional[Nest]] = contextvars.ContextVar("agcore_nest", default=None)

#: ``switch(loop) -> registry``: moves a loop to another agent (run by the loop between rounds).
Switch = Callable[[Any], Any]


def current() -> Optional[Nest]:
    """Return the nest of the tool loop whose tool runs in this context, or None."""
    return _current.get()


def minus(a: RunUsage, b: RunUsage) -> RunUsage:
    """Return ``a - b`` field by field (what was used since ``b``)."""
    return RunUsage(requests=a.requests - b.requests, tool_calls=a.tool_calls - b.tool_calls,
                    input_tokens=a.input_tokens - b.input_tokens, output_tokens=a.output_tokens - b.output_tokens,
                    cost_usd=a.cost_usd - b.cost_usd)


class LinkedCancel(threading.Event):
    """A sub-turn's cancel Event: set by itself, when its parent's is set, or once ``deadline`` passes.

    The tool loop only reads it (``is_set`` between steps and per stream
    event, ``wait`` as the sleep between retries), so no thread is needed
    to link it: a parent closed, or a tool call past its timeout, stops the
    sub-turn at its next step.

    Args:
        parent: the parent loop's cancel Event, or None.
        deadline: a ``time.monotonic()`` instant, or None.
    """

    def __init__(self, parent: Optional[threading.Event], deadline: Optional[float]) -> None:
        super().__init__()
        self._parent = parent
        self._deadline = deadline

    def is_set(self) -> bool:
        """Return True once set, once the parent's is set, or past the deadline."""
        if super().is_set() or (self._parent is not None and self._parent.is_set()):
            return True
        return self._deadline is not None and time.monotonic() >= self._deadline

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Wait at most ``timeout`` seconds (and not past the deadline); wake when the parent is set."""
        if self.is_set():
            return True
        if self._deadline is not None:
            left = max(0.0, self._deadline - time.monotonic())
            timeout = left if timeout is None else min(timeout, left)
        if self._parent is not None:
            self._parent.wait(timeout)
        else:
            super().wait(timeout)
        return self.is_set()


class Nest:
    """One tool loop's side of its sub-agents and hand-offs; made by the loop, read by its tools.

    Args:
        emit: the loop's stream callback, or None.
        cancel: the loop's cancel Event.
        pausable: the loop may pause (a session's): a sub-agent may then wait for approval.

    Attributes:
        depth: how many agent tools this loop runs inside (0: a top-level loop).
        deadline: when the running round's tools time out (``time.monotonic()``), or None.
        by_agent: what each sub-agent used in this turn, by path of agent
            names (``"research"``, ``"research/fact_check"``); a path's usage
            includes its own sub-agents'.
        requests, tool_calls: the sub-agents' provider and tool calls folded so far.
    """

    def __init__(self, emit: Optional[Callable[[Any], None]], cancel: threading.Event, pausable: bool) -> None:
        parent = _current.get()
        self.depth = 0 if parent is None else parent.depth + 1
        self.emit = emit
        self.cancel = cancel
        self.pausable = pausable
        self.deadline: Optional[float] = None
        self._lock = threading.Lock()
        self._reports: List[Tuple[str, List[Tuple[Usage, Optional[str]]], RunUsage, Dict[str, RunUsage]]] = []
        self._waiting: Dict[str, Dict[str, Any]] = {}
        self._resuming: Dict[str, Tuple[Dict[str, Any], Dict[str, Decision]]] = {}
        self._switches: Dict[str, Switch] = {}
        self._switched_before_pause: List[str] = []  # hand-off call ids a resumed turn still has to take
        self.by_agent: Dict[str, RunUsage] = {}
        self.requests = 0
        self.tool_calls = 0

    def enter(self) -> None:
        """Make this nest the one the loop's next batch of tools sees."""
        if _current.get() is not self:
            _current.set(self)

    # -- called by tools, in their threads ------------------------------------------

    def report(self, agent_name: str, usage_by_model: List[Tuple[Usage, Optional[str]]], used: RunUsage,
               by_agent: Mapping[str, RunUsage]) -> None:
        """Hand the parent what a sub-turn used (since its last report); folded after the batch."""
        with self._lock:
            self._reports.append((agent_name, list(usage_by_model), used, dict(by_agent)))

    def pause(self, tool_call_id: str, entry: Dict[str, Any]) -> None:
        """Mark the call ``tool_call_id`` as waiting for its sub-agent's approvals.

        ``entry`` is JSON-ready: ``agent`` (its name), ``state`` (the
        sub-session's ``to_dict``), ``requests`` (its pending approvals, as
        dicts) and ``reported`` (what was already reported, for the deltas).
        """
        with self._lock:
            self._waiting[tool_call_id] = entry

    def resume_for(self, tool_call_id: str) -> Optional[Tuple[Dict[str, Any], Dict[str, Decision]]]:
        """Return ``(entry, inner decisions)`` if ``tool_call_id`` resumes a paused sub-agent, else None."""
        return self._resuming.get(tool_call_id)

    def hand_off(self, tool_call_id: str, switch: Switch) -> None:
        """Ask the loop to move to another agent once this round is over (first call of the round wins)."""
        with self._lock:
            self._switches[tool_call_id] = switch

    # -- called by the loop, in its driving thread ---------------------------------------

    def waits(self, tool_call_id: Optional[str]) -> bool:
        """Return True if the call waits for its sub-agent's approvals."""
        return tool_call_id in self._waiting

    def fold(self, usage_by_model: List[Tuple[Usage, Optional[str]]], account: TurnAccount) -> None:
        """Add the reports since the last fold to a loop's ``usage_by_model`` and its turn's ``account``."""
        with self._lock:
            reports, self._reports = self._reports, []
        for agent_name, pairs, used, by_agent in reports:
            usage_by_model.extend(pairs)
            account.requests += used.requests
            account.tool_calls += used.tool_calls
            self.requests += used.requests
            self.tool_calls += used.tool_calls
            self._add(agent_name, used)
            for path, inner in by_agent.items():
                self._add(f"{agent_name}/{path}", inner)

    def _add(self, path: str, used: RunUsage) -> None:
        self.by_agent[path] = self.by_agent.get(path, RunUsage()) + used

    def switch(self, loop: Any, assistant: Any) -> bool:
        """Move ``loop`` to the agent a hand-off tool of the round asked for; return True if one did.

        The first hand-off in call order wins; the others of the round are dropped.
        """
        with self._lock:
            switches, self._switches = self._switches, {}
        for call in assistant.tool_uses:
            if call.id in switches:
                loop.registry = switches[call.id](loop)
                return True
            if call.id in self._switched_before_pause:  # asked for in the round a pause interrupted
                remake = getattr(loop.registry.get(call.name), "switch_for", None)
                if remake is not None:
                    loop.registry = remake(loop)
                    return True
        return False

    def requests_of(self, calls: List[Any]) -> List[Any]:
        """Return the waiting ``calls``' approval requests (for a sub-agent's call, its inner ones, ids prefixed)."""
        from agcore_sync.llm.events import ToolApprovalRequest

        requests = []
        for call in calls:
            entry = self._waiting.get(call.id)
            if entry is None:
                requests.append(ToolApprovalRequest(call.id, call.name, call.input if isinstance(call.input, dict)
                                                    else {}))
            else:
                requests.extend(ToolApprovalRequest(f"{call.id}/{item['tool_call_id']}", item["tool_name"],
                                                    dict(item.get("arguments") or {})) for item in entry["requests"])
        return requests

    def state(self, waiting_ids: List[str]) -> Optional[Dict[str, Any]]:
        """Return what a paused turn keeps of this nest (JSON-ready), or None when there is nothing."""
        waiting = {call_id: self._waiting[call_id] for call_id in waiting_ids if call_id in self._waiting}
        handoffs = list(self._switches)
        if not waiting and not handoffs and not self.by_agent and not self.requests and not self.tool_calls:
            return None
        return {"waiting": waiting, "requests": self.requests, "tool_calls": self.tool_calls,
                "by_agent": {path: used.to_dict() for path, used in self.by_agent.items()}, "handoffs": handoffs}

    def load(self, saved: Optional[Mapping[str, Any]], decisions: Mapping[str, Decision],
             account: TurnAccount) -> Dict[str, Decision]:
        """Take up a paused turn's nest state, its counts into ``account``; return ``decisions`` as the loop sees them.

        A waiting sub-agent call gets ``Approve()`` (it runs again, and
        resumes its sub-session with the decisions of its inner calls, their
        prefix removed); the other decisions are kept.
        """
        if not saved:
            return dict(decisions)
        self.requests = int(saved.get("requests", 0))
        self.tool_calls = int(saved.get("tool_calls", 0))
        account.requests += self.requests
        account.tool_calls += self.tool_calls
        self.by_agent = {path: RunUsage.from_dict(used) for path, used in (saved.get("by_agent") or {}).items()}
        self._switched_before_pause = list(saved.get("handoffs") or ())
        waiting: Dict[str, Any] = dict(saved.get("waiting") or {})
        outer: Dict[str, Decision] = {}
        inner: Dict[str, Dict[str, Decision]] = {call_id: {} for call_id in waiting}
        for key, decision in decisions.items():
            call_id, _, rest = key.partition("/")
            if rest and call_id in waiting:
                inner[call_id][rest] = decision
            else:
                outer[key] = decision
        for call_id, entry in waiting.items():
            outer[call_id] = Approve()
            self._resuming[call_id] = (entry, inner[call_id])
        return outer


def nest_of(nest: Optional[Nest], loop: Any) -> Nest:
    """Return ``nest``, or a new one for ``loop`` if None, made current for the tools ``loop`` runs next.

    Called just before a round's batch is handed over: the round's deadline
    starts here. The loop keeps what it returns (``ToolLoop._nest``).
    """
    if nest is None:
        nest = Nest(loop.emit, loop.cancel, loop.pausable)
    timeout = loop.cycle.config.tool_timeout_secs
    nest.deadline = None if timeout is None else time.monotonic() + timeout
    nest.enter()
    return nest
