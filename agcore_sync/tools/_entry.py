"""What :class:`~agcore_sync.tools.registry.ToolRegistry` keeps per tool."""

from __future__ import annotations

from typing import Optional

from agcore_sync.tools import _validation
from agcore_sync.tools.base import BaseTool
from agcore_sync.tools.error import ToolError
from agcore_sync.tools.permission import Permission

__all__ = ["Entry", "closed_error"]


class Entry:
    """A registered tool with what the registry derives from it once."""

    __slots__ = ("tool", "permissions", "validator")

    def __init__(self, tool: BaseTool) -> None:
        if not isinstance(tool, BaseTool):
            raise TypeError(f"expected a BaseTool, got {type(tool).__name__}")
        if not isinstance(tool.name, str):
            raise TypeError(f"a tool's name must be a str, got {type(tool.name).__name__}")
        if not tool.name:
            raise ValueError("a tool's name must not be empty")
        self.tool = tool
        self.permissions = tuple(Permission.of(p) for p in tool.required_permissions)
        #: Compiled on first use; dropped with the entry on unregister.
        self.validator: Optional[_validation.ArgumentValidator] = None


def closed_error() -> ToolError:
    """Return the error of a call to a closed registry."""
    return ToolError("the tool registry is closed; create a new ToolRegistry", recoverable=False)

