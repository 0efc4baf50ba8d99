"""Ctrl-C: the per-turn Event that cuts interruptible tools short, and the exit status.

It sits apart from the demo so that the console printer (``console.py``),
which arms and fires it around every turn, does not import the demo, and
the demo tools (``demo.py``), which wait on it, do not import the printer.
"""

from __future__ import annotations

import threading

__all__ = ["EXIT_INTERRUPTED", "TurnInterrupt"]

#: Exit status after Ctrl-C (128 + SIGINT, the shell's convention).
EXIT_INTERRUPTED = 130


class TurnInterrupt:
    """The Event the interruptible demo tools wait on, renewed each turn.

    The command line calls :meth:`arm` before a turn and :meth:`fire` when
    the user cancels it; a tool reads :meth:`current` when it starts, so a
    tool of a cancelled turn returns at once while later turns are not
    affected.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._event = threading.Event()

    def arm(self) -> None:
        """Start a new turn: tools from now on wait on a fresh Event."""
        with self._lock:
            self._event = threading.Event()

    def fire(self) -> None:
        """Cut short every tool of the current turn; idempotent, any thread."""
        with self._lock:
            self._event.set()

    def current(self) -> threading.Event:
        """Return the Event of the current turn."""
        with self._lock:
            return self._event
