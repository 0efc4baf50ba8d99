"""AgentSession: turns over a tool loop, with cost, hooks, slots and resumption.

A turn is one user input and everything the tool loop does for it. It always
ends, completed, failed or closed early: the usage of every response is added
to ``cost_so_far``, the user message and every complete round go into the
current slot, ``ON_TURN_END`` fires and ``turn_index`` grows; then the error
is raised (``submit_turn``) or was the stream's last event. A streamed turn
ends by itself; :meth:`AgentSession.finalize_turn` never counts one twice.

A turn may pause for a human's approval (``requires_approval``, or a
``PRE_TOOL_USE`` hook returning ``Defer``): the round's other calls run, the
stream ends with ``ApprovalRequired``, no thread waits, and the turn (saved by
``to_dict``) goes on with :meth:`AgentSession.resume_turn` or
:meth:`AgentSession.resume_turn_stream` in any process, or ends with
:meth:`AgentSession.cancel_pending`; it still counts once, when it ends.

One turn at a time: starting a turn while one is open raises
:class:`AgentError` (:class:`TurnPausedError` while one is paused). A session
is not meant to be shared by threads without a lock of the caller's.
"""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from agcore_sync import _check
from agcore_sync.agent import _roster
from agcore_sync.agent._ended_turns import EndedTurns
from agcore_sync.agent._format import FORMAT_VERSION, check_document
from agcore_sync.agent._store_mark import StoreMark, read_stored, unreadable
from agcore_sync.agent._turn_scope import OpenTurn
from agcore_sync.agent.approval import cancelled_record, check_decisions, load_paused
from agcore_sync.agent.errors import AgentError, TurnNotPausedError, TurnPausedError
from agcore_sync.agent.slots import SlotStore
from agcore_sync.hooks import Decision, HookEvent, Hooks
from agcore_sync.llm.cost import PricingArg, cost_usd, find_pricing
from agcore_sync.llm.provider import LlmProvider
from agcore_sync.llm.types import Message, MessageResponse, Usage
from agcore_sync.loop._conversation import check_parts
from agcore_sync.loop.cycle import CycleConfig, LlmCycle
from agcore_sync.loop.limits import RunUsage, UsageLimits, run_usage
from agcore_sync.loop.tool_loop import OutputPlan, ToolLoop, TurnRecord
from agcore_sync.tools.registry import ToolRegistry

if TYPE_CHECKING:  # pragma: no cover
    from agcore_sync.agent.store import SessionStore
    from agcore_sync.agent.turn_stream import TurnStream
    from agcore_sync.llm.events import ToolApprovalRequest
    from agcore_sync.loop.pause import PausedTurn

__all__ = ["AgentSession", "FORMAT_VERSION"]


