"""MCP as tools: each server tool as a :class:`~agcore_sync.tools.base.BaseTool`, and its resources as one tool.

:class:`McpTool` is one MCP server tool. Build them with :meth:`McpClient.into_tools
<agcore_sync.mcp.client.session.McpClient.into_tools>` and register them in a
:class:`~agcore_sync.tools.registry.ToolRegistry`. The adapter holds the
client, it does not own it: close the client when the tools are no longer
needed.

The adapter needs only "something that can call a tool",
:class:`McpToolCaller`, so it does not import the client package (the client
imports this module for ``into_tools``): an import-linter contract in
setup.cfg keeps it so.

:class:`McpResourceTool` offers a server's resources to the model as one
``read_resource`` tool taking a ``uri``; its description lists the
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
from typing import Any, Dict, List, Mapping, Optional, Protocol, Sequence

from agcore_sync import _instrument
from agcore_sync.mcp.errors import McpConnectionError, McpError
from agcore_sync.mcp.shared.content import ModelBlock, mcp_blocks
from agcore_sync.mcp.shared.resources import McpResource, McpResourceContents, McpResourceTemplate
from agcore_sync.mcp.shared.results import McpToolResult
from agcore_sync.tools.base import BaseTool
from agcore_sync.tools.error import InvalidArgumentsError, ToolExecutionError

__all__ = ["McpTool", "McpToolCaller", "content_blocks", "McpResourceTool", "MAX_LISTED"]

logger = _instrument.get_logger("agcore_sync.mcp")


class McpToolCaller(Protocol):
    """What an :class:`McpTool` calls through: an :class:`~agcore_sync.mcp.client.session.McpClient`, or a double.

    .. versionadded:: 0.1.0
    """

    #: The server's name, for errors and ``repr``.
    server_name: str

    def call_tool(
        self, name: str, args: Optional[Mapping[str, Any]] = None, timeout: Optional[float] = None
    ) -> McpToolResult:
        """Call the server's tool ``name`` with ``args`` and return its result (``isError`` included)."""


