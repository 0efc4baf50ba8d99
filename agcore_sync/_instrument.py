"""The switch between the core and its observers: log fields always, spans when instrumented.

The loops, the providers, the tool registry and the MCP client call the
small functions here at their seams (a turn, a provider call, a tool call,
an MCP request, a retry). Two things hang off them:

1. Log fields. Three context variables hold the ids of the turn, the
   provider call and the tool call running in this context; the
   :class:`LogFields` filter, installed on every library logger by
   :func:`get_logger`, copies them onto each record as ``agcore_turn_id``,
   ``agcore_request_id`` and ``agcore_tool_call_id`` (None outside one).
   The library's threads run work in a copy of the submitter's context, so
   a record logged in a tool thread or a stream worker carries the ids of
   the turn that started it.
2. Spans and metrics, only while an :class:`Observer` is installed (by
   :func:`agcore_sync.telemetry.instrument`). With none, every seam costs a
   ``ContextVar`` set and reset and a ``None`` check; nothing here imports
   opentelemetry, and this module imports nothing of the library (it sits
   next to ``errors.py``, below everything that calls it).

An :class:`Observer` receives the library's own objects (requests,
responses, tool invocations) untouched and turns them into spans; a failure
inside it is logged and never reaches the caller's work.
"""

from __future__ import annotations

import abc
import contextlib
import contextvars
import itertools
import logging
import os
from typing import Any, Dict, Iterator, Optional

__all__ = [
    "LogFields",
    "Observer",
    "SpanHandle",
    "TurnScope",
    "begin_turn",
    "chat",
    "current_tool_call_id",
    "current_turn",
    "get_logger",
    "install",
    "loop_turn",
    "mcp_request",
    "observer",
    "on_fallback",
    "on_http_request",
    "on_provider_answered",
    "on_retry",
    "tool_call",
]

# Turn and request ids are stored as numbers (see _new_id), tool-call ids as the model's text.
_turn_id: contextvars.ContextVar[Optional[int]] = contextvars.ContextVar("agcore_turn_id", default=None)
_request_id: contextvars.ContextVar[Optional[int]] = contextvars.ContextVar("agcore_request_id", default=None)
_tool_call_id: contextvars.ContextVar[Optional[str]] = contextvars.ContextVar("agcore_tool_call_id", default=None)
_turn: contextvars.ContextVar[Optional[TurnScope]] = contextvars.ContextVar("agcore_turn", default=None)


# Ids are a random per-process prefix and a counter: unique enough to join
# log lines and cheap enough for every provider call (no syscall per id).
_PREFIX = os.urandom(8).hex()
_ids = itertools.count(1)


def _new_id() -> int:
    # The hot path stores the number; :func:`_format_id` makes the text when
    # a record is actually logged.
    return next(_ids)


def _format_id(value: Any) -> Any:
    return f"{_PREFIX}-{value:x}" if type(value) is int else value


def _reseed() -> None:
    # A forked worker (gunicorn, RQ) must not repeat its parent's ids.
    global _PREFIX
    _PREFIX = os.urandom(8).hex()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reseed)


# -- log fields ---------------------------------------------------------------


class LogFields(logging.Filter):
    """Copy the current turn, request and tool-call ids onto every record.

    Sets ``record.agcore_turn_id``, ``record.agcore_request_id`` and
    ``record.agcore_tool_call_id`` (None outside a turn, a provider call or
    a tool call); a value the caller passed in ``extra`` is kept. Never
    drops a record. Installed on the library's loggers; add it to a handler
    of your own to stamp your records the same way.

    .. versionadded:: 0.2
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Stamp ``record`` with the ids of its context; return True."""
        fields = record.__dict__
        if "agcore_turn_id" not in fields:
            record.agcore_turn_id = _format_id(_turn_id.get())
        if "agcore_request_id" not in fields:
            record.agcore_request_id = _format_id(_request_id.get())
        if "agcore_tool_call_id" not in fields:
            record.agcore_tool_call_id = _tool_call_id.get()
        return True


_FIELDS = LogFields()


def get_logger(name: str) -> logging.Logger:
    """Return the library logger ``name`` with the :class:`LogFields` filter installed once."""
    logger = logging.getLogger(name)
    if _FIELDS not in logger.filters:
        logger.addFilter(_FIELDS)
    return logger


