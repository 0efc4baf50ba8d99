"""Errors of the agent layer.

Tree (under :class:`~agcore_sync.errors.AgcoreError`)::

    AgentError              a session used wrongly (a turn already open, an unknown format)
    +-- SlotReadonlyError   a turn or write on a readonly slot
    +-- SlotNotFoundError   a slot name that does not exist
"""

from __future__ import annotations

from agcore_sync.errors import AgcoreError

__all__ = ["AgentError", "SlotReadonlyError", "SlotNotFoundError"]


class AgentError(AgcoreError):
    """A session was used in a way it does not allow."""


class SlotReadonlyError(AgentError):
    """The current slot is readonly; nothing was sent."""


class SlotNotFoundError(AgentError):
    """No slot has that name."""
