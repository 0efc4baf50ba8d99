"""ToolLoopStream: the tool loop on a worker thread, read as a plain iterator.

The stream owns one thread at a time, ``agcore-stream-<n>``, started by the
constructor. The worker runs a :class:`~agcore_sync.loop.tool_loop.ToolLoop`
with ``chat_stream`` and puts every event on a channel (a deque); it never
waits for the consumer except when ``max_buffered_events`` bounds the queue.
A lone tool call runs in the worker itself, watched by the registry's
deadline thread; one that overstays its timeout is abandoned with its
thread, and a new ``agcore-stream-<n>`` goes on with the turn (see
``loop/_driver.py``): :attr:`ToolLoopStream.worker` is the thread driving.
Any failure, even a bug in the loop, becomes a final
:class:`~agcore_sync.llm.events.Error` event: nothing escapes the iterator.

Cancellation: ``close()`` (from any thread), leaving a ``with`` block or
dropping the last reference sets the stream's cancel Event. The worker then
starts no new provider call or tool, closes the open HTTP response and exits
as soon as its running step (a provider read or a tool) returns. The thread
is a daemon so that a stuck tool can never keep the interpreter alive; it
still is joined, with a bound, when the stream ends.

Context: the worker runs the whole loop (provider calls, hooks, tools and
their ``on_complete`` reports) in a copy of the ``contextvars`` context of the
thread that created the stream, taken in the constructor. A ``ContextVar``
set by the caller (a Flask request's id, a tracing span) is seen by hooks and
tools; what they set stays in the copy.

The turn ends exactly once, in the first thread that sees the stream end
(the iterating thread at exhaustion or at its next step after ``close()``,
the thread calling ``close()`` when no thread iterates, or the finaliser):
``new_messages`` and ``final_response`` are set and the cycle's history
gets the user message and every complete round.

A pausable stream (a session's) may instead end paused, its last event an
``ApprovalRequired``: the worker has exited, nothing waits, and
``pending_approvals`` lists the calls; the cycle's history is not touched
(the turn's messages join it when the resumed turn ends).
"""

from __future__ import annotations

import collections
import threading
from typing import Any, Deque, Iterator, Mapping, Optional, Tuple, Union

from agcore_sync import _instrument
from agcore_sync.hooks import Decision
from agcore_sync.llm.events import Error, StreamEvent, ToolApprovalRequest
from agcore_sync.llm.types import Message, MessageResponse
from agcore_sync.loop._conversation import Conversation
from agcore_sync.loop._driver import Drive
from agcore_sync.loop._output import OutputPlan
from agcore_sync.loop.pause import PausedTurn
from agcore_sync.loop.tool_loop import Cancelled, ToolLoop, TurnRecord
from agcore_sync.tools.registry import ToolRegistry

__all__ = ["ToolLoopStream"]

logger = _instrument.get_logger("agcore_sync.stream")

#: Safety net of every blocking wait in a stream (seconds). Waits are woken
#: at once by the other side or by ``close()``; this bound only limits how
#: long a missed wake-up could last.
WAIT_POLL = 0.5

#: How long the thread that ends the stream waits for the worker to exit.
#: The worker normally has already exited (it puts the end marker last);
#: after an early close it may still be inside a tool or a provider read.
WORKER_JOIN_TIMEOUT = 0.2

_DONE = object()
#: What :meth:`_Channel.poll` returns when nothing is queued.
_EMPTY = object()


