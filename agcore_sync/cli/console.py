"""Terminal output of a streamed turn, shared by ``agcore-sync demo`` and ``chat``.

:class:`EventPrinter` writes stream events as they come: text as it
streams, a line per tool call with its arguments, a line per result with
its duration (a sub-agent's turn, from an agent used as a tool, drawn
indented inside its call), and, on a terminal only, a spinner with the elapsed time while
tools run. :func:`run_turn` runs one session turn and lets Ctrl-C cancel it.

Threads: :func:`run_turn` owns one thread, ``agcore-cli-turn-<n>``, that
iterates the turn's stream and prints. The main thread only waits for it,
drawing the spinner, so a Ctrl-C (a ``KeyboardInterrupt`` in the main
thread) never lands inside the library: the main thread then closes the
stream (``close()`` is safe from any thread) and the iterating thread ends
the turn at its next step.
"""

from __future__ import annotations

import enum
import itertools
import threading
import time
from typing import Any, Dict, Optional, TextIO, Tuple, Union

from agcore_sync.agent.session import AgentSession
from agcore_sync.cli.interrupt import TurnInterrupt
from agcore_sync.llm.events import (
    Error,
    MessageComplete,
    MessageStart,
    StreamEvent,
    SubagentEvent,
    TextDelta,
    ToolExecutionCompleted,
    ToolExecutionStarted,
)
from agcore_sync.llm.types import Message

__all__ = ["EventPrinter", "TurnOutcome", "run_turn", "one_line", "format_duration"]

#: How often the waiting main thread redraws the spinner (seconds).
SPINNER_INTERVAL = 0.1

#: How long the main thread waits for the turn thread after a cancel. The
#: thread ends at its next step (the stream polls its cancel Event every
#: 50 ms and joins its worker for at most 0.2 s), so this is a safety bound.
CANCEL_JOIN_TIMEOUT = 5.0

#: Longest tool-argument text shown on a tool line, in characters.
MAX_ARGUMENTS_SHOWN = 200

_SPINNER_FRAMES = "|/-\\"
_turn_numbers = itertools.count(1)


class TurnOutcome(enum.Enum):
    """How a turn ended."""

    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


def one_line(text: str) -> str:
    """Collapse every run of whitespace (newlines included) into one space."""
    return " ".join(str(text).split())


def format_duration(seconds: float) -> str:
    """Return ``seconds`` as ``"12 ms"`` below a second, else ``"1.52 s"``."""
    if seconds < 1.0:
        return f"{seconds * 1000:.0f} ms"
    return f"{seconds:.2f} s"