class McpTool(BaseTool):
    """Call one tool of an MCP server through its client.

    Args:
        client: the connected client the calls go through (an
            :class:`~agcore_sync.mcp.client.session.McpClient`, or anything
            that is an :class:`McpToolCaller`).
        tool: the tool as ``tools/list`` described it (``name``,
            ``description``, ``inputSchema``).
        prefix: prepended verbatim to the name the model sees (None: the
            server's name).
        permissions: the permissions the tool declares. A server's
            annotations (``readOnlyHint``...) are hints from the server, not
            trust, so they never count here.
        idempotent: the tool is safe to run twice: a call that fails with
            :class:`~agcore_sync.tools.error.McpConnectionError` (the server
            went away, perhaps after running it) is made once more, which
            waits for the client's restart within its timeout. Never retried:
            timeouts (the first call may still be running), JSON-RPC errors,
            ``isError`` results. The server's ``idempotentHint`` never counts.

    ``execute`` returns, when the result holds anything but text, a list of
    blocks the model reads (:func:`content_blocks`: images as
    :class:`~agcore_sync.llm.media.ImageBlock`, audio as a text marker,
    resource links and embedded resources as text with their URI);
    otherwise the result's text, else its ``structuredContent``, else the
    list of content dicts. A tool with an ``outputSchema`` must return
    ``structuredContent`` that matches it, else the call raises a
    recoverable :class:`~agcore_sync.tools.error.McpError` naming what is
    wrong (the model reads it). An ``isError`` result raises a
    recoverable :class:`~agcore_sync.tools.error.ToolExecutionError` whose
    message is the server's text; a JSON-RPC error is the client's
    :class:`~agcore_sync.tools.error.McpError` (recoverable), a timeout or a
    lost server its unrecoverable subclasses.
    """

    def __init__(
        self,
        client: McpToolCaller,
        tool: Mapping[str, Any],
        *,
        prefix: Optional[str] = None,
        permissions: Sequence[Any] = (),
        idempotent: bool = False,
    ) -> None:
        #: The tool's name on the server (what ``tools/call`` is sent).
        self.server_tool_name: str = tool["name"]
        self.name = f"{prefix}{self.server_tool_name}" if prefix else self.server_tool_name
        self.description = tool.get("description") or ""
        schema = tool.get("inputSchema")
        self.parameters: Dict[str, Any] = (
            dict(schema) if isinstance(schema, Mapping) else {"type": "object", "properties": {}}
        )
        output_schema = tool.get("outputSchema")
        #: The tool's ``outputSchema`` (None if it has none).
        self.output_schema: Optional[Dict[str, Any]] = (
            dict(output_schema) if isinstance(output_schema, Mapping) else None
        )
        self._output_validator: Any = None
        self.required_permissions = tuple(permissions)
        #: Whether a call is retried once after McpConnectionError.
        self.idempotent = bool(idempotent)
        self.client = client

    def __repr__(self) -> str:
        return f"McpTool({self.name!r}, server={self.client.server_name!r})"

    def execute(self, args: Dict[str, Any]) -> Any:
        """Call the tool on the server and return its text, structured content or blocks.

        An idempotent tool's call that fails with
        :class:`McpConnectionError` is made once more.

        Raises:
            ToolExecutionError: the server answered ``isError`` (recoverable).
            McpError: the server answered with a JSON-RPC error, timed out
                (:class:`McpTimeoutError`) or is gone (:class:`McpConnectionError`;
                for an idempotent tool, on the retry too).
        """
        try:
            result = self.client.call_tool(self.server_tool_name, args)
        except McpConnectionError as exc:
            if not self.idempotent:
                raise
            logger.info("retrying idempotent MCP tool %r once: %s", self.name, exc)
            result = self.client.call_tool(self.server_tool_name, args)
        if result.is_error:
            raise ToolExecutionError(
                result.text or f"MCP tool {self.server_tool_name!r} of server {self.client.server_name!r} failed",
                tool_name=self.name,
            )
        if self.output_schema is not None:
            self._check_structured(result.structured_content)
        if any(isinstance(b, dict) and b.get("type") != "text" for b in result.content):
            return content_blocks(result.content)
        if result.text:
            return result.text
        if result.structured_content is not None:
            return result.structured_content
        return list(result.content)

    def _check_structured(self, value: Any) -> None:
        """Raise a recoverable McpError unless ``value`` matches the tool's ``outputSchema``."""
        where = f"MCP tool {self.server_tool_name!r} of server {self.client.server_name!r}"
        if value is None:
            raise McpError(f"{where} declares an outputSchema but returned no structuredContent", tool_name=self.name)
        validator = self._output_validator
        if validator is None:
            import jsonschema

            cls = jsonschema.validators.validator_for(self.output_schema, default=jsonschema.Draft202012Validator)
            try:
                cls.check_schema(self.output_schema)
            except jsonschema.SchemaError as exc:
                raise McpError(f"{where} has an invalid outputSchema: {exc.message}", tool_name=self.name) from None
            validator = self._output_validator = cls(self.output_schema)
        error = next(iter(validator.iter_errors(value)), None)
        if error is not None:
            raise McpError(
                f"{where} returned structuredContent that does not match its outputSchema "
                f"at {error.json_path}: {error.message[:300]}",
                tool_name=self.name,
            )


def content_blocks(content: Sequence[Any]) -> List[ModelBlock]:
    """Translate an MCP tool result's content into blocks a tool result can carry.

    Images become :class:`~agcore_sync.llm.media.ImageBlock`; audio, resource
    links, embedded resources and unknown types become text (see
    :mod:`agcore_sync.mcp.shared.content` for the exact rules).

    .. versionadded:: 0.1.0
    """
    return list(mcp_blocks(content))


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
        client: a connected :class:`~agcore_sync.mcp.client.session.McpClient`
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
