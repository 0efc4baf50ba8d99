"""McpToolResult: what one ``tools/call`` returned, re-exported by :mod:`agcore_sync.mcp.client.session`."""

from __future__ import annotations

from typing import Any, Dict, Mapping, Tuple

import attrs

__all__ = ["McpToolResult"]


@attrs.frozen
class McpToolResult:
    """What a ``tools/call`` returned.

    Attributes:
        content: the server's content blocks, as dicts (``{"type": "text",
            "text": ...}``, images, resources...), in order.
        structured_content: the ``structuredContent`` value, if the tool
            returned one (tools with an ``outputSchema``).
        is_error: True when the tool itself failed (``isError``); the text
            then says why.
    """

    content: Tuple[Dict[str, Any], ...] = attrs.field(converter=tuple, default=())
    structured_content: Any = None
    is_error: bool = False

    @property
    def text(self) -> str:
        """The text blocks joined with newlines (empty if there are none)."""
        return "\n".join(
            block.get("text", "") for block in self.content if isinstance(block, dict) and block.get("type") == "text"
        )

    @classmethod
    def from_result(cls, result: Mapping[str, Any]) -> McpToolResult:
        """Build from a ``tools/call`` result dict as it came over the wire."""
        content = result.get("content")
        # Positional and with the tuple already made: this runs once a call.
        return cls(
            tuple(content) if isinstance(content, list) else (),
            result.get("structuredContent"),
            bool(result.get("isError", False)),
        )
