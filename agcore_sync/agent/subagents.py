"""Agents as tools: :func:`agent_tool` runs one turn of a sub-session inside a tool call.

The parent model calls the tool with an input; the tool makes a session with
``factory()`` (only then, never when the tool is made), runs one turn of it
and returns its final text (or its structured output). What the parent
gives the sub-turn, and gets back, goes through the parent loop's
:class:`~agcore_sync.loop._nesting.Nest`:

- in a parent stream, the sub-turn streams too, each event wrapped in a
  :class:`~agcore_sync.llm.events.SubagentEvent` (nested to any depth);
- closing the parent's stream, or the parent's ``tool_timeout_secs``
  passing, stops the sub-turn at its next step;
- the sub-turn's usage rolls up into the parent's (cost, ``UsageLimits``,
  ``TurnRecord.usage_by_agent``, ``AgentSession.usage_by_agent``);
- a sub-turn that pauses for approval pauses the parent: the inner calls are
  listed with ids ``<agent call id>/<inner call id>``, the sub-session's
  state is saved in the parent's paused turn, and resuming the parent
  resumes it (in any process);
- a failure inside the sub-turn is a :class:`SubagentError` tool result:
  the parent's model is told and the parent goes on;
- nesting deeper than ``max_depth`` (an agent that reaches itself through
  its tools) is refused with a :class:`SubagentError` result.

A factory that does not return an ``AgentSession`` is a programming error:
:class:`AgentFactoryError` (a ``TypeError``) at the tool's first call, which
ends the parent turn.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from agcore_sync import _instrument
from agcore_sync.agent.session import AgentSession
from agcore_sync.hooks import Decision
from agcore_sync.llm.events import SubagentEvent
from agcore_sync.loop import _nesting
from agcore_sync.loop.limits import RunUsage
from agcore_sync.loop.tool_loop import Cancelled, OutputPlan, ToolLoop, TurnRecord
from agcore_sync.tools.base import BaseTool
from agcore_sync.tools.error import ToolError, ToolExecutionError

__all__ = ["AgentFactoryError", "DEFAULT_MAX_DEPTH", "SubagentError", "agent_tool", "make_session"]

#: How deep agents may run inside agents' tool calls by default.
DEFAULT_MAX_DEPTH = 5

#: The input schema of an agent tool made without ``input_schema``.
DEFAULT_INPUT_SCHEMA: Dict[str, Any] = {
    "type": "object",
    "properties": {"input": {"type": "string"}},
    "required": ["input"],
}


class AgentFactoryError(ToolError, TypeError):
    """A factory given to :func:`agent_tool` or ``handoff`` returned something that is not an ``AgentSession``.

    Raised when the tool first runs (the factory is not called before): a
    programming error, so it is not recoverable and ends the turn that
    called the tool. It is a ``TypeError`` too.

    .. versionadded:: 0.3
    """

    default_recoverable = False


class SubagentError(ToolExecutionError):
    """A sub-agent's turn failed, or could not run; the parent's model gets it as the tool result.

    Attributes:
        agent_name: the agent tool's name.
        error: what the sub-turn raised (an ``LlmError``, a ``ToolError``,
            a ``UsageLimitExceeded``...), or None when it could not start.

    .. versionadded:: 0.3
    """

    def __init__(self, message: str, agent_name: str, error: Optional[BaseException] = None) -> None:
        super().__init__(message, agent_name)
        self.agent_name = agent_name
        self.error = error


def make_session(factory: Callable[[], Any], what: str) -> AgentSession:
    """Call ``factory`` and return its session.

    Raises:
        AgentFactoryError: it returned something else.
    """
    session = factory()
    if not isinstance(session, AgentSession):
        raise AgentFactoryError(f"{what}: its factory must return an AgentSession, got {type(session).__name__} "
                                f"(pass a function that builds a new AgentSession per call)")
    return session


def _check_factory(factory: Any, owner: str) -> None:
    if not callable(factory):
        raise TypeError(f"{owner}: factory must be a callable returning an AgentSession, "
                        f"got {type(factory).__name__}")


def _check_name(value: Any, owner: str, field: str) -> None:
    if not isinstance(value, str) or not value:
        raise TypeError(f"{owner}: {field} must be a non-empty str, got {value!r}")


class AgentTool(BaseTool):
    """A tool that runs one turn of a sub-agent (made by :func:`agent_tool`; see the module docstring).

    Args:
        factory: makes the sub-agent's session, once per call.
        name: the tool's name, also the agent's name in ``SubagentEvent`` and ``usage_by_agent``.
        description: what the parent's model reads about the agent.
        input_schema: the tool's JSON Schema (None: ``{"input": string}``).
        output: the sub-turn's structured output (as ``submit_turn(output=...)``), or None.
        max_depth: how deep sub-agents may nest under the outermost turn.
    """

    def __init__(self, factory: Callable[[], AgentSession], name: str, description: str,
                 input_schema: Optional[Dict[str, Any]], output: Any, max_depth: int) -> None:
        self.factory = factory
        self.name = name
        self.description = description
        self.parameters = dict(input_schema) if input_schema is not None else DEFAULT_INPUT_SCHEMA
        self.custom_schema = input_schema is not None
        self.output = output
        self.max_depth = max_depth

    def execute(self, args: Dict[str, Any]) -> Any:
        """Run (or resume) the sub-agent's turn; return its final text or output."""
        nest = _nesting.current()
        depth = 1 if nest is None else nest.depth + 1
        if depth > self.max_depth:
            raise SubagentError(
                f'agent "{self.name}" was not run: it would be nested {depth} agents deep, past the limit of '
                f"{self.max_depth} (does an agent reach itself through its tools?); answer without it",
                self.name)
        call_id = _instrument.current_tool_call_id() or ""
        resume = None if nest is None else nest.resume_for(call_id)
        fresh = make_session(self.factory, f'agent tool "{self.name}"')
        session = fresh
        try:
            if resume is not None:
                entry = resume[0]
                session = AgentSession.from_dict(entry["state"], provider=fresh.provider, registry=fresh.registry,
                                                 hooks=fresh.hooks, compact=fresh._cycle.compact,
                                                 pricing=fresh.pricing)
            return self._run(session, nest, call_id, args, resume)
        finally:
            if session is not fresh:
                session.close()
            fresh.close()

    def _run(self, session: AgentSession, nest: Optional[_nesting.Nest], call_id: str, args: Dict[str, Any],
             resume: Optional[Tuple[Dict[str, Any], Dict[str, Decision]]]) -> Any:
        emit = None
        if nest is not None and nest.emit is not None:
            parent_emit, name = nest.emit, self.name

            def emit(event: Any) -> None:
                parent_emit(SubagentEvent(call_id, name, event))

        cancel = _nesting.LinkedCancel(None if nest is None else nest.cancel, None if nest is None else nest.deadline)
        loop = ToolLoop(session._cycle, session.registry, emit=emit, cancel=cancel, pausable=True,
                        output=OutputPlan.of(self.output, session.config))
        reported = {} if resume is None else resume[0].get("reported") or {}
        try:
            if resume is None:
                session._start_turn()
                try:
                    loop.run(args["input"] if not self.custom_schema else json.dumps(args, ensure_ascii=False))
                finally:
                    session._end_turn(loop.record(), append_messages=True)
            else:
                paused, checked = session._take_paused(resume[1])
                try:
                    loop.resume(paused, checked)
                finally:
                    session._end_turn(loop.record(), append_messages=True)
        except Cancelled:
            raise
        except ToolError as exc:
            if isinstance(exc, AgentFactoryError):
                raise
            raise SubagentError(f'agent "{self.name}" failed: {exc}', self.name, exc) from exc
        except Exception as exc:  # noqa: BLE001 - any failure of the sub-turn is the parent's tool result
            raise SubagentError(f'agent "{self.name}" failed: {type(exc).__name__}: {exc}', self.name, exc) from exc
        finally:
            record = loop.record()
            if nest is not None:
                self._report(nest, record, reported)
        return self._result(session, nest, call_id, record)

    def _report(self, nest: _nesting.Nest, record: TurnRecord, reported: Mapping[str, Any]) -> None:
        """Hand the parent what the sub-turn used since the last report (a resumed turn counts from its pause)."""
        base_usage = RunUsage.from_dict(reported["usage"]) if "usage" in reported else RunUsage()
        base_agents = {path: RunUsage.from_dict(used) for path, used in (reported.get("by_agent") or {}).items()}
        by_agent = {path: _nesting.minus(used, base_agents.get(path, RunUsage()))
                    for path, used in record.usage_by_agent.items()}
        nest.report(self.name, list(record.usage_by_model[int(reported.get("pairs", 0)):]),
                    _nesting.minus(record.usage, base_usage), by_agent)

    def _result(self, session: AgentSession, nest: Optional[_nesting.Nest], call_id: str,
                record: TurnRecord) -> Any:
        if record.paused is None:
            response = record.final_response
            if response is None:
                return ""
            return response.output if response.output is not None else response.message.text
        if nest is None or not nest.pausable:
            waiting = [request.tool_name for request in record.paused.requests]
            session.cancel_pending("the calling tool loop cannot pause for approval")
            raise SubagentError(f'agent "{self.name}" needs a human\'s approval for {waiting} and this tool loop '
                                "cannot pause to ask (run the parent in an AgentSession turn)", self.name)
        nest.pause(call_id, {
            "agent": self.name,
            "state": session.to_dict(),
            "requests": [request.to_dict() for request in record.paused.requests],
            "reported": {"pairs": len(record.usage_by_model), "usage": record.usage.to_dict(),
                         "by_agent": {path: used.to_dict() for path, used in record.usage_by_agent.items()}},
        })
        return f'agent "{self.name}" waits for approval'


