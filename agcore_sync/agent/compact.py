"""Compaction: keeping a request under the model's context limit.

A :class:`CompactConfig` is called by the cycle before every provider call,
in both tool loops: ``request = compact(request, provider)``. It changes the
request only, never the stored history.

- ``"truncate"`` drops whole messages, oldest first, never the newest
  ``keep_last_messages`` ones, and never a tool_use without its tool_result
  or the reverse (an assistant message with tool calls and the results that
  answer it go together).
- ``"summarize"`` replaces every message it may drop by one user message
  holding a summary, made with one extra provider call (cached, so the same
  old messages are summarised once, not before every call).

The system prompt is counted and never dropped. If the request still does
not fit, :class:`~agcore_sync.errors.ContextOverflowError` is raised and
nothing is sent. Token counts are estimates: by default ``ceil(len(json) /
4)`` over the request's JSON, a common rule of thumb for English text;
pass ``token_counter`` for a real tokenizer.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence

import attrs

from agcore_sync import _instrument
from agcore_sync.errors import ContextOverflowError
from agcore_sync.llm.provider import LlmProvider
from agcore_sync.llm.tokens import estimate_tokens  # its home; still importable from here
from agcore_sync.llm.types import Message, MessageRequest, Role

__all__ = ["CompactConfig", "estimate_tokens", "SUMMARY_PREFIX"]

logger = _instrument.get_logger("agcore_sync.compact")

#: Starts the user message that replaces summarised history.
SUMMARY_PREFIX = "Summary of the earlier conversation:\n"

_SUMMARY_INSTRUCTION = (
    "Summarise the conversation above for your own later use: keep facts, decisions, numbers, "
    "names and open questions; leave out pleasantries. Answer with the summary only."
)


def _units(messages: Sequence[Message]) -> List[List[Message]]:
    """Group messages so that tool calls and their results stay together."""
    units: List[List[Message]] = []
    for message in messages:
        answers_previous = message.role is Role.TOOL or (
            message.role is Role.USER and message.content
            and all(getattr(b, "type", "") == "tool_result" for b in message.content)
        )
        if answers_previous and units and units[-1][0].tool_uses:
            units[-1].append(message)
        else:
            units.append([message])
    return units


def _check_strategy(_instance: Any, _attribute: Any, value: str) -> None:
    if value not in ("truncate", "summarize"):
        raise ValueError(f'strategy must be "truncate" or "summarize", got {value!r}')


@attrs.frozen
class CompactConfig:
    """How to keep requests under a context limit.

    Args:
        max_context_tokens: the most tokens a request may hold (estimated).
        keep_last_messages: the newest messages that are never dropped.
        strategy: ``"truncate"`` or ``"summarize"``.
        token_counter: ``request -> int``; None uses :func:`estimate_tokens`.
    """

    max_context_tokens: int = attrs.field(validator=attrs.validators.gt(0))
    keep_last_messages: int = attrs.field(default=4, validator=attrs.validators.ge(0))
    strategy: str = attrs.field(default="truncate", validator=_check_strategy)
    token_counter: Optional[Callable[[MessageRequest], int]] = attrs.field(default=None, eq=False)
    _summaries: Dict[Any, Any] = attrs.field(factory=dict, init=False, eq=False, repr=False)

    def count(self, request: MessageRequest) -> int:
        """Return the (estimated) tokens of ``request``."""
        return (self.token_counter or estimate_tokens)(request)

    def __call__(self, request: MessageRequest, provider: Optional[LlmProvider] = None) -> MessageRequest:
        """Return ``request``, compacted if it is over the limit.

        Raises:
            ContextOverflowError: it cannot be brought under the limit.
        """
        if self.count(request) <= self.max_context_tokens:
            return request
        units = _units(request.messages)
        protected = 0
        kept = len(units)
        # Units that hold any of the newest keep_last_messages messages stay.
        seen = 0
        while kept > 0 and seen < self.keep_last_messages:
            kept -= 1
            seen += len(units[kept])
            protected += 1
        droppable = len(units) - protected
        if self.strategy == "summarize" and provider is not None and droppable:
            dropped = [m for unit in units[:droppable] for m in unit]
            rest = [m for unit in units[droppable:] for m in unit]
            reused = self._reuse_summary(request, dropped, rest)
            if reused is not None:
                return reused
            candidate = attrs.evolve(request, messages=(self._summary(request, dropped, provider), *rest))
            if self.count(candidate) <= self.max_context_tokens:
                return candidate
        else:
            for cut in range(1, droppable + 1):
                candidate = attrs.evolve(request, messages=tuple(m for unit in units[cut:] for m in unit))
                if self.count(candidate) <= self.max_context_tokens:
                    logger.debug("compaction dropped the %d oldest messages", len(request.messages) -
                                 len(candidate.messages))
                    return candidate
        raise ContextOverflowError(
            f"the request needs about {self.count(request)} tokens and cannot be brought under "
            f"max_context_tokens={self.max_context_tokens} without dropping the system prompt or the "
            f"newest {self.keep_last_messages} messages; nothing was sent"
        )

    def _reuse_summary(self, request: MessageRequest, dropped: List[Message],
                       rest: List[Message]) -> Optional[MessageRequest]:
        # The history grows by a round per call, so the messages to drop
        # grow too: while they still start with the ones already summarised,
        # keep that summary and send the newer messages as they are, if that fits.
        for prefix, summary in self._summaries.values():
            if len(prefix) <= len(dropped) and dropped[:len(prefix)] == prefix:
                candidate = attrs.evolve(request, messages=(summary, *dropped[len(prefix):], *rest))
                if self.count(candidate) <= self.max_context_tokens:
                    return candidate
        return None

    def _summary(self, request: MessageRequest, dropped: List[Message], provider: LlmProvider) -> Message:
        # The history is not changed, so the same old messages come back on
        # every call: summarise each distinct prefix once.
        key = tuple(id(m) for m in dropped)
        cached = self._summaries.get(key)
        if cached is not None and cached[0] == dropped:
            return cached[1]
        summary_request = MessageRequest(
            model=request.model, messages=(*dropped, Message.user(_SUMMARY_INSTRUCTION)),
            max_tokens=request.max_tokens,
        )
        summary = Message.user(SUMMARY_PREFIX + provider.chat(summary_request).message.text)
        self._summaries.clear()
        self._summaries[key] = (list(dropped), summary)
        return summary
