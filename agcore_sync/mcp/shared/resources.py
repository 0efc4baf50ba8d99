"""MCP resources: what ``resources/list``, ``resources/templates/list`` and ``resources/read`` return.

The values are frozen; :class:`Subscriptions` is the client's table of
``resources/subscribe`` callbacks, owned by
:class:`~agcore_sync.mcp.client.session.McpClient` and read on its worker
thread when ``notifications/resources/updated`` arrives.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import base64
import binascii
import threading
from typing import Any, Callable, Dict, Mapping, Optional

import attrs

__all__ = ["McpResource", "McpResourceTemplate", "McpResourceContents", "ResourceCallback", "Subscriptions"]

#: ``callback(uri)``: called on the client's worker thread for each
#: ``notifications/resources/updated`` of a subscribed resource.
ResourceCallback = Callable[[str], None]


def _optional_str(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None


@attrs.frozen
class McpResource:
    """One resource a server lists.

    Attributes:
        uri: the resource's URI (what :meth:`McpClient.read_resource` takes).
        name: its name.
        description: what it is, if the server says.
        mime_type: its MIME type, if known.

    .. versionadded:: 0.1.0
    """

    uri: str
    name: str
    description: Optional[str] = None
    mime_type: Optional[str] = None

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> McpResource:
        """Build from one ``resources/list`` entry."""
        uri = str(data.get("uri", ""))
        return cls(uri, str(data.get("name") or uri), _optional_str(data.get("description")),
                   _optional_str(data.get("mimeType")))


@attrs.frozen(kw_only=True)
class McpResourceTemplate:
    """A parameterised resource (RFC 6570 URI template) a server lists.

    Attributes:
        uri_template: the URI template, e.g. ``file:///{path}``.
        name: its name.
        description: what it is, if the server says.
        mime_type: the MIME type of what it expands to, if known.

    .. versionadded:: 0.1.0
    """

    uri_template: str
    name: str
    description: Optional[str] = None
    mime_type: Optional[str] = None

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> McpResourceTemplate:
        """Build from one ``resources/templates/list`` entry."""
        template = str(data.get("uriTemplate", ""))
        return cls(
            uri_template=template,
            name=str(data.get("name") or template),
            description=_optional_str(data.get("description")),
            mime_type=_optional_str(data.get("mimeType")),
        )


@attrs.frozen(kw_only=True)
class McpResourceContents:
    """One part of what ``resources/read`` returned: text or bytes.

    Attributes:
        uri: the URI of this part.
        mime_type: its MIME type, if known.
        text: its text (None for a binary part).
        blob: its bytes, decoded from base64 (None for a text part).

    .. versionadded:: 0.1.0
    """

    uri: str
    mime_type: Optional[str] = None
    text: Optional[str] = None
    blob: Optional[bytes] = None

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> McpResourceContents:
        """Build from one ``contents`` entry of a ``resources/read`` result.

        Raises:
            ValueError: ``blob`` is not valid base64.
        """
        blob = data.get("blob")
        decoded: Optional[bytes] = None
        if isinstance(blob, str):
            try:
                decoded = base64.b64decode(blob, validate=True)
            except (binascii.Error, ValueError) as exc:
                raise ValueError(f"resource {data.get('uri')!r} has a blob that is not valid base64") from exc
        return cls(
            uri=str(data.get("uri", "")),
            mime_type=_optional_str(data.get("mimeType")),
            text=_optional_str(data.get("text")),
            blob=decoded,
        )


class Subscriptions:
    """The resource URIs subscribed to and their callbacks; safe from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._callbacks: Dict[str, ResourceCallback] = {}

    def add(self, uri: str, callback: ResourceCallback) -> None:
        """Call ``callback(uri)`` on each update of ``uri`` (replacing an earlier one)."""
        with self._lock:
            self._callbacks[uri] = callback

    def remove(self, uri: str) -> bool:
        """Forget ``uri``; return whether it was subscribed."""
        with self._lock:
            return self._callbacks.pop(uri, None) is not None

    def uris(self) -> list:
        """Return the subscribed URIs (to subscribe again after a restart)."""
        with self._lock:
            return list(self._callbacks)

    def callback(self, uri: str) -> Optional[ResourceCallback]:
        """Return the callback for ``uri``, or None."""
        with self._lock:
            return self._callbacks.get(uri)