class EventPrinter:
    """Write stream events to a terminal or a file as they arrive.

    Args:
        out: where text and tool lines go.
        spinner: draw a spinner with the elapsed time while tools run
            (only sensible on a terminal).

    Attributes:
        error: the one-line message of the last ``Error`` event, or None.
        exception: the exception the last ``Error`` event carried, or None.
        output: the structured output of the turn's last ``MessageComplete``
            (None when no output was asked for).

    Safe to call from two threads: the turn thread calls :meth:`show`, the
    main thread :meth:`tick` and :meth:`note`; one lock orders the writes.
    """

    def __init__(self, out: TextIO, *, spinner: bool = False) -> None:
        self._out = out
        self._spinner = spinner
        self._lock = threading.Lock()
        self._line_open = False
        self._in_text = False
        self._spinner_width = 0  # characters of the spinner line on screen (0: none)
        self._frames = itertools.cycle(_SPINNER_FRAMES)
        self._running: Dict[str, Tuple[str, float]] = {}
        self._sub_text: Optional[Tuple[str, ...]] = None  # the sub-agent whose text is being written
        self.error: Optional[str] = None
        self.exception: Optional[BaseException] = None
        self.output: Any = None

    def reset(self) -> None:
        """Forget the previous turn's state."""
        with self._lock:
            self._in_text = False
            self._running.clear()
            self.error = None
            self.exception = None
            self.output = None

    def show(self, event: StreamEvent) -> None:
        """Write what ``event`` means for a reader."""
        with self._lock:
            if isinstance(event, SubagentEvent):
                self._show_sub(event)
            elif isinstance(event, TextDelta):
                if not event.text:
                    return
                if not self._in_text or self._sub_text is not None:
                    self._sub_text = None
                    self._start_line()
                    self._write("assistant> ")
                    self._in_text = True
                self._write(event.text)
                self._line_open = not event.text.endswith("\n")
            elif isinstance(event, MessageStart):
                self._in_text = False
            elif isinstance(event, MessageComplete):
                self.output = event.full_response.output
            elif isinstance(event, ToolExecutionStarted):
                self._tool_line(event, "")
                self._running[event.tool_call_id] = (event.tool_name, time.monotonic())
            elif isinstance(event, ToolExecutionCompleted):
                self._tool_line(event, "")
                self._running.pop(event.tool_call_id, None)
            elif isinstance(event, Error):
                self.error = one_line(event.message)
                self.exception = event.error
            self._out.flush()

    def _tool_line(self, event: Any, indent: str) -> None:
        """Write the line of a tool call's start or result, ``indent`` before it."""
        self._start_line()
        self._in_text = False
        self._sub_text = None
        if isinstance(event, ToolExecutionStarted):
            arguments = one_line(event.arguments)
            if len(arguments) > MAX_ARGUMENTS_SHOWN:
                arguments = arguments[:MAX_ARGUMENTS_SHOWN] + "..."
            self._write(f"{indent}  [tool] {event.tool_name} {arguments}\n")
        else:
            mark = "error" if event.is_error else "done"
            self._write(f"{indent}  [{mark}] {event.tool_name} -> {one_line(event.result_summary)} "
                        f"({format_duration(event.duration_s)})\n")

    def _show_sub(self, event: SubagentEvent) -> None:
        """Write a sub-agent's event indented two spaces per level: its text as ``name> ...``, its tool lines."""
        path, inner = [], event
        while isinstance(inner, SubagentEvent):
            path.append(inner.tool_call_id)
            name, inner = inner.agent_name, inner.event
        indent = "  " * len(path)
        if isinstance(inner, TextDelta) and inner.text:
            key = tuple(path)
            if self._sub_text != key:
                self._start_line()
                self._write(f"{indent}  {name}> ")
                self._in_text, self._sub_text = False, key
            self._write(inner.text.replace("\n", "\n" + indent + "  " + " " * (len(name) + 2)))
            self._line_open = True
        elif isinstance(inner, MessageStart):
            self._sub_text = None
        elif isinstance(inner, (ToolExecutionStarted, ToolExecutionCompleted)):
            self._tool_line(inner, indent)

    def tick(self) -> None:
        """Redraw the spinner line if tools are running and the spinner is on."""
        with self._lock:
            if not self._spinner or not self._running or self._line_open:
                return
            now = time.monotonic()
            name, started = min(self._running.values(), key=lambda item: item[1])
            others = len(self._running) - 1
            more = f" (+{others} more)" if others else ""
            line = f"  [{next(self._frames)}] {name}{more} running {now - started:.1f} s"
            # Overwrite with spaces, not an escape sequence, so any terminal shows it right.
            self._out.write("\r" + line.ljust(self._spinner_width))
            self._out.flush()
            self._spinner_width = len(line)

    def note(self, text: str) -> None:
        """Write ``text`` on a line of its own."""
        with self._lock:
            self._start_line()
            self._write(text + "\n")
            self._out.flush()

    def finish(self) -> None:
        """End the current line and clear the spinner."""
        with self._lock:
            self._running.clear()
            self._start_line()
            self._out.flush()

    def _start_line(self) -> None:
        """Clear the spinner and end an open line, so the next write starts a line."""
        if self._spinner_width:
            self._out.write("\r" + " " * self._spinner_width + "\r")
            self._spinner_width = 0
        if self._line_open:
            self._out.write("\n")
            self._line_open = False

    def _write(self, text: str) -> None:
        self._out.write(text)


def run_turn(session: AgentSession, user_input: Union[str, Message], printer: EventPrinter,
             interrupt: Optional[TurnInterrupt] = None, *, output: Any = None) -> TurnOutcome:
    """Run one streamed turn, printing it; Ctrl-C cancels the turn.

    On ``KeyboardInterrupt`` the stream is closed: the turn ends with its
    complete rounds kept and the round in progress dropped. Only once the
    turn has ended is ``interrupt`` fired, so demo tools waiting on it
    return at once without completing that round (which makes what the
    history keeps the same however fast the machine is). A second Ctrl-C
    while the turn winds down is ignored; the wait is bounded.

    Args:
        session: the session to run the turn on.
        user_input: the user's message (text, or a :class:`Message` with images).
        printer: where the turn is written.
        interrupt: fired on cancel; armed before the turn starts.
        output: the structured output to ask for (``printer.output`` has
            the validated value after the turn), or None.

    Returns:
        How the turn ended; on FAILED, ``printer.error`` says why.

    Raises:
        AgentError: the session refused to start the turn (a readonly slot,
            a turn already open); nothing ran.
    """
    if interrupt is not None:
        interrupt.arm()
    printer.reset()
    stream = session.submit_turn_stream(user_input, output=output)
    done = threading.Event()

    def consume() -> None:
        try:
            for event in stream:
                printer.show(event)
        except BaseException as exc:  # noqa: BLE001 - reported like an Error event, never lost
            printer.error = one_line(f"{type(exc).__name__}: {exc}")
            printer.exception = exc
        finally:
            done.set()

    consumer = threading.Thread(target=consume, name=f"agcore-cli-turn-{next(_turn_numbers)}", daemon=True)
    cancelled = False
    try:
        consumer.start()
        while not done.wait(SPINNER_INTERVAL):
            printer.tick()
    except KeyboardInterrupt:
        cancelled = not stream.closed
        stream.close()
    deadline = time.monotonic() + CANCEL_JOIN_TIMEOUT
    while consumer.is_alive() and time.monotonic() < deadline:
        try:
            consumer.join(SPINNER_INTERVAL)
        except KeyboardInterrupt:  # a second Ctrl-C while winding down
            cancelled = cancelled or not stream.closed
            stream.close()
    if cancelled and interrupt is not None:
        interrupt.fire()  # the turn has ended: let its tools go
    printer.finish()
    if cancelled:
        return TurnOutcome.CANCELLED
    return TurnOutcome.FAILED if printer.error is not None else TurnOutcome.COMPLETED