class _Channel:
    """The event hand-off from the worker (and tool threads) to the consumer.

    A deque plus one Condition: a put is an append, a get a popleft, and the
    Condition is touched only when a side actually sleeps. Under CPython the
    producer keeps the GIL while the consumer wakes, so events pile up and
    the consumer drains them in bursts instead of paying a wake-up each.
    ``maxsize`` bounds it approximately (several tool threads may put at
    once); a put on a full channel waits until the consumer takes one or
    the cancel Event is set.
    """

    __slots__ = ("_items", "_maxsize", "_cond", "_cancel", "_consumer_waits", "_producer_waits")

    def __init__(self, maxsize: int, cancel: threading.Event) -> None:
        self._items: Deque[Any] = collections.deque()
        self._maxsize = maxsize
        self._cond = threading.Condition(threading.Lock())
        self._cancel = cancel
        self._consumer_waits = False
        self._producer_waits = False

    def put(self, item: Any) -> None:
        """Append ``item``; under backpressure wait, but give up once cancelled."""
        items = self._items
        if self._maxsize and len(items) >= self._maxsize:
            with self._cond:
                while True:
                    # The flag goes up before the check: a consumer that takes
                    # an item after the check sees it and wakes us.
                    self._producer_waits = True
                    if len(items) < self._maxsize or self._cancel.is_set():
                        break
                    self._cond.wait(WAIT_POLL)
                self._producer_waits = False
            if self._cancel.is_set():
                return
        items.append(item)
        if self._consumer_waits:
            with self._cond:
                self._cond.notify_all()

    def poll(self) -> Any:
        """Return the next item at once, or ``_EMPTY`` if none is queued."""
        items = self._items
        if items:  # the common case: the worker is ahead, no waiting
            item = items.popleft()
            if self._producer_waits:
                self.wake()
            return item
        return _EMPTY

    def get(self) -> Any:
        """Return the next item; ``_DONE`` once cancelled and empty."""
        items = self._items
        while True:
            if items:
                item = items.popleft()
                if self._producer_waits:
                    with self._cond:
                        self._cond.notify_all()
                return item
            if self._cancel.is_set():
                return _DONE
            with self._cond:
                self._consumer_waits = True
                if not items and not self._cancel.is_set():
                    self._cond.wait(WAIT_POLL)
                self._consumer_waits = False

    def wake(self) -> None:
        """Wake whichever side is waiting."""
        with self._cond:
            self._cond.notify_all()

    def clear_and_wake(self) -> None:
        """Drop what is queued and wake both sides (used by ``close()``)."""
        self._items.clear()
        with self._cond:
            self._cond.notify_all()


class _Ending:
    """How the worker's side ends a stream: the turn's error as an ``Error`` event, then the end marker.

    It holds no reference to the stream, so dropping the stream lets it be
    collected (and closed) while the worker runs.
    """

    def __init__(self, channel: _Channel, cancel: threading.Event) -> None:
        self.channel = channel
        self.cancel = cancel

    def __call__(self, result: Any, error: Optional[BaseException]) -> None:
        put = self.channel.put
        try:
            if error is not None and not isinstance(error, Cancelled) and not self.cancel.is_set():
                logger.debug("tool loop ended with %s", type(error).__name__, exc_info=error)
                put(Error(f"{type(error).__name__}: {error}", error))
        finally:
            put(_DONE)


