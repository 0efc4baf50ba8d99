"""PausedTurn: where a tool loop stopped to wait for a human, as a value.

When a round has calls that need approval (a tool with
``requires_approval``, or a ``PRE_TOOL_USE`` hook that returned ``Defer``),
a pausable :class:`~agcore_sync.loop.tool_loop.ToolLoop` runs the round's
other calls, then stops: no thread waits. Everything needed to go on later,
in this process or another one, is in a :class:`PausedTurn`: the turn's
messages so far, the pending assistant message and the results its settled
calls already have, the calls that wait, the provider calls made (so
``max_tool_turns`` counts across the pause), the usage so far (so the turn is
counted once, when it really ends) and the repeated-call guard.
``ToolLoop.resume(paused, decisions)`` continues from it. It round-trips
through ``to_dict`` / ``from_dict`` (plain JSON), which is how a session
saves a paused turn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple

import attrs

from agcore_sync._values import as_tuple, value_methods
from agcore_sync.llm.types import Message, MessageResponse, Usage

if TYPE_CHECKING:  # pragma: no cover - the stream events load when a turn first pauses or is restored
    from agcore_sync.llm.events import ToolApprovalRequest

__all__ = ["PausedTurn"]


def _usage_pairs(value: Any) -> Tuple[Tuple[Usage, Optional[str]], ...]:
    return tuple((usage, model) for usage, model in value)


@attrs.frozen(kw_only=True)
@value_methods
class PausedTurn:
    """A tool loop's turn, stopped until its pending calls are decided.

    Args:
        messages: the user message and every complete round before the
            pending one.
        assistant: the pending round's assistant message (all its calls).
        results: the tool-result messages of the round's calls that were
            settled before the pause (ran, refused or denied).
        requests: the calls that wait for a decision, in call order.
        provider_calls: provider calls the turn has made so far.
        usage_by_model: ``(usage, model)`` of every response so far.
        final_response: the response whose calls wait (what ``submit_turn``
            returns when it pauses).
        guard: the repeated-call guard's state: the last call's
            ``(name, canonical arguments)`` (or None) and its run length.
        subagents: the turn's agents-as-tools (JSON-ready, or None): the
            state of each sub-session that waits for approval, and what
            the sub-agents used so far (see ``loop/_nesting.py``).

    .. versionadded:: 0.2
    """

    messages: Tuple[Message, ...] = attrs.field(converter=as_tuple)
    assistant: Message
    results: Tuple[Message, ...] = attrs.field(converter=as_tuple)
    requests: Tuple[ToolApprovalRequest, ...] = attrs.field(converter=as_tuple)
    provider_calls: int
    usage_by_model: Tuple[Tuple[Usage, Optional[str]], ...] = attrs.field(converter=_usage_pairs)
    final_response: MessageResponse
    guard: Tuple[Optional[Tuple[str, str]], int] = (None, 0)
    subagents: Optional[Dict[str, Any]] = None

    @property
    def pending_ids(self) -> Tuple[str, ...]:
        """The ids of the calls that wait, in call order."""
        return tuple(request.tool_call_id for request in self.requests)

    def settled_results(self) -> Dict[str, Message]:
        """Return the settled calls' result messages by tool call id."""
        settled: Dict[str, Message] = {}
        for message in self.results:
            for block in message.content:
                tool_use_id = getattr(block, "tool_use_id", None)
                if tool_use_id is not None:
                    settled[tool_use_id] = message
        return settled

    def to_dict(self) -> Dict[str, Any]:
        """Return a JSON-ready dict."""
        last, count = self.guard
        return {
            "messages": [message.to_dict() for message in self.messages],
            "assistant": self.assistant.to_dict(),
            "results": [message.to_dict() for message in self.results],
            "requests": [request.to_dict() for request in self.requests],
            "provider_calls": self.provider_calls,
            "usage_by_model": [{"usage": usage.to_dict(), "model": model} for usage, model in self.usage_by_model],
            "final_response": self.final_response.to_dict(),
            "guard": {"last": None if last is None else list(last), "count": count},
            "subagents": self.subagents,
        }

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> PausedTurn:
        """Build a paused turn from ``to_dict()`` output."""
        from agcore_sync.llm.events import ToolApprovalRequest

        guard = data.get("guard") or {}
        last = guard.get("last")
        return cls(
            messages=[Message.from_dict(item) for item in data["messages"]],
            assistant=Message.from_dict(data["assistant"]),
            results=[Message.from_dict(item) for item in data["results"]],
            requests=[ToolApprovalRequest.from_dict(item) for item in data["requests"]],
            provider_calls=int(data["provider_calls"]),
            usage_by_model=[(Usage.from_dict(item["usage"]), item.get("model")) for item in data["usage_by_model"]],
            final_response=MessageResponse.from_dict(data["final_response"]),
            guard=(None if last is None else (last[0], last[1]), int(guard.get("count", 0))),
            subagents=data.get("subagents"),
        )
