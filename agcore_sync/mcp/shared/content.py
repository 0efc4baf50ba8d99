"""MCP content blocks as the model sees them: text, images, and markers for the rest.

Tool results and prompt messages carry MCP content blocks (``text``,
``image``, ``audio``, ``resource_link``, embedded ``resource``). The model
gets:

1. ``text``: a :class:`~agcore_sync.llm.types.TextBlock`.
2. ``image``: an :class:`~agcore_sync.llm.media.ImageBlock` (base64 data),
   when its MIME type is one the providers take; otherwise a text marker.
3. ``audio``: a text marker naming its MIME type and size (no provider
   here takes audio in tool results).
4. ``resource_link``: text with its URI (and name, description).
5. embedded ``resource``: a text resource as text headed by its URI; a
   blob resource that is an image as an ``ImageBlock``, any other blob as a
   marker with its URI, MIME type and size.
6. Anything else: a marker naming the unknown type.

Pure: no I/O.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, List, Mapping, Sequence, Tuple, Union

from agcore_sync.llm.media import IMAGE_MEDIA_TYPES, ImageBlock
from agcore_sync.llm.types import Message, Role, TextBlock

__all__ = ["mcp_blocks", "mcp_message", "ModelBlock"]

#: What :func:`mcp_blocks` returns each block as.
ModelBlock = Union[TextBlock, ImageBlock]


def mcp_blocks(content: Sequence[Any]) -> Tuple[ModelBlock, ...]:
    """Turn MCP content blocks into blocks a model takes (see the module docstring).

    Args:
        content: the ``content`` list of a tool result (or one prompt
            message's content, as a list).

    Returns:
        One ``TextBlock`` or ``ImageBlock`` per MCP block, in order.
    """
    return tuple(_block(item) for item in content)


def mcp_message(message: Mapping[str, Any]) -> Message:
    """Turn one ``PromptMessage`` (``role``, ``content``) into a :class:`Message`.

    ``content`` may be one block or a list of them; a role other than
    ``assistant`` is taken as ``user``.
    """
    content = message.get("content")
    items: List[Any] = list(content) if isinstance(content, list) else [content]
    role = Role.ASSISTANT if message.get("role") == "assistant" else Role.USER
    return Message(role, mcp_blocks(items))


def _block(item: Any) -> ModelBlock:
    if not isinstance(item, Mapping):
        return TextBlock(f"[MCP content that is not an object: {type(item).__name__}]")
    kind = item.get("type")
    if kind == "text":
        return TextBlock(str(item.get("text", "")))
    if kind == "image":
        return _image(item.get("data"), item.get("mimeType"), "image")
    if kind == "audio":
        return TextBlock(f"[audio: {item.get('mimeType') or 'unknown type'}, {_size(item.get('data'))}; not shown]")
    if kind == "resource_link":
        name = item.get("name") or item.get("title")
        described = f": {item['description']}" if item.get("description") else ""
        mime = f", {item['mimeType']}" if item.get("mimeType") else ""
        return TextBlock(f"[resource link {name!r} <{item.get('uri')}>{mime}{described}]")
    if kind == "resource":
        return _embedded(item.get("resource"))
    return TextBlock(f"[MCP content of unknown type {kind!r}]")


def _embedded(resource: Any) -> ModelBlock:
    if not isinstance(resource, Mapping):
        return TextBlock("[embedded resource without contents]")
    uri = resource.get("uri")
    if isinstance(resource.get("text"), str):
        return TextBlock(f"[resource <{uri}>]\n{resource['text']}")
    mime = resource.get("mimeType")
    if mime in IMAGE_MEDIA_TYPES:
        return _image(resource.get("blob"), mime, f"resource <{uri}>")
    return TextBlock(f"[resource <{uri}>: {mime or 'binary'}, {_size(resource.get('blob'))}; not shown]")


def _image(data: Any, mime: Any, what: str) -> ModelBlock:
    if mime in IMAGE_MEDIA_TYPES and isinstance(data, str):
        try:
            return ImageBlock(mime, data=data)
        except ValueError:
            return TextBlock(f"[{what}: {mime} with invalid base64 data; not shown]")
    return TextBlock(f"[{what}: {mime or 'unknown type'}, {_size(data)}; not shown]")


def _size(data: Any) -> str:
    if not isinstance(data, str):
        return "no data"
    try:
        return f"{len(base64.b64decode(data, validate=False))} bytes"
    except (binascii.Error, ValueError):
        return "invalid base64"
