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

What the human approves is what runs: a paused turn whose waiting calls
(``requests``, what a UI shows) do not agree with the calls of its
``assistant`` message (what :meth:`ToolLoop.resume` runs), by id, name or
arguments, cannot be built (``ValueError``; ``AgentSession.from_dict`` and
``load`` turn it into their errors), so a stored turn changed behind the
human's back never runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple

import attrs

from agcore_sync._values import as_tuple, value_methods
from agcore_sync.llm.types import Message, MessageResponse, Usage

if TYPE_CHECKING:  # pragma: no cover - the stream events load when a turn first pauses or is restored
    from agcore_sync.llm.events import ToolApprovalRequest

__all__ = ["PausedTurn", "PausedTurnMismatch"]


class PausedTurnMismatch(ValueError):
    """A paused turn whose waiting calls disagree with the calls of its assistant message.

    .. versionadded:: 0.3
    """


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

    def __attrs_post_init__(self) -> None:
        problem = self._disagreement()
        if problem is not None:
            raise PausedTurnMismatch(f"the paused turn does not hold together: {problem}; it is refused, "
                             "so that no call runs that the human did not see")

    def _disagreement(self) -> Optional[str]:
        """Say how ``requests``, ``results`` and the assistant's calls disagree, or return None."""
        calls: Dict[str, Any] = {}
        for call in self.assistant.tool_uses:
            if call.id in calls:
                return f"two calls of the assistant message share the id {call.id!r}"
            calls[call.id] = call
        settled = self.settled_results()
        for tool_use_id in settled:
            if tool_use_id not in calls:
                return f"a settled result answers {tool_use_id!r}, which is no call of the assistant message"
        waiting = set()
        for request in self.requests:
            call = calls.get(request.tool_call_id)
            if call is None:
                return f"the waiting call {request.tool_call_id!r} is no call of the assistant message"
            if request.tool_call_id in waiting or request.tool_call_id in settled:
                return f"the call {request.tool_call_id!r} waits twice, or waits and was settled"
            waiting.add(request.tool_call_id)
            arguments = call.input if isinstance(call.input, dict) else {}
            if request.tool_name != call.name:
                return (f"the waiting call {request.tool_call_id!r} shows tool {request.tool_name!r}, "
                        f"the assistant message calls {call.name!r}")
            if request.arguments != arguments:
                return f"the waiting call {request.tool_call_id!r} shows other arguments than the assistant message's"
        unseen = [call_id for call_id in calls if call_id not in waiting and call_id not in settled]
        if unseen:
            return f"the assistant message's calls {unseen} neither wait nor were settled"
        return None

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
        }

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> PausedTurn:
        """Build a paused turn from ``to_dict()`` output.

        Raises:
            PausedTurnMismatch: its waiting calls disagree with the assistant
                message's calls (see the module's docstring).
            KeyError, TypeError: ``data`` is not ``to_dict()`` output.
        """
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
        )
