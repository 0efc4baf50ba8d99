"""Paused turns, the session's side: checking decisions and cancelling.

A session's turn pauses when a round has calls that need a human (see
:mod:`agcore_sync.loop.pause`). The session keeps the
:class:`~agcore_sync.loop.pause.PausedTurn` (and saves it with ``to_dict``);
this module holds the two rules it applies to one:

- :func:`check_decisions`: ``resume_turn`` takes exactly one
  :class:`~agcore_sync.hooks.Approve` or :class:`~agcore_sync.hooks.Deny`
  per waiting call, keyed by tool call id; anything else is an
  :class:`~agcore_sync.agent.errors.ApprovalDecisionError` and nothing
  changes.
- :func:`cancelled_record`: ``cancel_pending`` ends the turn without asking
  the model again: each waiting call gets an ``is_error`` result saying the
  turn was cancelled, and the turn ends once with all its usage.
- :func:`load_paused`: a saved paused turn whose waiting calls disagree
  with the calls that would run is refused with :class:`AgentError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional

from agcore_sync.agent.errors import AgentError, ApprovalDecisionError
from agcore_sync.hooks import Approve, Decision, Deny
from agcore_sync.llm.types import Message
from agcore_sync.loop.tool_loop import TurnRecord
from agcore_sync.tools.error import PermissionDeniedError
from agcore_sync.tools.invocation import ToolInvocation

if TYPE_CHECKING:  # pragma: no cover - loaded when a turn first pauses
    from agcore_sync.loop.pause import PausedTurn

__all__ = ["check_decisions", "cancelled_record", "load_paused"]

_HOW = ("give one Approve() or Deny(reason) per waiting call, keyed by its tool_call_id "
        "(session.pending_approvals lists them)")


def check_decisions(paused: PausedTurn, decisions: Any, turn_index: int) -> Dict[str, Decision]:
    """Return ``decisions`` as a dict if it decides every waiting call of ``paused``, and nothing else.

    Raises:
        ApprovalDecisionError: not a mapping, an id that names no waiting
            call, a waiting call without a decision, or a decision that is
            neither ``Approve`` nor ``Deny``.
    """
    pending = paused.pending_ids
    where = f"turn {turn_index} waits for calls {list(pending)}"
    if not isinstance(decisions, Mapping):
        raise ApprovalDecisionError(f"decisions must be a dict of tool_call_id -> Approve() | Deny(reason), "
                                    f"not {type(decisions).__name__}; {where}")
    unknown = [key for key in decisions if key not in pending]
    missing = [key for key in pending if key not in decisions]
    if unknown:
        raise ApprovalDecisionError(f"decisions name calls that do not wait: {unknown}; {where}: {_HOW}",
                                    unknown=unknown, missing=missing)
    if missing:
        raise ApprovalDecisionError(f"no decision for calls {missing}; {where}: {_HOW}",
                                    unknown=unknown, missing=missing)
    wrong = {key: type(value).__name__ for key, value in decisions.items() if not isinstance(value, (Approve, Deny))}
    if wrong:
        raise ApprovalDecisionError(f"decisions must be Approve() or Deny(reason); got {wrong}; {where}")
    return dict(decisions)


def load_paused(data: Any) -> Optional[PausedTurn]:
    """Return the paused turn saved as ``data`` (None for None).

    Raises:
        AgentError: its waiting calls disagree with the assistant message's
            calls (a changed id, tool name or arguments, a call shown twice
            or not at all): what the human approves must be what runs.
        KeyError, TypeError: ``data`` is not a saved paused turn.
    """
    if data is None:
        return None
    from agcore_sync.loop.pause import PausedTurn, PausedTurnMismatch  # loaded for a paused turn only

    try:
        return PausedTurn.from_dict(data)
    except PausedTurnMismatch as exc:
        raise AgentError(f"AgentSession.from_dict: {exc}") from None


def cancelled_record(paused: PausedTurn, reason: str) -> TurnRecord:
    """Return the record of ``paused`` ended now: waiting calls answered as cancelled."""
    settled = paused.settled_results()
    results = []
    for call in paused.assistant.tool_uses:
        if call.id in settled:
            results.append(settled[call.id])
            continue
        error = PermissionDeniedError(f"the call was not run: the turn was cancelled ({reason})", call.name)
        text = ToolInvocation(call.name, call.input, error=error, tool_call_id=call.id).content()
        results.append(Message.tool_result(call.id, text, True))
    return TurnRecord(new_messages=[*paused.messages, paused.assistant, *results],
                      usage_by_model=paused.usage_by_model, responses=[paused.final_response],
                      final_response=paused.final_response)
