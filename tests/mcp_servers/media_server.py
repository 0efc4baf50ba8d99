"""An MCP stdio server (official MCP Python SDK) whose tools answer with images, audio and resources, for tests.

Run as ``python tests/mcp_servers/media_server.py``. Tools:

- ``picture``: a text block and a 1x1 PNG image block;
- ``mixed``: text, an image, an audio clip, a resource link and two embedded
  resources (one text, one blob);
- ``svg``: an image of a type the model APIs refuse (``image/svg+xml``).
"""

from __future__ import annotations

import base64

from mcp.server.mcpserver import MCPServer
from mcp.types import (
    AudioContent,
    BlobResourceContents,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

#: A valid 1x1 PNG (67 bytes).
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
PNG_B64 = base64.b64encode(PNG).decode("ascii")

server = MCPServer("agcore-media-server", version="1.0.0")


@server.tool()
def picture() -> list:
    """Return a caption and a 1x1 PNG."""
    return [TextContent(type="text", text="a red dot"), ImageContent(type="image", data=PNG_B64, mime_type="image/png")]


@server.tool()
def mixed() -> list:
    """Return one block of every kind."""
    return [
        TextContent(type="text", text="report"),
        ImageContent(type="image", data=PNG_B64, mime_type="image/png"),
        AudioContent(type="audio", data=base64.b64encode(b"RIFF0000WAVE").decode("ascii"), mime_type="audio/wav"),
        ResourceLink(type="resource_link", name="notes", uri="file:///srv/notes.md"),
        EmbeddedResource(type="resource", resource=TextResourceContents(uri="memo://1", text="remember the milk")),
        EmbeddedResource(type="resource", resource=BlobResourceContents(
            uri="memo://2", blob=base64.b64encode(b"\x00\x01").decode("ascii"), mime_type="application/octet-stream")),
    ]


@server.tool()
def svg() -> list:
    """Return an SVG image, which the model APIs do not take."""
    data = base64.b64encode(b"<svg xmlns='http://www.w3.org/2000/svg'/>").decode("ascii")
    return [ImageContent(type="image", data=data, mime_type="image/svg+xml")]


if __name__ == "__main__":
    server.run("stdio")
