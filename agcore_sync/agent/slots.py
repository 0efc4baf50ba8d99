"""Context slots: named message histories a session switches between.

A session always has the slot ``"default"``. A turn reads and writes the
current slot only. A readonly slot can be read and switched to, but a turn
on it is refused before anything is sent.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional

from agcore_sync.agent.errors import AgentError, SlotNotFoundError, SlotReadonlyError
from agcore_sync.llm.types import Message

__all__ = ["Slot", "SlotStore", "DEFAULT_SLOT"]

#: The slot every session starts in.
DEFAULT_SLOT = "default"


class Slot:
    """One named history. ``messages`` is the live list the turns append to.

    A stateful object, compared by identity; written out with ``__slots__``
    rather than as an attrs class, which would compile a ``__repr__`` and an
    ``__init__`` for it when a session is first imported.
    """

    __slots__ = ("name", "messages", "readonly")

    def __init__(self, name: str, messages: Optional[List[Message]] = None, readonly: bool = False) -> None:
        self.name = name
        self.messages: List[Message] = [] if messages is None else messages
        self.readonly = readonly

    def __repr__(self) -> str:
        return f"Slot(name={self.name!r}, messages={self.messages!r}, readonly={self.readonly!r})"

    def to_dict(self) -> Dict[str, Any]:
        """Return a JSON-ready dict."""
        return {"name": self.name, "readonly": self.readonly, "messages": [m.to_dict() for m in self.messages]}

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> Slot:
        """Build a slot from ``to_dict()`` output."""
        return cls(data["name"], [Message.from_dict(m) for m in data["messages"]], bool(data.get("readonly")))


class SlotStore:
    """The slots of one session and which one is current."""

    def __init__(self) -> None:
        self._slots: Dict[str, Slot] = {DEFAULT_SLOT: Slot(DEFAULT_SLOT)}
        self.current = self._slots[DEFAULT_SLOT]

    @property
    def names(self) -> List[str]:
        """Slot names in creation order."""
        return list(self._slots)

    def create(self, name: str, readonly: bool = False, messages: Iterable[Message] = ()) -> Slot:
        """Add a slot; an existing name raises :class:`AgentError`."""
        if not isinstance(name, str) or not name:
            raise AgentError(f"a slot name must be a non-empty string, got {name!r}")
        if name in self._slots:
            raise AgentError(f'slot "{name}" already exists')
        slot = self._slots[name] = Slot(name, list(messages), readonly)
        return slot

    def get(self, name: str) -> Slot:
        """Return the slot ``name``, or raise :class:`SlotNotFoundError`."""
        try:
            return self._slots[name]
        except KeyError:
            raise SlotNotFoundError(f'no slot "{name}"; slots are {self.names}') from None

    def switch(self, name: str) -> Slot:
        """Make ``name`` the current slot."""
        self.current = self.get(name)
        return self.current

    def writable_current(self) -> Slot:
        """Return the current slot, or raise :class:`SlotReadonlyError`."""
        if self.current.readonly:
            raise SlotReadonlyError(f'slot "{self.current.name}" is readonly: switch to another slot for a turn')
        return self.current

    def to_dict(self) -> Dict[str, Any]:
        """Return a JSON-ready dict."""
        return {"current": self.current.name, "slots": [s.to_dict() for s in self._slots.values()]}

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> SlotStore:
        """Build the slots from ``to_dict()`` output."""
        store = cls()
        store._slots = {s["name"]: Slot.from_dict(s) for s in data["slots"]}
        store._slots.setdefault(DEFAULT_SLOT, Slot(DEFAULT_SLOT))
        store.switch(data.get("current", DEFAULT_SLOT))
        return store
