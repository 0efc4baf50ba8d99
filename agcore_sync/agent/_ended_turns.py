"""Which responses belong to turns that already ended, so ``finalize_turn`` never counts one twice."""

from __future__ import annotations

import weakref
from typing import Sequence, Tuple

from agcore_sync.llm.types import MessageResponse

__all__ = ["EndedTurns"]


class EndedTurns:
    """Every response of every ended turn (by identity, held weakly) and the last turn's (by equality too).

    A seed-style caller passes the response it got back (any round's, of any
    ended turn), or a copy of one of the last turn's (rebuilt from the
    events, or through ``to_dict``): both name a turn that already ended.
    """

    def __init__(self) -> None:
        self._finals: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
        self._last: Tuple[MessageResponse, ...] = ()

    def add_final(self, response: MessageResponse) -> None:
        """Name ``response`` as the final response of an ended (or ending) turn."""
        self._finals[id(response)] = response

    def ended(self, final: MessageResponse | None, responses: Sequence[MessageResponse]) -> None:
        """Record a turn that ended with ``final`` after receiving ``responses``."""
        if final is not None:
            self.add_final(final)
        for response in responses:
            self.add_final(response)
        self._last = tuple(responses)

    def __contains__(self, response: MessageResponse) -> bool:
        if self._finals.get(id(response)) is response:
            return True
        return any(seen is response or seen == response for seen in self._last)