class ToolLoopStream:
    """A running tool loop, read as ``for event in stream``.

    Created by :meth:`LlmCycle.submit_with_tools_stream`; the worker starts
    at once. Iterating yields provider events, ``ToolExecutionStarted`` /
    ``ToolExecutionCompleted`` around tools, and at most one final
    ``Error``. Use it as a context manager, or call :meth:`close`, to stop
    the work early.

    Args:
        cycle: the conversation (history, requests, hooks, provider).
        registry: the tools.
        prompt: the user message, a str or a :class:`Message` (None when
            ``resume`` is given).
        max_buffered_events: bounds the event queue (None: unbounded).
        pausable: the turn may pause for approval (a session's stream).
        resume: ``(paused, decisions)``: continue a paused turn instead of
            starting one (see :meth:`ToolLoop.resume
            <agcore_sync.loop.tool_loop.ToolLoop.resume>`).
        output: the turn's structured-output plan, or None.

    Attributes:
        new_messages: the messages the turn added (user message first), a
            tuple; ``()`` until the stream has ended, and while the turn is
            paused.
        final_response: the last ``MessageResponse`` received, or None;
            with ``output=`` its ``output`` holds the validated answer.
        error: the exception of the final ``Error`` event, or None.
        pending_approvals: the calls that wait when the stream ended paused
            (its last event ``ApprovalRequired``), else ``()``.
    """

    def __init__(self, cycle: Conversation, registry: ToolRegistry, prompt: Union[str, Message, None], *,
                 max_buffered_events: Optional[int] = None, pausable: bool = False,
                 resume: Optional[Tuple[PausedTurn, Mapping[str, Decision]]] = None,
                 output: Optional[OutputPlan] = None) -> None:
        if max_buffered_events is not None and max_buffered_events < 1:
            raise ValueError(f"max_buffered_events must be None or at least 1, got {max_buffered_events}")
        self._cycle = cycle
        self._cancel = threading.Event()
        self._channel = _Channel(max_buffered_events or 0, self._cancel)
        self._loop = ToolLoop(cycle, registry, emit=self._channel.put, cancel=self._cancel, pausable=pausable,
                              output=output)
        if resume is not None:
            steps = self._loop.resume_steps(*resume)
        elif prompt is not None:
            steps = self._loop.steps(prompt)
        else:
            raise TypeError("ToolLoopStream needs a prompt, or a paused turn to resume")
        # The whole loop runs in a copy of the creator's contextvars context, taken here.
        self._drive = Drive(steps, registry, finish=_Ending(self._channel, self._cancel))
        # Held for the whole end, so a thread that finds the stream ending
        # (a consumer's next(), a close()) returns only once it has ended;
        # reentrant for a hook that closes the stream while the turn ends.
        self._end_lock = threading.RLock()
        self._ending = False
        self._ended = False
        self._iterating = False
        self.new_messages: Tuple[Message, ...] = ()
        self.final_response: Optional[MessageResponse] = None
        self.error: Optional[BaseException] = None
        # A session's open turn (its span, if traced) learns of an early close.
        self._turn = getattr(cycle, "turn_scope", None) or _instrument.current_turn()
        self.pending_approvals: Tuple[ToolApprovalRequest, ...] = ()
        self._drive.start()

    # -- iteration ------------------------------------------------------------

    def __iter__(self) -> Iterator[StreamEvent]:
        return self

    def __next__(self) -> StreamEvent:
        if self._ended:
            raise StopIteration
        if self._cancel.is_set():  # closed from another thread: this step ends it
            self._end()
            raise StopIteration
        item = self._channel.poll()
        if item is _EMPTY:
            self._iterating = True
            try:
                item = self._channel.get()
            finally:
                self._iterating = False
        if item is _DONE:
            self._end()
            raise StopIteration
        if type(item) is Error:
            self.error = item.error
        return item

    # -- ending ---------------------------------------------------------------

    def close(self) -> None:
        """Stop the loop; safe from any thread, idempotent, returns promptly.

        The worker starts no new provider call or tool and exits when its
        running step returns. Complete rounds are kept in the history.
        """
        if self._ended:
            return
        if self._turn is not None and not self._ending:
            self._turn.cancel()
        self._cancel.set()
        self._channel.clear_and_wake()
        if not self._iterating:
            self._end()

    def _end(self) -> None:
        with self._end_lock:
            if self._ending:
                return
            self._ending = True
            try:
                worker = self.worker
                worker.join(WORKER_JOIN_TIMEOUT)
                if worker.is_alive():
                    logger.debug("%s still finishing its running step after close", worker.name)
                record = self._loop.record()
                self.final_response = record.final_response
                if record.paused is None:
                    self.new_messages = record.new_messages
                    self._cycle.extend_messages(record.new_messages)
                else:
                    self.pending_approvals = record.paused.requests
                self._on_end(record)
            finally:
                self._ended = True

    def _on_end(self, record: TurnRecord) -> None:
        """Run once when the stream ends, with the turn's record; subclasses finish their turn here."""

    @property
    def closed(self) -> bool:
        """True once the stream has ended (exhausted or closed)."""
        return self._ended

    @property
    def worker(self) -> threading.Thread:
        """The thread driving the turn, or the last one that did (for tests and diagnostics)."""
        return self._drive.thread  # type: ignore[return-value]

    def __enter__(self) -> ToolLoopStream:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - never raise from a finaliser
            pass
