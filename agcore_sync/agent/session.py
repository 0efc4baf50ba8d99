"""AgentSession: turns over a tool loop, with cost, hooks, slots and resumption.

A turn is one user input and everything the tool loop does for it. A turn
always ends, whether it completed, failed or was closed early: the usage of
every response received is added to ``cost_so_far``, the user message and
every complete round are appended to the current slot, ``ON_TURN_END``
fires and ``turn_index`` grows. Then the error is raised (``submit_turn``)
or was the stream's last event (``submit_turn_stream``).

A streamed turn ends by itself; :meth:`AgentSession.finalize_turn` (the
seed's call after the stream) ends it only if it is still open and never
counts a turn twice. A turn made outside the session can be recorded with
it, once.

One turn at a time: starting a turn while one is open raises
:class:`AgentError`. A session is not meant to be shared by threads
without a lock of the caller's (a web app keeps one per conversation).
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from agcore_sync import _check, _instrument
from agcore_sync.agent.errors import AgentError
from agcore_sync.agent.slots import SlotStore
from agcore_sync.hooks import HookError, HookEvent, Hooks
from agcore_sync.llm.cost import Pricing, PricingArg, find_pricing
from agcore_sync.llm.provider import LlmProvider
from agcore_sync.llm.types import Message, MessageResponse, Usage
from agcore_sync.loop._conversation import check_parts
from agcore_sync.loop.cycle import CycleConfig, LlmCycle
from agcore_sync.loop.limits import RunUsage, UsageLimits
from agcore_sync.loop.tool_loop import ToolLoop, TurnRecord
from agcore_sync.loop.tool_stream import ToolLoopStream
from agcore_sync.tools.registry import ToolRegistry

__all__ = ["AgentSession", "TurnStream", "FORMAT_VERSION"]

logger = _instrument.get_logger("agcore_sync.session")

_FREE = Pricing(0.0, 0.0)

#: The ``format_version`` written by :meth:`AgentSession.to_dict`.
FORMAT_VERSION = 1


class TurnStream(ToolLoopStream):
    """A :class:`ToolLoopStream` that also ends its session turn.

    The turn ends when the stream is exhausted, closed, or collected,
    whichever comes first (see :mod:`agcore_sync.loop.tool_stream`).
    Created by :meth:`AgentSession.submit_turn_stream`.

    Args:
        cycle: the session's cycle, bound to its current slot.
        registry: the tools.
        user_input: the turn's user message.
        end_turn: called once with the turn's
            :class:`~agcore_sync.loop.tool_loop.TurnRecord` when the stream
            ends (the messages are already in the cycle's history).
        max_buffered_events: bounds the event queue (None: unbounded).
    """

    def __init__(self, cycle: LlmCycle, registry: ToolRegistry, user_input: str, *,
                 end_turn: Callable[[TurnRecord], None], max_buffered_events: Optional[int] = None) -> None:
        self._end_turn = end_turn
        super().__init__(cycle, registry, user_input, max_buffered_events=max_buffered_events)

    def _on_end(self, record: TurnRecord) -> None:
        try:
            self._end_turn(record)
        except HookError as exc:
            # The iterator has already ended; the failure is logged (by Hooks)
            # and kept on the stream.
            self.error = self.error or exc


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
        usage_limits: a :class:`~agcore_sync.loop.limits.UsageLimits` budget
            for the sum of all turns (None: no limit); a turn that hits it
            ends with :class:`~agcore_sync.loop.limits.UsageLimitExceeded`.

    Attributes:
        cost_so_far: a :class:`Usage` summed over every provider response of
            every turn, tool rounds included.
        usage: a :class:`~agcore_sync.loop.limits.RunUsage` summed over every
            turn: what ``usage_limits`` count.

    .. versionchanged:: 0.2 ``usage_limits`` and ``usage``.
        turn_index: how many turns have ended; every hook of a turn sees it.
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
        self._turn: Optional[_instrument.TurnScope] = None
        self.cost_so_far = Usage()
        self._cost: Optional[float] = 0.0
        self.turn_index = 0
        self._slots = SlotStore()
        self._turn_lock = threading.Lock()
        self._turn_open = False
        # The open streamed turn's stream (weak: a dropped stream ends its turn).
        self._stream: Optional[weakref.ref] = None
        # What finalize_turn() recognises as an ended turn: the final response
        # of every ended turn by identity (weak: the session does not keep them
        # alive), and every response of the last ended turn, by equality (a
        # seed-style caller may pass a copy, e.g. one rebuilt from events).
        self._ended_responses: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
        self._last_turn_responses: Tuple[MessageResponse, ...] = ()

    def __repr__(self) -> str:
        return (f"AgentSession(provider={self.provider!r}, turn_index={self.turn_index}, "
                f"slot={self.current_slot!r})")

    # -- read-only views ---------------------------------------------------------

    @property
    def provider(self) -> LlmProvider:
        """The model."""
        return self._cycle.provider

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
        self._slots.switch(name)

    # -- turns ------------------------------------------------------------------

    def _start_turn(self) -> None:
        slot = self._slots.writable_current()
        with self._turn_lock:
            if self._turn_open:
                raise AgentError("a turn is already open: exhaust or close its stream first")
            self._turn_open = True
        self._cycle.use_history(slot.messages)  # the loops read and extend the current slot
        self._cycle.turn_index = self.turn_index
        self._cycle.pricing = self.pricing
        self._cycle.session_limits = None if self.usage_limits is None else (self.usage_limits, self.usage)
        self._turn = _instrument.begin_turn(self)
        try:
            with self._turn.activate():
                self._cycle.fire(HookEvent.ON_TURN_START)
        except BaseException as exc:
            self._turn_open = False
            self._turn.fail(exc)
            self._turn.end()
            raise

    def _end_turn(self, record: TurnRecord, *, append_messages: bool) -> None:
        """Count usage, keep messages, fire ON_TURN_END, advance the index."""
        try:
            self.usage = self.usage + record.usage
            for usage, model in record.usage_by_model:
                self.cost_so_far = self.cost_so_far + usage
                price = find_pricing(model, self.pricing)
                self._cost = None if price is None or self._cost is None else self._cost + price.cost(usage)
            if append_messages:
                self._cycle.extend_messages(record.new_messages)
            if record.final_response is not None:
                self._ended_responses[id(record.final_response)] = record.final_response
            self._last_turn_responses = record.responses
            with self._turn_context():
                self._cycle.fire(HookEvent.ON_TURN_END, response=record.final_response)
        finally:
            turn, self._turn = self._turn, None
            if turn is not None:
                turn.end(record)
            self.turn_index += 1
            self._stream = None
            self._turn_open = False

    def _turn_context(self) -> Any:
        """Make the open turn (its log id, its span) current for a block."""
        return self._turn.activate() if self._turn is not None else contextlib.nullcontext()

    def _end_streamed_turn(self, record: TurnRecord) -> None:
        # The stream has already put the turn's messages into the slot.
        self._end_turn(record, append_messages=False)

    def submit_turn(self, user_input: str) -> MessageResponse:
        """Run one turn to its end and return the final response.

        Raises:
            SlotReadonlyError: the current slot is readonly (nothing sent).
            AgentError: a turn is already open.
            LlmError, ToolError, HookError: the turn failed; it still ended.
        """
        self._start_turn()
        loop = ToolLoop(self._cycle, self.registry)
        try:
            with self._turn_context():
                return loop.run(user_input)
        finally:
            self._end_turn(loop.record(), append_messages=True)

    def submit_turn_stream(self, user_input: str, *, max_buffered_events: Optional[int] = None) -> TurnStream:
        """Start a turn and return its stream; ``ON_TURN_START`` has fired.

        The turn ends by itself when the stream is exhausted or closed.

        Raises:
            SlotReadonlyError: the current slot is readonly (no stream starts).
            AgentError: a turn is already open.
        """
        self._start_turn()
        try:
            # The worker copies this context: the turn is current in it.
            with self._turn_context():
                stream = TurnStream(self._cycle, self.registry, user_input, end_turn=self._end_streamed_turn,
                                    max_buffered_events=max_buffered_events)
        except BaseException as exc:
            self._turn_open = False
            turn, self._turn = self._turn, None
            if turn is not None:
                turn.fail(exc)
                turn.end()
            raise
        self._stream = weakref.ref(stream)
        return stream

    def finalize_turn(self, response: MessageResponse, new_messages: Optional[Sequence[Message]] = None) -> None:
        """End the open streamed turn, or record a turn made by hand; never count a turn twice.

        - While the turn that :meth:`submit_turn_stream` opened is still open,
          its stream is closed, which ends the turn with every complete round
          (streams end their turns by themselves; this only makes it happen
          now). ``new_messages`` is not used then (the stream knows what the
          turn did), and ``response`` counts as that turn's from then on.
        - On a turn that has already ended (its stream was exhausted or
          closed, or ``submit_turn`` returned) it does nothing: no usage
          added, no messages appended, no ``ON_TURN_END``, ``turn_index``
          unchanged, however often it is called. A turn is recognised by its
          final response (the object itself, for any ended turn) or by any
          response of the last ended turn (an equal copy will do), so the
          seed's ``finalize_turn(response)`` after the loop is harmless.
        - Otherwise it records a turn made outside the session, once: adds
          ``response.usage``, appends ``new_messages`` (default
          ``[response.message]``: the session never saw that turn's user
          message) to the current slot, fires ``ON_TURN_END`` and advances
          ``turn_index``. A turn running in another thread makes it do nothing.

        Raises:
            SlotReadonlyError: recording into a readonly slot.
        """
        stream = self._stream() if self._stream is not None else None
        if stream is not None and not stream.closed:
            # The caller's response now names this turn too: a second call
            # with it (the seed's call after the loop) finds the turn ended.
            self._ended_responses[id(response)] = response
            stream.close()
            return
        if self._is_ended_turn(response):
            return
        slot = self._slots.writable_current()
        with self._turn_lock:
            if self._turn_open:
                return
            self._turn_open = True
        self._cycle.use_history(slot.messages)
        self._cycle.turn_index = self.turn_index
        messages = [response.message] if new_messages is None else list(new_messages)
        used = RunUsage(requests=1, input_tokens=response.usage.prompt_tokens,
                        output_tokens=response.usage.completion_tokens,
                        cost_usd=(find_pricing(response.model, self.pricing) or _FREE).cost(response.usage))
        record = TurnRecord(new_messages=messages, usage_by_model=[(response.usage, response.model)],
                            responses=[response], final_response=response, usage=used)
        self._end_turn(record, append_messages=True)

    def _is_ended_turn(self, response: MessageResponse) -> bool:
        if self._ended_responses.get(id(response)) is response:
            return True
        return any(seen is response or seen == response for seen in self._last_turn_responses)

    def close(self) -> None:
        """Close the registry if the session created it."""
        if self._owns_registry:
            self.registry.close()

    def __enter__(self) -> AgentSession:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    # -- persistence ------------------------------------------------------------

    def to_dict(self) -> Dict[str, Any]:
        """Return the session's state as JSON-ready data (no provider, no key)."""
        return {
            "format_version": FORMAT_VERSION,
            "config": self.config.to_dict(),
            "system_prompt": self.system_prompt,
            "slots": self._slots.to_dict(),
            "cost_so_far": self.cost_so_far.to_dict(),
            "cost_usd": self._cost,
            "turn_index": self.turn_index,
            "usage": self.usage.to_dict(),
            "usage_limits": None if self.usage_limits is None else self.usage_limits.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, provider: LlmProvider, registry: Optional[ToolRegistry] = None,
                  hooks: Optional[Hooks] = None, compact: Any = None, pricing: PricingArg = None) -> AgentSession:
        """Rebuild a session saved by :meth:`to_dict`.

        Raises:
            AgentError: ``data`` is not a saved session, or its
                ``format_version`` is newer than this version reads.
        """
        if not isinstance(data, Mapping) or "format_version" not in data:
            kind = type(data).__name__ if not isinstance(data, Mapping) else "a dict without format_version"
            raise AgentError(f"AgentSession.from_dict: {kind} is not a saved session; pass what "
                             "session.to_dict() returned (after json.loads, if it was stored as JSON)")
        version = data.get("format_version")
        if version != FORMAT_VERSION:
            raise AgentError(f"cannot load a session of format_version {version!r}: this agcore_sync "
                             f"reads version {FORMAT_VERSION}; upgrade agcore_sync to load it")
        limits = data.get("usage_limits")
        session = cls(provider, CycleConfig.from_dict(data["config"]), registry, data.get("system_prompt"),
                      hooks, compact, pricing=pricing,
                      usage_limits=None if limits is None else UsageLimits.from_dict(limits))
        if data.get("usage") is not None:
            session.usage = RunUsage.from_dict(data["usage"])
        session._slots = SlotStore.from_dict(data["slots"])
        session.cost_so_far = Usage.from_dict(data["cost_so_far"])
        session._cost = data.get("cost_usd", 0.0)
        session.turn_index = int(data["turn_index"])
        return session
