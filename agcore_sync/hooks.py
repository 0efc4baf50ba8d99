"""Hooks: callbacks the loops fire around turns, provider calls and tool calls.

A hook is ``fn(ctx: HookContext) -> None | Deny``. Hooks run in
registration order, in the thread running the loop (the worker thread for
streams, in the copy of the caller's ``contextvars`` context the worker
runs in, so a ``ContextVar`` set where the stream was created is visible).
A ``PRE_TOOL_USE`` hook decides about the call by what it returns:
:class:`Deny` stops it (the tool never runs and the model gets an
``is_error`` result with the reason); :class:`Defer` asks a human (a
session's turn pauses, see :doc:`/howto/approval`); :class:`Approve` lets a
call run that would otherwise need a human (``requires_approval``); None
leaves the decision to later hooks and to the tool. The first decision
wins; later hooks for that call do not run. A decision returned by any
other event is ignored with a warning. A hook that raises is logged on ``agcore_sync.hooks`` and wrapped
in :class:`HookError` (cause chained), which ends the turn.
"""

from __future__ import annotations

import enum
from typing import Any, Callable, Dict, List, Optional, Union

import attrs

from agcore_sync import _instrument
from agcore_sync._values import value_methods
from agcore_sync.errors import AgcoreError

__all__ = ["HookEvent", "HookContext", "Deny", "Defer", "Approve", "Decision", "Hooks", "HookError", "HookFn"]

logger = _instrument.get_logger("agcore_sync.hooks")


class HookEvent(str, enum.Enum):
    """The points where hooks fire."""

    ON_TURN_START = "on_turn_start"
    ON_TURN_END = "on_turn_end"
    PRE_REQUEST = "pre_request"
    POST_REQUEST = "post_request"
    PRE_TOOL_USE = "pre_tool_use"
    POST_TOOL_USE = "post_tool_use"


@attrs.frozen(kw_only=True)
@value_methods
class HookContext:
    """What a hook is told.

    Attributes:
        event: the event firing.
        turn_index: the session turn (None outside a session).
        request: the ``MessageRequest`` (PRE_REQUEST, POST_REQUEST).
        response: the ``MessageResponse`` (POST_REQUEST).
        tool_name: the tool (PRE_TOOL_USE, POST_TOOL_USE).
        tool_call_id: the call's id (tool events).
        arguments: the call's arguments as a dict (tool events).
        invocation: the ``ToolInvocation`` (POST_TOOL_USE).
    """

    event: HookEvent
    turn_index: Optional[int] = None
    request: Any = None
    response: Any = None
    tool_name: Optional[str] = None
    tool_call_id: Optional[str] = None
    arguments: Optional[Dict[str, Any]] = None
    invocation: Any = None


@attrs.frozen
@value_methods
class Deny:
    """Refuse a tool call; ``reason`` goes to the model.

    Returned by a PRE_TOOL_USE hook, or given to
    :meth:`AgentSession.resume_turn <agcore_sync.agent.session.AgentSession.resume_turn>`
    as the decision about a paused call.
    """

    reason: str = "denied by a PRE_TOOL_USE hook"


@attrs.frozen
@value_methods
class Approve:
    """Let a tool call run.

    Given to :meth:`AgentSession.resume_turn
    <agcore_sync.agent.session.AgentSession.resume_turn>` as the decision
    about a paused call; returned by a PRE_TOOL_USE hook, it lets a call run
    without asking a human even when its tool has ``requires_approval``
    (a policy such as "reads under /tmp are fine").

    .. versionadded:: 0.2
    """


@attrs.frozen
@value_methods
class Defer:
    """Returned by a PRE_TOOL_USE hook to have a human decide about the call.

    In a session the turn pauses once the round's other calls have run:
    the call is listed in ``session.pending_approvals`` and the turn goes on
    with :meth:`AgentSession.resume_turn
    <agcore_sync.agent.session.AgentSession.resume_turn>`. Outside a session
    (the ``LlmCycle`` loops) nobody can be asked, so the call is answered with
    a ``PermissionDeniedError`` result saying so.

    .. versionadded:: 0.2
    """


#: What a PRE_TOOL_USE hook may decide (None: no decision).
Decision = Union[Deny, Defer, Approve]


class HookError(AgcoreError):
    """A hook raised; the original exception is ``__cause__``.

    Attributes:
        event: the hook event that was firing.
    """

    def __init__(self, message: str, event: Optional[HookEvent] = None) -> None:
        super().__init__(message)
        self.event = event


#: The signature of a hook.
HookFn = Callable[[HookContext], Optional[Decision]]


class Hooks:
    """An ordered set of hooks per :class:`HookEvent`.

    Example::

        hooks = Hooks()
        hooks.on(HookEvent.PRE_TOOL_USE, lambda ctx: Deny("no shell") if ctx.tool_name == "sh" else None)
    """

    def __init__(self) -> None:
        self._hooks: Dict[HookEvent, List[HookFn]] = {event: [] for event in HookEvent}

    def on(self, event: HookEvent, fn: HookFn) -> HookFn:
        """Register ``fn`` for ``event``; return ``fn`` (usable as a decorator body)."""
        self._hooks[HookEvent(event)].append(fn)
        return fn

    def __bool__(self) -> bool:
        return any(self._hooks.values())

    def has(self, event: HookEvent) -> bool:
        """Return True if at least one hook is registered for ``event``."""
        return bool(self._hooks[event])

    def fire(self, ctx: HookContext) -> Optional[Decision]:
        """Run the hooks of ``ctx.event`` in order.

        Returns:
            The first decision (:class:`Deny`, :class:`Defer` or
            :class:`Approve`) of a PRE_TOOL_USE hook, else None.

        Raises:
            HookError: a hook raised (later hooks do not run).
        """
        for fn in self._hooks[ctx.event]:
            try:
                result = fn(ctx)
            except Exception as exc:
                name = getattr(fn, "__qualname__", repr(fn))
                logger.exception("hook %s for %s raised", name, ctx.event.value)
                raise HookError(f"hook {name} for {ctx.event.value} raised {type(exc).__name__}: {exc}",
                                ctx.event) from exc
            if isinstance(result, (Deny, Defer, Approve)):
                if ctx.event is HookEvent.PRE_TOOL_USE:
                    return result
                logger.warning("%s returned by a %s hook is ignored", type(result).__name__, ctx.event.value)
        return None
