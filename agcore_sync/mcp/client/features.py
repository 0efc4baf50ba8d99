"""The server features an :class:`~agcore_sync.mcp.client.session.McpClient` uses beyond tools.

:class:`ServerFeatures` is owned by ``McpClient``, whose methods of the
same names call it: resources (list, templates, read, subscribe),
prompts (list, get), ``completion/complete``, ``logging/setLevel``,
``ping`` and roots. It keeps its own state (the resource subscriptions)
and reaches the server only through the ``request`` callable the client
gives it (readiness check, then the client's ``Requester``). Every list
follows ``nextCursor`` to the end.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from agcore_sync import _instrument
from agcore_sync.mcp.errors import McpError
from agcore_sync.mcp.shared.pages import fetch_all
from agcore_sync.mcp.shared.prompts import McpPrompt, McpPromptResult
from agcore_sync.mcp.shared.resources import (
    McpResource,
    McpResourceContents,
    McpResourceTemplate,
    ResourceCallback,
    Subscriptions,
)

__all__ = ["ServerFeatures", "MCP_LOG_LEVELS"]

logger = _instrument.get_logger("agcore_sync.mcp")

#: The MCP (RFC 5424) log levels, least severe first.
MCP_LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
#: Python logging levels to the MCP level sent by ``set_logging_level``.
_FROM_PYTHON = ((logging.DEBUG, "debug"), (logging.INFO, "info"), (logging.WARNING, "warning"),
                (logging.ERROR, "error"), (logging.CRITICAL, "critical"))


class ServerFeatures:
    """Resources, prompts, completion, logging, ping and roots of one server.

    Args:
        server_name: the server's name, for errors and logs.
        request: ``request(method, params)`` sends one request once the
            client is connected and returns its result.
        replace_roots: ``replace_roots(roots)`` keeps the new roots and
            notifies the server.

    Owned by :class:`~agcore_sync.mcp.client.session.McpClient`; use its
    methods of the same names. Every method raises, besides what it lists,
    :class:`~agcore_sync.tools.error.McpNotInitializedError` before
    ``connect()`` or after ``close()``, and
    :class:`~agcore_sync.tools.error.McpConnectionError` /
    :class:`~agcore_sync.tools.error.McpTimeoutError` as any request.
    """

    def __init__(
        self,
        server_name: str,
        request: Callable[[str, Optional[Dict[str, Any]]], Dict[str, Any]],
        replace_roots: Callable[[List[Dict[str, Any]]], None],
    ) -> None:
        self.server_name = server_name
        self._send = request
        self._replace_roots = replace_roots
        self._subscriptions = Subscriptions()

    def _request(self, method: str, params: Optional[Dict[str, Any]]) -> Dict[str, Any]:
        return self._send(method, params)

    def _list(self, method: str, key: str) -> List[Dict[str, Any]]:
        return fetch_all(self._request, method, key, self.server_name)

    # -- resources --------------------------------------------------------

    def list_resources(self) -> List[McpResource]:
        """See :meth:`~agcore_sync.mcp.client.session.McpClient.list_resources`."""
        return [McpResource.from_wire(item) for item in self._list("resources/list", "resources")]

    def list_resource_templates(self) -> List[McpResourceTemplate]:
        """See :meth:`~agcore_sync.mcp.client.session.McpClient.list_resource_templates`."""
        items = self._list("resources/templates/list", "resourceTemplates")
        return [McpResourceTemplate.from_wire(item) for item in items]

    def read_resource(self, uri: str) -> List[McpResourceContents]:
        """See :meth:`~agcore_sync.mcp.client.session.McpClient.read_resource`."""
        result = self._request("resources/read", {"uri": _text("uri", uri)})
        contents = result.get("contents")
        try:
            return [
                McpResourceContents.from_wire(item)
                for item in (contents if isinstance(contents, list) else ())
                if isinstance(item, dict)
            ]
        except ValueError as exc:
            raise McpError(f"MCP server {self.server_name!r} answered resources/read badly: {exc}") from exc

    def subscribe_resource(self, uri: str, callback: ResourceCallback) -> None:
        """See :meth:`~agcore_sync.mcp.client.session.McpClient.subscribe_resource`."""
        if not callable(callback):
            raise TypeError(f"callback must be callable, not {type(callback).__name__}")
        uri = _text("uri", uri)
        # Registered first, so an update sent right after the answer is not missed.
        self._subscriptions.add(uri, callback)
        try:
            self._request("resources/subscribe", {"uri": uri})
        except BaseException:
            self._subscriptions.remove(uri)
            raise

    def unsubscribe_resource(self, uri: str) -> None:
        """See :meth:`~agcore_sync.mcp.client.session.McpClient.unsubscribe_resource`."""
        uri = _text("uri", uri)
        self._subscriptions.remove(uri)
        self._request("resources/unsubscribe", {"uri": uri})

    def resource_updated(self, params: Dict[str, Any]) -> None:
        """Call the subscriber of one ``notifications/resources/updated`` (the client's worker runs it)."""
        uri = params.get("uri")
        callback = self._subscriptions.callback(uri) if isinstance(uri, str) else None
        if callback is None:
            logger.debug("MCP server %r updated %r, which no one subscribed to", self.server_name, uri)
            return
        callback(uri)

    # -- prompts and completion ---------------------------------------------

    def list_prompts(self) -> List[McpPrompt]:
        """See :meth:`~agcore_sync.mcp.client.session.McpClient.list_prompts`."""
        return [McpPrompt.from_wire(item) for item in self._list("prompts/list", "prompts")]

    def get_prompt(self, name: str, arguments: Optional[Mapping[str, str]] = None) -> McpPromptResult:
        """See :meth:`~agcore_sync.mcp.client.session.McpClient.get_prompt`."""
        params: Dict[str, Any] = {"name": _text("name", name)}
        if arguments:
            params["arguments"] = {str(key): str(value) for key, value in arguments.items()}
        return McpPromptResult.from_wire(self._request("prompts/get", params))

    def complete(
        self,
        ref: Tuple[str, str],
        argument: str,
        value: str,
        context: Optional[Mapping[str, str]] = None,
    ) -> List[str]:
        """See :meth:`~agcore_sync.mcp.client.session.McpClient.complete`."""
        params: Dict[str, Any] = {
            "ref": _ref(ref),
            "argument": {"name": _text("argument", argument), "value": str(value)},
        }
        if context:
            params["context"] = {"arguments": {str(k): str(v) for k, v in context.items()}}
        completion = self._request("completion/complete", params).get("completion")
        values = completion.get("values") if isinstance(completion, dict) else None
        return [item for item in (values if isinstance(values, list) else ()) if isinstance(item, str)]

    # -- logging, ping, roots -------------------------------------------------

    def set_logging_level(self, level: Union[str, int]) -> None:
        """See :meth:`~agcore_sync.mcp.client.session.McpClient.set_logging_level`."""
        self._request("logging/setLevel", {"level": _mcp_level(level)})

    def ping(self) -> None:
        """See :meth:`~agcore_sync.mcp.client.session.McpClient.ping`."""
        self._request("ping", None)

    def set_roots(self, roots: Sequence[Mapping[str, Any]]) -> None:
        """See :meth:`~agcore_sync.mcp.client.session.McpClient.set_roots`."""
        self._replace_roots([dict(root) for root in roots])


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty str, got {value!r}")
    return value


def _ref(ref: Any) -> Dict[str, str]:
    if isinstance(ref, (tuple, list)) and len(ref) == 2 and isinstance(ref[1], str):
        if ref[0] == "prompt":
            return {"type": "ref/prompt", "name": ref[1]}
        if ref[0] == "resource":
            return {"type": "ref/resource", "uri": ref[1]}
    raise ValueError(f"ref must be ('prompt', name) or ('resource', uri_template), got {ref!r}")


def _mcp_level(level: Union[str, int]) -> str:
    if isinstance(level, str) and level.lower() in MCP_LOG_LEVELS:
        return level.lower()
    if isinstance(level, int) and not isinstance(level, bool):
        chosen = "debug"
        for number, name in _FROM_PYTHON:
            if level >= number:
                chosen = name
        return chosen
    raise ValueError(f"level must be one of {', '.join(MCP_LOG_LEVELS)} or a logging level number, got {level!r}")