def agent_tool(factory: Callable[[], AgentSession], *, name: str, description: str,
               input_schema: Optional[Dict[str, Any]] = None, output: Any = None,
               max_depth: int = DEFAULT_MAX_DEPTH) -> BaseTool:
    """Return a tool that runs one turn of the agent ``factory()`` makes, and returns its answer.

    Register it in the parent's registry like any tool. Each call makes a
    new session with ``factory()`` (called only when the tool runs, never
    here), sends it the model's input as the user message and returns the
    turn's final text, or its validated structured output when ``output``
    is given. See :mod:`agcore_sync.agent.subagents` for streaming,
    cancellation, usage, approvals and errors.

    Args:
        factory: a callable returning a new :class:`AgentSession` (its own
            provider, tools, system prompt, config).
        name: the tool's name (and the agent's, in ``SubagentEvent`` and
            ``usage_by_agent``).
        description: what the parent's model reads about the agent.
        input_schema: the tool's JSON Schema; None gives ``{"input": string}``,
            whose value is the sub-session's user message. With a schema of
            your own the user message is the arguments as JSON.
        output: ask the sub-turn for structured output (a type or a JSON
            Schema, as ``submit_turn(output=...)``); the tool returns it.
        max_depth: sub-agents nest at most this deep (default 5); a call
            deeper is refused with a :class:`SubagentError` result.

    Raises:
        TypeError: ``factory`` is not callable, or ``name`` / ``description``
            is not a non-empty str. A factory that returns something other
            than an ``AgentSession`` raises :class:`AgentFactoryError` (a
            ``TypeError``) at the tool's first call.

    .. versionadded:: 0.3
    """
    _check_factory(factory, "agent_tool")
    _check_name(name, "agent_tool", "name")
    _check_name(description, "agent_tool", "description")
    if input_schema is not None and not isinstance(input_schema, dict):
        raise TypeError("agent_tool: input_schema must be a JSON Schema dict or None, "
                        f"got {type(input_schema).__name__}")
    if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 1:
        raise ValueError(f"agent_tool: max_depth must be an int >= 1, got {max_depth!r}")
    return AgentTool(factory, name, description, input_schema, output, max_depth)
