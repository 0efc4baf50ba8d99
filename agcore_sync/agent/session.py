"""AgentSession: turns over a tool loop, with cost, hooks, slots and resumption.

A turn is one user input and everything the tool loop does for it. A turn
always ends, whether it completed, failed or was closed early: the usage of
every response received is added to ``cost_so_far``, the user message and
every complete round are appended to the current slot, ``ON_TURN_END``
fires and ``turn_index`` grows. Then the error is raised (``submit_turn``)
or was the stream's last event (``submit_turn_stream``).

One turn at a time: starting a turn while one is open raises
:class:`AgentError`. A session is not meant to be shared by threads
without a lock of the caller's (a web app keeps one per conversation).
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple

from agcore_sync.agent.errors import AgentError, SessionNotFoundError, SessionStoreError
from agcore_sync.agent.slots import SlotStore
from agcore_sync.hooks import HookError, HookEvent, Hooks
from agcore_sync.llm.cost import PricingArg, find_pricing
from agcore_sync.llm.provider import LlmProvider
from agcore_sync.llm.types import Message, MessageResponse, Usage
from agcore_sync.loop.cycle import CycleConfig, LlmCycle
from agcore_sync.loop.tool_loop import ToolLoop
from agcore_sync.loop.tool_stream import ToolLoopStream
from agcore_sync.tools.registry import ToolRegistry

if TYPE_CHECKING:  # pragma: no cover
    from agcore_sync.agent.store import SessionStore

__all__ = ["AgentSession", "TurnStream", "FORMAT_VERSION"]

logger = logging.getLogger("agcore_sync.session")

#: The ``format_version`` written by :meth:`AgentSession.to_dict`.
FORMAT_VERSION = 1


class TurnStream(ToolLoopStream):
    """A :class:`ToolLoopStream` that also ends its session turn.

    The turn ends when the stream is exhausted, closed, or collected,
    whichever comes first (see :mod:`agcore_sync.loop.tool_stream`).
    """

    def __init__(self, session: AgentSession, user_input: str, *, max_buffered_events: Optional[int]) -> None:
        self._session = session
        super().__init__(session._cycle, session.registry, user_input, max_buffered_events=max_buffered_events)

    def _on_end(self) -> None:
        try:
            self._session._end_turn(self._loop, append_messages=False)
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

    Attributes:
        cost_so_far: a :class:`Usage` summed over every provider response of
            every turn, tool rounds included.
        turn_index: how many turns have ended; every hook of a turn sees it.
    """

    def __init__(self, provider: LlmProvider, config: Optional[CycleConfig] = None,
                 registry: Optional[ToolRegistry] = None, system_prompt: Any = None,
                 hooks: Optional[Hooks] = None, compact: Any = None, *, pricing: PricingArg = None) -> None:
        self._cycle = LlmCycle(provider, config, system_prompt, hooks, compact)
        self._owns_registry = registry is None
        self.registry = registry if registry is not None else ToolRegistry()
        self.pricing = pricing
        self.cost_so_far = Usage()
        self._cost: Optional[float] = 0.0
        self.turn_index = 0
        self._slots = SlotStore()
        self._turn_lock = threading.Lock()
        self._turn_open = False
        self._stream: Optional[weakref.ref] = None
        # The final responses of ended turns, by identity, so finalize_turn()
        # on any of them is a no-op (weak: the session does not keep them alive).
        self._ended_responses: weakref.WeakValueDictionary = weakref.WeakValueDictionary()

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
        try:
            self._cycle.fire(HookEvent.ON_TURN_START)
        except BaseException:
            self._turn_open = False
            raise

    def _end_turn(self, loop: ToolLoop, *, append_messages: bool) -> None:
        """Count usage, keep messages, fire ON_TURN_END, advance the index."""
        try:
            for usage, model in loop.usage_by_model:
                self.cost_so_far = self.cost_so_far + usage
                price = find_pricing(model, self.pricing)
                self._cost = None if price is None or self._cost is None else self._cost + price.cost(usage)
            if append_messages:
                self._cycle.extend_messages(loop.new_messages)
            if loop.final_response is not None:
                self._ended_responses[id(loop.final_response)] = loop.final_response
            self._cycle.fire(HookEvent.ON_TURN_END, response=loop.final_response)
        finally:
            self.turn_index += 1
            self._turn_open = False

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
            return loop.run(user_input)
        finally:
            self._end_turn(loop, append_messages=True)

    def submit_turn_stream(self, user_input: str, *, max_buffered_events: Optional[int] = None) -> TurnStream:
        """Start a turn and return its stream; ``ON_TURN_START`` has fired.

        The turn ends by itself when the stream is exhausted or closed.

        Raises:
            SlotReadonlyError: the current slot is readonly (no stream starts).
            AgentError: a turn is already open.
        """
        self._start_turn()
        try:
            stream = TurnStream(self, user_input, max_buffered_events=max_buffered_events)
        except BaseException:
            self._turn_open = False
            raise
        self._stream = weakref.ref(stream)
        return stream

    def finalize_turn(self, response: MessageResponse, new_messages: Optional[List[Message]] = None) -> None:
        """End a turn: idempotent, for callers that build turns by hand.

        - While a streamed turn is open, its stream is closed, which ends the
          turn with every complete round (streams end their turns by
          themselves; this only makes it happen now).
        - For a turn that has already ended (``response`` is its final
          response) it does nothing.
        - Otherwise it records a turn made outside the session: adds
          ``response.usage``, appends ``new_messages`` (default
          ``[response.message]``) to the current slot, fires ON_TURN_END and
          advances ``turn_index``.

        Raises:
            SlotReadonlyError: recording into a readonly slot.
        """
        stream = self._stream() if self._stream is not None else None
        if stream is not None and not stream.closed:
            stream.close()
            return
        if self._turn_open or self._ended_responses.get(id(response)) is response:
            return
        self._slots.writable_current()
        self._cycle.use_history(self._slots.current.messages)
        self._cycle.turn_index = self.turn_index
        loop = ToolLoop(self._cycle, self.registry)
        loop.final_response = response
        loop.usage_by_model = [(response.usage, response.model)]
        loop.new_messages = list(new_messages) if new_messages is not None else [response.message]
        self._end_turn(loop, append_messages=True)

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
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, provider: LlmProvider, registry: Optional[ToolRegistry] = None,
                  hooks: Optional[Hooks] = None, compact: Any = None, pricing: PricingArg = None) -> AgentSession:
        """Rebuild a session saved by :meth:`to_dict`.

        Raises:
            AgentError: ``format_version`` is missing or unknown.
        """
        version = data.get("format_version")
        if version != FORMAT_VERSION:
            raise AgentError(f"cannot load a session of format_version {version!r}: this agcore_sync "
                             f"reads version {FORMAT_VERSION}; upgrade agcore_sync to load it")
        session = cls(provider, CycleConfig.from_dict(data["config"]), registry, data.get("system_prompt"),
                      hooks, compact, pricing=pricing)
        session._slots = SlotStore.from_dict(data["slots"])
        session.cost_so_far = Usage.from_dict(data["cost_so_far"])
        session._cost = data.get("cost_usd", 0.0)
        session.turn_index = int(data["turn_index"])
        return session

    # -- stores -----------------------------------------------------------------

    #: (store, session_id, version) of the last load from or save to a store.
    _stored: Optional[Tuple[SessionStore, str, int]] = None

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
        stored = store.load(session_id)
        if stored is None:
            raise SessionNotFoundError(f"no session {session_id!r} in {store!r}", session_id=session_id)
        try:
            session = cls.from_dict(stored.data, provider=provider, registry=registry, hooks=hooks,
                                    compact=compact, pricing=pricing)
        except (AgentError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise SessionStoreError(
                f"stored session {session_id!r} in {store!r} (version {stored.version}) cannot be loaded: {exc}; "
                f"it was left as it is", path=getattr(store, "path", None), session_id=session_id) from exc
        session._stored = (store, session_id, stored.version)
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
        stored = self._stored
        expected = stored[2] if stored is not None and stored[0] is store and stored[1] == session_id else None
        version = store.save(session_id, self.to_dict(), expected)
        self._stored = (store, session_id, version)
        return version