_log = get_logger("agcore_sync.telemetry")


# -- the observer seam ----------------------------------------------------------


class Observer(abc.ABC):
    """What :mod:`agcore_sync.telemetry` implements: spans for the library's seams.

    Every ``start_*`` returns an opaque span object that the same observer
    later gets back in :meth:`activate`, :meth:`finish` and friends.
    """

    @abc.abstractmethod
    def start_turn(self, session: Any) -> Any:
        """Start the span of a session turn, a child of the current span."""

    @abc.abstractmethod
    def start_chat(self, request: Any, provider: Any, *, stream: bool) -> Any:
        """Start the span of one provider call, a child of the current span."""

    @abc.abstractmethod
    def start_tool(self, name: str, tool_call_id: Optional[str], arguments: Any, tool: Any) -> Any:
        """Start the span of one tool execution, a child of the current span."""

    @abc.abstractmethod
    def start_mcp(self, method: str, params: Optional[Dict[str, Any]], *, server: str,
                  tool_name: Optional[str], transport: Any) -> Any:
        """Start the client span of one MCP request, a child of the current span."""

    @abc.abstractmethod
    def activate(self, span: Any) -> Any:
        """Make ``span`` current in this context; return a token for :meth:`deactivate`."""

    @abc.abstractmethod
    def deactivate(self, token: Any) -> None:
        """Undo :meth:`activate` (in the same context)."""

    @abc.abstractmethod
    def record(self, span: Any, value: Any) -> None:
        """Record a result on ``span`` (a response, a tool invocation, an MCP result, a turn's usage)."""

    @abc.abstractmethod
    def finish(self, span: Any, error: Optional[BaseException], cancelled: bool) -> None:
        """End ``span``: with ``error`` recorded, or as cancelled, or fine."""

    @abc.abstractmethod
    def event(self, name: str, attributes: Dict[str, Any]) -> None:
        """Add an event to the current span (retries)."""

    @abc.abstractmethod
    def set_server(self, url: str) -> None:
        """Note the server address of the current provider call."""

    @abc.abstractmethod
    def trace_meta(self, span: Any) -> Dict[str, str]:
        """Return the trace context of ``span`` as MCP ``_meta`` entries (``traceparent``)."""

    def provider_answered(self, provider: Any, index: int) -> None:  # noqa: B027 - optional, added in 0.2
        """Note on the current span which provider of a fallback list answered (default: nothing)."""


#: The installed observer, or None (the default: no spans, no opentelemetry).
observer: Optional[Observer] = None


def install(new: Optional[Observer]) -> Optional[Observer]:
    """Install ``new`` (None: none); return the one it replaces."""
    global observer
    old, observer = observer, new
    return old