class AgentSession:
    """A conversation with tools, kept across turns.

    Args:
        provider: the model.
        config: cycle settings (model, limits, retry).
        registry: the tools; None runs the loops with an empty registry.
        system_prompt: a str, a ``PromptBuilder`` or a bound ``PromptTemplate``.
        hooks: turn, request and tool hooks.
        compact: a :class:`~agcore_sync.agent.compact.CompactConfig`, applied
            before every provider call.
        pricing: prices for :attr:`cost_usd` (None: the built-in table).
        usage_limits: a :class:`~agcore_sync.UsageLimits` for all turns together (None: none; 0.2).

    Attributes:
        cost_so_far: a :class:`Usage` summed over every provider response of
            every turn, tool rounds included.
        usage: a :class:`~agcore_sync.RunUsage`, what the ended turns used (0.2).
        turn_index: how many turns have ended; every hook of a turn sees it.
        usage_by_agent: what agents used as tools used, by path of agent names
            (``"research"``, ``"research/fact_check"``), included in :attr:`usage` (0.3).
    """

    def __init__(self, provider: LlmProvider, config: Optional[CycleConfig] = None,
                 registry: Optional[ToolRegistry] = None, system_prompt: Any = None,
                 hooks: Optional[Hooks] = None, compact: Any = None, *, pricing: PricingArg = None,
                 usage_limits: Optional[UsageLimits] = None) -> None:
        check_parts("AgentSession", provider, config, hooks)
        _check.optional_instance("AgentSession", "registry", registry, ToolRegistry, "a ToolRegistry")
        _check.optional_instance("AgentSession", "usage_limits", usage_limits, UsageLimits, "a UsageLimits")
        self._cycle = LlmCycle(provider, config, system_prompt, hooks, compact)
        self._owns_registry = registry is None
        self.registry = registry if registry is not None else ToolRegistry()
        self.pricing = pricing
        self.usage_limits = usage_limits
        self.usage = RunUsage()
        self.usage_by_agent: Dict[str, RunUsage] = {}
        self._turn = OpenTurn(self._cycle)
        self.cost_so_far = Usage()
        self._cost: Optional[float] = 0.0
        self.turn_index = 0
        self._slots = SlotStore()
        self._turn_lock = threading.Lock()
        self._turn_open = False
        self._paused: Optional[PausedTurn] = None  # the turn that waits for approval, or None
        # The open streamed turn's stream (weak: a dropped stream ends its turn).
        self._stream: Optional[weakref.ref] = None
        # What finalize_turn() recognises as an ended turn.
        self._ended = EndedTurns()
        self._stored = StoreMark()

    def __repr__(self) -> str:
        return (f"AgentSession(provider={self.provider!r}, turn_index={self.turn_index}, "
                f"slot={self.current_slot!r})")

    # -- read-only views ---------------------------------------------------------

    @property
    def provider(self) -> LlmProvider:
        """The model; assign another LlmProvider to switch from the next request on."""
        return self._cycle.provider

    @provider.setter
    def provider(self, value: LlmProvider) -> None:
        self._cycle.provider = _check.instance("AgentSession", "provider", value, LlmProvider, "an LlmProvider")

    @property
    def config(self) -> CycleConfig:
        """The cycle settings."""
        return self._cycle.config

    @property
    def hooks(self) -> Hooks:
        """The hooks; register more with ``session.hooks.on(...)``."""
        return self._cycle.hooks

    @property
    def system_prompt(self) -> Optional[str]:
        """The rendered system prompt."""
        return self._cycle.system_prompt

    def messages(self) -> List[Message]:
        """Return a copy of the current slot's history."""
        return list(self._slots.current.messages)

    @property
    def cost_usd(self) -> Optional[float]:
        """The cost of :attr:`cost_so_far` in USD, or None if a model has no price."""
        return self._cost

    @property
    def current_agent(self) -> Optional[str]:
        """The agent the session was last handed off to (see ``handoff``), or None for its own (0.3)."""
        return _roster.current_agent(self)

    @property
    def pending_approvals(self) -> Tuple[ToolApprovalRequest, ...]:
        """The calls a paused turn waits for, in call order; ``()`` when no turn is paused.

        .. versionadded:: 0.2
        """
        return () if self._paused is None else self._paused.requests

    # -- slots ------------------------------------------------------------------

    @property
    def slots(self) -> List[str]:
        """The slot names, ``"default"`` first."""
        return self._slots.names

    @property
    def current_slot(self) -> str:
        """The name of the slot turns read and write."""
        return self._slots.current.name

    def create_slot(self, name: str, readonly: bool = False, messages: Any = ()) -> None:
        """Add a slot (an existing name raises :class:`AgentError`)."""
        self._slots.create(name, readonly, messages)

    def switch_slot(self, name: str) -> None:
        """Make ``name`` current (a missing one raises ``SlotNotFoundError``)."""
        if self._turn_open:
            raise AgentError("cannot switch slots while a turn is open")
        self._refuse_if_paused("switch slots")
        self._slots.switch(name)

    # -- turns ------------------------------------------------------------------

    def _refuse_if_paused(self, what: str) -> None:
        if self._paused is not None:
            ids = self._paused.pending_ids
            raise TurnPausedError(
                f"cannot {what}: turn {self.turn_index} of this session is paused, waiting for approval of calls "
                f"{list(ids)}; call resume_turn(decisions) or cancel_pending() first", ids)

    def _start_turn(self) -> None:
        self._refuse_if_paused("start a turn")
        slot = self._slots.writable_current()
        with self._turn_lock:
            if self._turn_open:
                raise AgentError("a turn is already open: exhaust or close its stream first")
            self._turn_open = True
        self._cycle.use_history(slot.messages)  # the loops read and extend the current slot
        self._turn.open(self)
        try:
            self._cycle.fire(HookEvent.ON_TURN_START)
        except BaseException as exc:
            self._turn_open = False
            self._turn.close(error=exc)
            raise

    def _end_turn(self, record: TurnRecord, *, append_messages: bool) -> None:
        """Count usage, keep messages, fire ON_TURN_END, advance the index; or keep a paused turn."""
        if record.paused is not None:
            # Not an end: nothing is counted until the turn really ends.
            self._paused = record.paused
            self._stream = None
            self._turn_open = False
            self._turn.close(record)  # its span ends here; a resumption gets one of its own
            return
        try:
            self.usage = self.usage + record.usage
            for path, used in record.usage_by_agent.items():
                self.usage_by_agent[path] = self.usage_by_agent.get(path, RunUsage()) + used
            for usage, model in record.usage_by_model:
                self.cost_so_far = self.cost_so_far + usage
                price = find_pricing(model, self.pricing)
                self._cost = None if price is None or self._cost is None else self._cost + price.cost(usage)
            if append_messages:
                self._cycle.extend_messages(record.new_messages)
            self._ended.ended(record.final_response, record.responses)
            self._cycle.fire(HookEvent.ON_TURN_END, response=record.final_response)
        finally:
            self._turn.close(record)
            self.turn_index += 1
            self._stream = None
            self._turn_open = False

    def _end_streamed_turn(self, record: TurnRecord) -> None:
        # The stream has already put the turn's messages into the slot.
        self._end_turn(record, append_messages=False)

    def submit_turn(self, user_input: Union[str, Message], *, output: Any = None) -> MessageResponse:
        """Run one turn to its end, or to a pause, and return the last response.

        If calls need approval the turn pauses once the round's other calls have run: the response whose
        calls wait is returned and :attr:`pending_approvals` lists them (see :meth:`resume_turn`).
        ``user_input`` may be a ``Message`` (images...); ``output=`` asks for structured output (``response.output``).

        Raises:
            SlotReadonlyError, TypeError, ValueError: a readonly slot; ``output`` is no usable schema.
            TurnPausedError: a turn is paused (resume or cancel it first).
            AgentError: a turn is already open.
            LlmError, ToolError, HookError: the turn failed; it still ended.
        """
        loop = ToolLoop(self._cycle, self.registry, pausable=True, output=OutputPlan.of(output, self.config))
        self._start_turn()
        try:
            return loop.run(user_input)
        finally:
            self._end_turn(loop.record(), append_messages=True)

    def submit_turn_stream(self, user_input: Union[str, Message], *, max_buffered_events: Optional[int] = None,
                           output: Any = None) -> TurnStream:
        """Start a turn and return its stream; ``ON_TURN_START`` has fired.

        The turn ends by itself when the stream is exhausted or closed; ``output=`` as in :meth:`submit_turn`.

        Raises:
            SlotReadonlyError, TypeError, ValueError: a readonly slot; ``output`` is no usable schema.
            TurnPausedError, AgentError: a turn is paused (resume or cancel it first), or already open.
        """
        from agcore_sync.agent.turn_stream import TurnStream  # the streaming modules load with the first stream
        plan = OutputPlan.of(output, self.config)
        self._start_turn()
        try:
            stream = TurnStream(self._cycle, self.registry, user_input, end_turn=self._end_streamed_turn,
                                max_buffered_events=max_buffered_events, output=plan)
        except BaseException as exc:
            self._turn_open = False
            self._turn.close(error=exc)
            raise
        self._stream = weakref.ref(stream)
        return stream

    # -- paused turns -------------------------------------------------------------

    def _take_paused(self, decisions: Optional[Mapping[str, Any]]) -> Tuple[PausedTurn, Dict[str, Decision]]:
        """Check and open the paused turn for going on; nothing changes if this raises."""
        paused = self._paused
        if paused is None:
            raise TurnNotPausedError(f"no turn of this session is paused (turn_index {self.turn_index}): "
                                     "there is nothing to resume or cancel; start a turn with submit_turn")
        checked = check_decisions(paused, decisions, self.turn_index) if decisions is not None else {}
        slot = self._slots.writable_current()
        with self._turn_lock:
            if self._turn_open:
                raise AgentError("the paused turn is already being resumed: exhaust or close its stream first")
            self._turn_open = True
        self._paused = None
        self._cycle.use_history(slot.messages)
        self._turn.open(self)
        return paused, checked

    def resume_turn(self, decisions: Mapping[str, Decision]) -> MessageResponse:
        """Continue the paused turn with a decision per waiting call; return the last response.

        ``decisions`` maps every id of :attr:`pending_approvals` to
        :class:`~agcore_sync.hooks.Approve` or ``Deny(reason)``. Approved
        calls run now, exactly once, without passing PRE_TOOL_USE again;
        denied ones go to the model as ``is_error`` results with the reason.
        The loop then goes on (the user message is not sent again) and may
        pause again. ``max_tool_turns`` counts the turn's provider calls
        across pauses.

        Raises:
            TurnNotPausedError: no turn is paused.
            ApprovalDecisionError: an unknown id, a missing decision, or a
                value that is not Approve/Deny (nothing changed).
            LlmError, ToolError, HookError: the turn failed; it still ended.

        .. versionadded:: 0.2
        """
        paused, checked = self._take_paused(decisions)
        loop = ToolLoop(self._cycle, self.registry, pausable=True)
        try:
            return loop.resume(paused, checked)
        finally:
            self._end_turn(loop.record(), append_messages=True)

    def resume_turn_stream(self, decisions: Mapping[str, Decision], *,
                           max_buffered_events: Optional[int] = None) -> TurnStream:
        """Continue the paused turn on a stream (see :meth:`resume_turn`).

        The decided calls' ``ToolExecutionStarted`` / ``Completed`` come
        first, then the next rounds' events; the stream may end with
        ``ApprovalRequired`` again. ``ON_TURN_START`` does not fire again.

        Raises:
            TurnNotPausedError: no turn is paused.
            ApprovalDecisionError: decisions that do not match (nothing changed).

        .. versionadded:: 0.2
        """
        from agcore_sync.agent.turn_stream import TurnStream
        paused, checked = self._take_paused(decisions)
        try:
            stream = TurnStream(self._cycle, self.registry, None, end_turn=self._end_streamed_turn,
                                max_buffered_events=max_buffered_events, resume=(paused, checked))
        except BaseException as exc:
            self._paused = paused
            self._turn_open = False
            self._turn.close(error=exc)
            raise
        self._stream = weakref.ref(stream)
        return stream

    def cancel_pending(self, reason: str = "cancelled by the user") -> None:
        """End the paused turn without running its waiting calls.

        Each waiting call gets an ``is_error`` result saying the turn was
        cancelled (with ``reason``), so the history stays valid for the next
        turn; the model is not asked again. The turn ends once: its usage is
        counted, its messages join the slot, ``ON_TURN_END`` fires and
        ``turn_index`` grows.

        Raises:
            TurnNotPausedError: no turn is paused.

        .. versionadded:: 0.2
        """
        paused, _ = self._take_paused(None)
        self._end_turn(cancelled_record(paused, reason), append_messages=True)

    def finalize_turn(self, response: MessageResponse, new_messages: Optional[Sequence[Message]] = None) -> None:
        """End the open streamed turn, or record a turn made by hand; never count a turn twice.

        - A streamed turn still open: its stream is closed, which ends the
          turn with every complete round; ``new_messages`` is not used.
        - A turn already ended (recognised by its final response, or an equal
          copy of any response of the last turn): nothing happens, however
          often it is called, so the seed's call after the loop is harmless.
        - Otherwise a turn made outside the session is recorded once: its
          usage, ``new_messages`` (default ``[response.message]``) into the
          current slot, ``ON_TURN_END``, ``turn_index`` advanced.

        Raises:
            SlotReadonlyError: recording into a readonly slot.
        """
        stream = self._stream() if self._stream is not None else None
        if stream is not None and not stream.closed:
            # The caller's response now names this turn too: a second call
            # with it (the seed's call after the loop) finds the turn ended.
            self._ended.add_final(response)
            stream.close()
            return
        if response in self._ended:
            return
        if self._paused is not None:
            if response is self._paused.final_response or response == self._paused.final_response:
                return  # the paused turn ends when it is resumed or cancelled
            self._refuse_if_paused("record a turn")
        slot = self._slots.writable_current()
        with self._turn_lock:
            if self._turn_open:
                return
            self._turn_open = True
        self._cycle.use_history(slot.messages)
        self._cycle.turn_index = self.turn_index
        messages = [response.message] if new_messages is None else list(new_messages)
        used = [(response.usage, response.model)]
        record = TurnRecord(new_messages=messages, usage_by_model=used, responses=[response], final_response=response,
                            usage=run_usage(1, 0, used, lambda usage, model: cost_usd(usage, model, self.pricing)))
        self._end_turn(record, append_messages=True)

    def close(self) -> None:
        """Close the registry if the session created it (and the agents it handed off to)."""
        _roster.close(self)
        if self._owns_registry:
            self.registry.close()

    def __enter__(self) -> AgentSession:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    # -- persistence ------------------------------------------------------------

    def to_dict(self) -> Dict[str, Any]:
        """Return the session's state as JSON-ready data (no provider, no key).

        A paused turn is included (``paused_turn``), so it can be resumed
        after :meth:`from_dict` in another process.
        """
        return {
            "format_version": FORMAT_VERSION,
            "config": self.config.to_dict(),
            "system_prompt": self.system_prompt,
            "slots": self._slots.to_dict(),
            "cost_so_far": self.cost_so_far.to_dict(),
            "cost_usd": self._cost,
            "turn_index": self.turn_index,
            "paused_turn": None if self._paused is None else self._paused.to_dict(),
            "usage": self.usage.to_dict(), "usage_limits": self.usage_limits and self.usage_limits.to_dict(),
            "usage_by_agent": {path: used.to_dict() for path, used in self.usage_by_agent.items()},
            "agents": _roster.state(self),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, provider: LlmProvider, registry: Optional[ToolRegistry] = None,
                  hooks: Optional[Hooks] = None, compact: Any = None, pricing: PricingArg = None) -> AgentSession:
        """Rebuild a session saved by :meth:`to_dict`.

        Reads ``format_version`` 1 (no paused turns) and 2.

        Raises:
            AgentError: ``data`` is not a saved session, its
                ``format_version`` is newer than this version reads, it nests
                too deep, or its paused turn's waiting calls disagree with
                the calls that would run.
        """
        check_document(data)
        session = cls(provider, CycleConfig.from_dict(data["config"]), registry, data.get("system_prompt"),
                      hooks, compact, pricing=pricing, usage_limits=UsageLimits.read(data.get("usage_limits")))
        session.usage = RunUsage.from_dict(data.get("usage") or {})
        session._slots = SlotStore.from_dict(data["slots"])
        session.cost_so_far = Usage.from_dict(data["cost_so_far"])
        session._cost = data.get("cost_usd", 0.0)
        session.turn_index = int(data["turn_index"])
        session._paused = load_paused(data.get("paused_turn"))
        session.usage_by_agent = {path: RunUsage.from_dict(used) for path, used in
                                  (data.get("usage_by_agent") or {}).items()}
        _roster.restore(session, data.get("agents"))  # back at the agent it was handed off to
        return session

    @classmethod
    def load(cls, store: SessionStore, session_id: str, *, provider: LlmProvider,
             registry: Optional[ToolRegistry] = None, hooks: Optional[Hooks] = None, compact: Any = None,
             pricing: PricingArg = None) -> AgentSession:
        """Load a session from a :class:`~agcore_sync.agent.store.SessionStore`.

        The session remembers the version it loaded, so that a later
        :meth:`save` to the same store and id overwrites exactly that
        version. The other arguments are those of :meth:`from_dict`.

        Raises:
            SessionNotFoundError: the store has no such session (also a ``KeyError``).
            SessionStoreError: the stored session is corrupt or of an unknown
                format; the store is left as it is.
        """
        # Argument mistakes are the caller's (TypeError), not a corrupt stored session.
        check_parts("AgentSession.load", provider, None, hooks)
        _check.optional_instance("AgentSession.load", "registry", registry, ToolRegistry, "a ToolRegistry")
        stored = read_stored(store, session_id)
        try:
            session = cls.from_dict(stored.data, provider=provider, registry=registry, hooks=hooks,
                                    compact=compact, pricing=pricing)
        except (AgentError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise unreadable(store, session_id, stored, exc) from exc
        session._stored.remember(store, session_id, stored.version)
        return session

    def save(self, store: SessionStore, session_id: str) -> int:
        """Save :meth:`to_dict` to ``store`` under ``session_id``; return the new version.

        The save expects the version this session last loaded from or saved
        to that store and id (a session never stored there must be new), so
        a save from a stale copy raises instead of overwriting another
        worker's turns. Save after a turn has ended.

        Raises:
            SessionConflictError: the stored version is not the expected one
                (load again, redo the turn, save); nothing was written.
        """
        version = store.save(session_id, self.to_dict(), self._stored.expected(store, session_id))
        self._stored.remember(store, session_id, version)
        return version


def __getattr__(name: str) -> Any:  # TurnStream, defined in agent.turn_stream, stays importable from here
    if name != "TurnStream":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from agcore_sync.agent.turn_stream import TurnStream
    return TurnStream
