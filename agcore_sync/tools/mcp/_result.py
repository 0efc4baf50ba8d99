"""McpToolResult: what one ``tools/call`` returned, re-exported by :mod:`agcore_sync.tools.mcp.client`."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence, Tuple

import attrs

from agcore_sync.llm.media import ImageBlock
from agcore_sync.llm.types import ContentBlock, TextBlock

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

    def blocks(self) -> List[ContentBlock]:
        """Return the content as blocks a tool result can carry to the model.

        - ``text``: a :class:`~agcore_sync.llm.types.TextBlock`;
        - ``image``: an :class:`~agcore_sync.llm.media.ImageBlock` (an
          image of a type the providers refuse, or with bad data, becomes a
          text marker saying so);
        - ``audio``: a text marker with its media type (the model APIs take
          no audio in tool results);
        - ``resource_link``: text with its name and URI;
        - ``resource`` (embedded): its text after its URI, or for a blob a
          marker with its URI and media type;
        - anything else: a marker naming its type.

        .. versionadded:: 0.1.0
        """
        return _content_blocks(self.content)

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


def _content_blocks(content: Sequence[Mapping[str, Any]]) -> List[ContentBlock]:
    blocks: List[ContentBlock] = []
    for item in content:
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type")
        mime = item.get("mimeType") or "unknown type"
        if kind == "text":
            blocks.append(TextBlock(str(item.get("text", ""))))
        elif kind == "image":
            try:
                blocks.append(ImageBlock(item.get("mimeType"), data=item.get("data")))
            except (TypeError, ValueError) as exc:
                blocks.append(TextBlock(f"[image ({mime}) not shown: {exc}]"))
        elif kind == "audio":
            size = len(item.get("data") or "")
            blocks.append(TextBlock(f"[audio ({mime}, {size} base64 characters): not shown, the model takes no audio]"))
        elif kind == "resource_link":
            name = item.get("name") or item.get("title") or ""
            blocks.append(TextBlock(f"[resource link: {name} {item.get('uri', '')}]".replace("  ", " ")))
        elif kind == "resource":
            resource = item.get("resource") if isinstance(item.get("resource"), Mapping) else {}
            uri = resource.get("uri", "")
            if isinstance(resource.get("text"), str):
                blocks.append(TextBlock(f"[resource {uri}]\n{resource['text']}"))
            else:
                blocks.append(TextBlock(f"[resource {uri} ({resource.get('mimeType') or 'unknown type'}): binary, "
                                        "not shown]"))
        else:
            blocks.append(TextBlock(f"[{kind} content not shown]"))
    return blocks
