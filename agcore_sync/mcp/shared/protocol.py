"""MCP protocol facts the client and transports share: versions, envelopes, levels.

Nothing here does I/O. The 2026-07-28 revision drops ``initialize``: every
client request carries the protocol version, the client's identity and its
capabilities in ``params._meta`` under the reserved keys below, and the
server names itself in each result's ``_meta``.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import logging
import time
from typing import Any, Dict

__all__ = [
    "HANDSHAKE_VERSIONS",
    "MODERN_VERSION",
    "KNOWN_VERSIONS",
    "LATEST_HANDSHAKE_VERSION",
    "PROTOCOL_VERSION_META_KEY",
    "CLIENT_INFO_META_KEY",
    "CLIENT_CAPABILITIES_META_KEY",
    "SERVER_INFO_META_KEY",
    "DISCOVER_TIMEOUT",
    "LOG_LEVELS",
    "client_capabilities",
    "modern_meta",
    "fill_elicitation_defaults",
    "object_or_empty",
    "now",
]

#: Versions negotiated through ``initialize``, oldest first.
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
#: The stateless revision: ``server/discover`` and per-request ``_meta``.
MODERN_VERSION = "2026-07-28"
#: Every version this client speaks, oldest first.
KNOWN_VERSIONS = (*HANDSHAKE_VERSIONS, MODERN_VERSION)
#: What ``initialize`` offers by default.
LATEST_HANDSHAKE_VERSION = HANDSHAKE_VERSIONS[-1]

#: Request ``_meta`` key (2026-07-28): the protocol version of this request.
PROTOCOL_VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion"
#: Request ``_meta`` key (2026-07-28): the client's ``Implementation``.
CLIENT_INFO_META_KEY = "io.modelcontextprotocol/clientInfo"
#: Request ``_meta`` key (2026-07-28): the client's capabilities.
CLIENT_CAPABILITIES_META_KEY = "io.modelcontextprotocol/clientCapabilities"
#: Result ``_meta`` key (2026-07-28): the server's ``Implementation``.
SERVER_INFO_META_KEY = "io.modelcontextprotocol/serverInfo"

#: Longest wait for a ``server/discover`` probe (the client timeout, if
#: shorter, wins); a server that does not answer is taken for an older one.
DISCOVER_TIMEOUT = 10.0

#: MCP log levels (RFC 5424 severities) to :mod:`logging` levels, in
#: severity order: notice and warning are WARNING; critical, alert and
#: emergency are CRITICAL.
LOG_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.WARNING,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


def client_capabilities(*, roots: bool, sampling: bool, elicitation: bool) -> Dict[str, Any]:
    """Return the capabilities object declaring exactly what the client can answer."""
    capabilities: Dict[str, Any] = {}
    if roots:
        capabilities["roots"] = {}
    if sampling:
        capabilities["sampling"] = {}
    if elicitation:
        capabilities["elicitation"] = {"form": {}}
    return capabilities


def modern_meta(version: str, client_info: Dict[str, Any], capabilities: Dict[str, Any]) -> Dict[str, Any]:
    """Return the reserved ``_meta`` entries every 2026-07-28 request carries."""
    return {
        PROTOCOL_VERSION_META_KEY: version,
        CLIENT_INFO_META_KEY: client_info,
        CLIENT_CAPABILITIES_META_KEY: capabilities,
    }


def fill_elicitation_defaults(result: Dict[str, Any], params: Dict[str, Any]) -> Dict[str, Any]:
    """Fill properties missing from an accepted elicitation's content with their schema defaults.

    Args:
        result: what the elicitation handler returned.
        params: the ``elicitation/create`` params, with ``requestedSchema``.

    Returns:
        ``result`` unchanged unless its action is ``accept``; then a copy
        whose ``content`` has every property of ``requestedSchema`` that has
        a ``default`` and was not given.
    """
    if result.get("action") != "accept":
        return result
    schema = params.get("requestedSchema")
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return result
    content = result.get("content")
    filled = dict(content) if isinstance(content, dict) else {}
    for name, spec in properties.items():
        if name not in filled and isinstance(spec, dict) and "default" in spec:
            filled[name] = spec["default"]
    return {**result, "content": filled}


def object_or_empty(value: Any) -> Dict[str, Any]:
    """Return ``value`` if it is a JSON object (a dict), else an empty dict.

    Servers may send ``params``, ``capabilities`` and the like as anything;
    the client reads them through this.
    """
    return value if isinstance(value, dict) else {}


def now() -> float:
    """Return the monotonic clock, in seconds."""
    return time.monotonic()
