"""BaseTool, the interface every tool implements."""

from __future__ import annotations

import abc
from typing import Any, Dict, Sequence

from agcore_sync.llm.types import ToolDef

__all__ = ["BaseTool"]


class BaseTool(abc.ABC):
    """A tool the model may call.

    Subclasses provide ``name``, ``description`` and ``parameters`` (a JSON
    Schema for an object) as attributes or properties, and :meth:`execute`.
    ``required_permissions`` lists the permissions the tool needs; a
    :class:`~agcore_sync.tools.permission.PermissionChecker` must allow each
    before the tool runs. ``requires_approval`` (default False) makes every
    call of the tool wait for a human's decision: a session's turn pauses
    (see :attr:`AgentSession.pending_approvals
    <agcore_sync.agent.session.AgentSession.pending_approvals>`), and the
    ``LlmCycle`` loops, which cannot pause, answer the call with a
    ``PermissionDeniedError`` result.
    """

    name: str
    description: str = ""
    parameters: Dict[str, Any] = {"type": "object", "properties": {}}
    required_permissions: Sequence[Any] = ()
    #: True: a human approves each call before it runs (see the class docstring).
    requires_approval: bool = False

    @abc.abstractmethod
    def execute(self, args: Dict[str, Any]) -> Any:
        """Run the tool with validated ``args``; return a JSON-serialisable result.

        Raise :class:`~agcore_sync.tools.error.ToolError` (or anything else,
        which becomes ``ToolExecutionError``) on failure.
        """

    def definition(self) -> ToolDef:
        """Return the tool as the model sees it."""
        return ToolDef(self.name, self.description, self.parameters)
