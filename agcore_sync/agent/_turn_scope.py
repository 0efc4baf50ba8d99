"""The open turn's log id and ``invoke_agent`` span, as a session holds them.

A session opens one :class:`TurnScope` per run of a turn (a submit, or a
resume of a paused turn: a pause ends the span, since the turn may resume
in another process), makes it current around the work it starts (the
worker threads copy that context) and closes it when the turn ends or
pauses, whichever thread that happens in.
"""

from __future__ import annotations

import contextlib
from typing import Any, Optional

from agcore_sync import _instrument

__all__ = ["TurnScope"]


class TurnScope:
    """Holds the open turn of one session (or none)."""

    __slots__ = ("_turn",)

    def __init__(self) -> None:
        self._turn: Optional[_instrument.TurnScope] = None

    def open(self, session: Any) -> None:
        """Start a turn: a new log id, and a span when telemetry is on."""
        self._turn = _instrument.begin_turn(session)

    def current(self) -> Any:
        """Return a context manager that makes the open turn current (a no-op without one)."""
        return self._turn.activate() if self._turn is not None else contextlib.nullcontext()

    def close(self, record: Any = None, error: Optional[BaseException] = None) -> None:
        """End the open turn's span, with ``record``'s usage or ``error``; once."""
        turn, self._turn = self._turn, None
        if turn is not None:
            if error is not None:
                turn.fail(error)
            turn.end(record)
