"""The open turn of a session: what its cycle needs to know, its log id and its span.

A session opens one per run of a turn (a submit, or a resume of a paused
turn: a pause ends the span, since the turn may resume in another process).
Opening points the cycle at the turn (index, prices, the session's usage
limits and what earlier turns used) and hands it the turn's
:class:`~agcore_sync._instrument.TurnScope`, which the tool loop makes
current wherever it runs (the caller's thread or a stream's worker).
Closing ends the span, in whichever thread the turn ends.
"""

from __future__ import annotations

import contextlib
from typing import Any, Optional

from agcore_sync import _instrument

__all__ = ["OpenTurn"]


class OpenTurn:
    """The open turn of one session (or none); owned by the session.

    Args:
        cycle: the session's cycle, which the tool loops read.
    """

    __slots__ = ("_cycle", "_scope")

    def __init__(self, cycle: Any) -> None:
        self._cycle = cycle
        self._scope: Optional[_instrument.TurnScope] = None

    def open(self, session: Any) -> None:
        """Start a turn of ``session``: set up its cycle, a new log id, a span when telemetry is on."""
        cycle = self._cycle
        cycle.turn_index = session.turn_index
        cycle.pricing = session.pricing
        cycle.session_limits = None if session.usage_limits is None else (session.usage_limits, session.usage)
        cycle.session = session  # for a hand-off during the turn (cleared when the turn closes)
        self._scope = cycle.turn_scope = _instrument.begin_turn(session)

    def current(self) -> Any:
        """Return a context manager that makes the open turn current (a no-op without one)."""
        return self._scope.activate() if self._scope is not None else contextlib.nullcontext()

    def close(self, record: Any = None, error: Optional[BaseException] = None) -> None:
        """End the open turn's span, with ``record``'s usage or ``error``; once."""
        scope, self._scope = self._scope, None
        self._cycle.turn_scope = None
        self._cycle.session = None
        if scope is not None:
            if error is not None:
                scope.fail(error)
            scope.end(record)
