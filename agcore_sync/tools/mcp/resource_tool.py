"""McpResourceTool: a server's resources offered to the model as one ``read_resource`` tool.

The model gets one tool taking a ``uri``; its description lists the
server's resources and templates (as listed when the tool was built, at
most :data:`MAX_LISTED`), so the model knows what it may read. A text part
reaches the model as text (headed by its URI when there are several), an
image as an :class:`~agcore_sync.llm.media.ImageBlock`, any other blob as a
marker with its URI, type and size. An unknown URI is the server's
``McpError``: recoverable, so the model reads the error and may try another.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import base64
from typing import Any, Dict, List, Optional, Protocol, Sequence

from agcore_sync.tools.base import BaseTool
from agcore_sync.tools.error import InvalidArgumentsError
from agcore_sync.tools.mcp.content import mcp_blocks
from agcore_sync.tools.mcp.resources import McpResource, McpResourceContents, McpResourceTemplate

__all__ = ["McpResourceTool", "MAX_LISTED"]

#: Most resources and templates named in the tool's description.
MAX_LISTED = 50


class _ResourceReader(Protocol):
    server_name: str

    def list_resources(self) -> List[McpResource]: ...

    def list_resource_templates(self) -> List[McpResourceTemplate]: ...

    def read_resource(self, uri: str) -> List[McpResourceContents]: ...


class McpResourceTool(BaseTool):
    """Let the model read an MCP server's resources through one tool.

    Args:
        client: a connected :class:`~agcore_sync.tools.mcp.client.McpClient`
            (the tool holds it, it does not own it).
        name: the tool's name (default ``read_resource``).
        permissions: the permissions the tool declares.

    Raises:
        McpError: listing the resources failed (a server without resources
            answers -32601: build no such tool for it).
    """

    def __init__(
        self, client: _ResourceReader, *, name: str = "read_resource", permissions: Sequence[Any] = ()
    ) -> None:
        self.client = client
        self.name = name
        self.required_permissions = tuple(permissions)
        listed = [f"- {r.uri}: {r.name}{f' ({r.description})' if r.description else ''}"
                  for r in client.list_resources()[:MAX_LISTED]]
        templates: List[str] = []
        if len(listed) < MAX_LISTED:
            try:
                templates = [f"- {t.uri_template}: {t.name}" for t in client.list_resource_templates()]
            except Exception:  # noqa: BLE001 - templates are optional; the server may not list any
                templates = []
        lines = [f"Read a resource of MCP server {client.server_name!r} by its URI."]
        if listed:
            lines += ["Resources:", *listed]
        if templates:
            lines += ["URI templates (fill in the {braces}):", *templates[: MAX_LISTED - len(listed)]]
        self.description = "\n".join(lines)
        self.parameters: Dict[str, Any] = {
            "type": "object",
            "properties": {"uri": {"type": "string", "description": "the resource's URI"}},
            "required": ["uri"],
        }

    def __repr__(self) -> str:
        return f"McpResourceTool({self.name!r}, server={self.client.server_name!r})"

    def execute(self, args: Dict[str, Any]) -> Any:
        """Read ``args["uri"]``; return its text, or blocks when it holds an image or several parts.

        Raises:
            InvalidArgumentsError: ``uri`` is missing or not a string.
            McpError: the server refused (unknown URI...), recoverable.
        """
        uri = args.get("uri")
        if not isinstance(uri, str) or not uri:
            raise InvalidArgumentsError("read_resource needs a non-empty string uri", self.name)
        parts = self.client.read_resource(uri)
        if len(parts) == 1 and parts[0].text is not None:
            return parts[0].text
        blocks = mcp_blocks([_as_embedded(part) for part in parts])
        return list(blocks) if blocks else f"[resource <{uri}> is empty]"


def _as_embedded(part: McpResourceContents) -> Dict[str, Any]:
    resource: Dict[str, Optional[str]] = {"uri": part.uri, "mimeType": part.mime_type}
    if part.text is not None:
        resource["text"] = part.text
    elif part.blob is not None:
        resource["blob"] = base64.b64encode(part.blob).decode("ascii")
    return {"type": "resource", "resource": resource}