def _safely(what: str, call: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return call(*args, **kwargs)
    except Exception:  # noqa: BLE001 - telemetry never breaks the work it watches
        _log.warning("telemetry failed to %s; the work goes on", what, exc_info=True)
        return None


class SpanHandle:
    """A running span as the seams see it; with no observer every method does nothing.

    Attributes:
        recording: whether an observer records this span; when False,
            :meth:`record` does nothing, so a seam may skip it (and the work
            of building what it would record) on its hot path.
    """

    __slots__ = ("_observer", "_span", "recording", "error", "cancelled")

    def __init__(self, obs: Optional[Observer], span: Any) -> None:
        self._observer = obs
        self._span = span
        self.recording = obs is not None and span is not None
        self.error: Optional[BaseException] = None
        self.cancelled = False

    def record(self, value: Any) -> None:
        """Record a result (a response, an invocation, an MCP result) on the span."""
        if self._observer is not None and self._span is not None:
            _safely("record a result", self._observer.record, self._span, value)

    def fail(self, error: BaseException) -> None:
        """Mark the span failed with ``error`` (the first failure wins)."""
        if self.error is None and not self.cancelled:
            self.error = error

    def cancel(self) -> None:
        """Mark the span cut short by a close (unless it already failed)."""
        if self.error is None:
            self.cancelled = True

    def trace_meta(self) -> Dict[str, str]:
        """Return the span's trace context as ``_meta`` entries ({} with no observer)."""
        if self._observer is None or self._span is None:
            return {}
        return _safely("inject the trace context", self._observer.trace_meta, self._span) or {}

    def _finish(self) -> None:
        if self._observer is not None and self._span is not None:
            _safely("end a span", self._observer.finish, self._span, self.error, self.cancelled)


_NO_SPAN = SpanHandle(None, None)


class _Span:
    """The ``with`` block of one seam: sets a log id and, with an observer, runs a current span.

    A class rather than a generator-based context manager: with no
    observer, entering and leaving cost two ``ContextVar`` operations.
    """

    __slots__ = ("_var", "_value", "_start", "_args", "_kwargs", "_token", "_handle", "_attached", "_cancelled")

    def __init__(self, var: contextvars.ContextVar[Optional[str]], value: Optional[str], start: str,
                 *args: Any, cancelled: Any = (), **kwargs: Any) -> None:
        self._cancelled = cancelled
        self._var = var
        self._value = value
        self._start = start
        self._args = args
        self._kwargs = kwargs
        self._handle = _NO_SPAN
        self._attached: Any = None

    def __enter__(self) -> SpanHandle:
        self._token = self._var.set(self._value)
        obs = observer
        if obs is None:
            return _NO_SPAN
        handle = self._handle = SpanHandle(obs, _safely("start a span", getattr(obs, self._start),
                                                        *self._args, **self._kwargs))
        if handle._span is not None:
            self._attached = _safely("activate a span", obs.activate, handle._span)
        return handle

    def __exit__(self, kind: Any, error: Any, traceback: Any) -> None:
        handle = self._handle
        try:
            if handle is not _NO_SPAN:
                if isinstance(error, self._cancelled):
                    handle.cancel()
                elif error is not None:
                    handle.fail(error)
                handle._finish()  # while current: metric exemplars point at this span
                if self._attached is not None:
                    _safely("deactivate a span", handle._observer.deactivate, self._attached)  # type: ignore[union-attr]
        finally:
            self._var.reset(self._token)


class _IdOnly:
    """The ``with`` block of a seam when no observer is installed: the log id only."""

    __slots__ = ("_var", "_value", "_token")

    def __init__(self, var: contextvars.ContextVar[Any], value: Any) -> None:
        self._var = var
        self._value = value

    def __enter__(self) -> SpanHandle:
        self._token = self._var.set(self._value)
        return _NO_SPAN

    def __exit__(self, *exc_info: Any) -> None:
        self._var.reset(self._token)


class _NoBlock:
    """A ``with`` block that does nothing and yields the no-op span handle."""

    __slots__ = ()

    def __enter__(self) -> SpanHandle:
        return _NO_SPAN

    def __exit__(self, *exc_info: Any) -> None:
        return None


_NO_SPAN_BLOCK = _NoBlock()


def chat(request: Any, provider: Any, *, stream: bool, cancelled: Any = ()) -> Any:
    """Run one provider call (retries included) under a new request id and its ``chat`` span.

    An exception of the ``cancelled`` type(s) ends the span as cut short, not failed.
    """
    if observer is None:
        return _IdOnly(_request_id, next(_ids))
    return _Span(_request_id, _new_id(), "start_chat", request, provider, stream=stream, cancelled=cancelled)


def tool_call(name: str, tool_call_id: Optional[str], arguments: Any, tool: Any) -> Any:
    """Run one tool execution under its tool-call id and its ``execute_tool`` span.

    The registry runs every call in a context copy of its own, so with no
    observer the id is only set (nothing to reset) and the block is a no-op.
    """
    if observer is None:
        _tool_call_id.set(tool_call_id)
        return _NO_SPAN_BLOCK
    return _Span(_tool_call_id, tool_call_id, "start_tool", name, tool_call_id, arguments, tool)


def current_tool_call_id() -> Optional[str]:
    """Return the id of the tool call running in this context, or None."""
    return _tool_call_id.get()


def mcp_request(method: str, params: Optional[Dict[str, Any]], *, server: str, tool_name: Optional[str],
                transport: Any) -> _Span:
    """Run one MCP request under its client span (the request id stays the caller's)."""
    return _Span(_request_id, _request_id.get(), "start_mcp", method, params, server=server,
                 tool_name=tool_name, transport=transport)


def on_retry(error: BaseException, attempt: int, delay: float) -> None:
    """Note on the current span that a failed attempt will be retried after ``delay`` seconds."""
    obs = observer
    if obs is not None:
        _safely("record a retry", obs.event, "agcore.retry",
                {"error.type": type(error).__name__, "agcore.retry.attempt": attempt,
                 "agcore.retry.delay_s": delay})


def on_fallback(error: BaseException, index: int) -> None:
    """Note on the current span that provider number ``index`` of a fallback list failed with ``error``."""
    obs = observer
    if obs is not None:
        _safely("record a fallback", obs.event, "agcore.fallback",
                {"error.type": type(error).__name__, "agcore.fallback.index": index})


def on_provider_answered(provider: Any, index: int) -> None:
    """Note on the current span that ``provider``, number ``index`` of a fallback list, answers."""
    obs = observer
    if obs is not None:
        _safely("note the answering provider", obs.provider_answered, provider, index)


def on_http_request(url: str) -> None:
    """Note the server the current provider call talks to."""
    obs = observer
    if obs is not None:
        _safely("note the server address", obs.set_server, url)


# -- turns ----------------------------------------------------------------------


class TurnScope:
    """One turn: its id for the logs and, when instrumented, its ``invoke_agent`` span.

    A turn may start in one thread and end in another (a streamed turn ends
    where its stream ends), so the span is ended explicitly by :meth:`end`,
    not by a ``with`` block; :meth:`activate` makes the turn current in the
    calling context for the block that starts its work (the worker threads
    copy that context).
    """

    __slots__ = ("_id", "_handle", "_ended")

    def __init__(self, turn_id: int, handle: SpanHandle) -> None:
        self._id = turn_id
        self._handle = handle
        self._ended = False

    @property
    def turn_id(self) -> str:
        """The turn's id, as log records carry it (``agcore_turn_id``)."""
        return _format_id(self._id)

    @contextlib.contextmanager
    def activate(self) -> Iterator[TurnScope]:
        """Make this turn (its id, its span) current in this context for the block."""
        turn_token = _turn.set(self)
        id_token = _turn_id.set(self._id)
        handle = self._handle
        obs = handle._observer
        attached = None
        if obs is not None and handle._span is not None:
            attached = _safely("activate a span", obs.activate, handle._span)
        try:
            yield self
        finally:
            if attached is not None:
                _safely("deactivate a span", obs.deactivate, attached)  # type: ignore[union-attr]
            _turn_id.reset(id_token)
            _turn.reset(turn_token)

    def fail(self, error: BaseException) -> None:
        """Record the turn's failure (the first one wins)."""
        self._handle.fail(error)

    def cancel(self) -> None:
        """Record that the turn was cut short (its stream was closed early)."""
        self._handle.cancel()

    def end(self, usage: Any = None) -> None:
        """End the turn's span once, with ``usage`` (the turn's token counts) recorded."""
        if self._ended:
            return
        self._ended = True
        if usage is not None:
            self._handle.record(usage)
        self._handle._finish()


def begin_turn(session: Any) -> TurnScope:
    """Start a session turn: a new id, and an ``invoke_agent`` span child of the current span."""
    obs = observer
    if obs is None:
        return TurnScope(_new_id(), _NO_SPAN)
    return TurnScope(_new_id(), SpanHandle(obs, _safely("start a span", obs.start_turn, session)))


def current_turn() -> Optional[TurnScope]:
    """Return the turn current in this context, or None."""
    return _turn.get()


@contextlib.contextmanager
def loop_turn(cancelled: Any = (), turn: Optional[TurnScope] = None) -> Iterator[Optional[TurnScope]]:
    """Run a tool loop inside its turn, or give it a turn id of its own.

    ``turn`` (a session's open turn) is made current for the block, in
    whatever thread the loop runs; without one the loop joins the turn
    current here, or gets a fresh ``agcore_turn_id`` for its log records (a
    loop outside a session). A failure escaping the block is recorded on the
    turn; an exception of the ``cancelled`` type(s) marks it cut short.
    """
    if turn is not None and _turn.get() is not turn:
        with turn.activate():
            with loop_turn(cancelled) as same:
                yield same
        return
    turn = _turn.get()
    token = _turn_id.set(_new_id()) if turn is None else None
    try:
        yield turn
    except BaseException as exc:
        if turn is not None:
            if isinstance(exc, cancelled):
                turn.cancel()
            else:
                turn.fail(exc)
        raise
    finally:
        if token is not None:
            _turn_id.reset(token)
