"""The routing headers of a 2026-07-28 Streamable HTTP POST: ``Mcp-Method`` and ``Mcp-Name``.

On the stateless revision a server routes (and checks) each POST by its
headers before it reads the body: ``MCP-Protocol-Version`` names the
revision (a server serving both eras sends a POST without it down the
handshake path, where a ``server/discover`` without a session is refused),
``Mcp-Method`` must equal the body's ``method``, and for the methods that
name something (:data:`NAME_BEARING_METHODS`) ``Mcp-Name`` must equal the
name: the tool or prompt name, the resource URI. A mismatch or a missing
header is answered with a JSON-RPC error, not served. The handshake versions
send none of these two.

A value that would not survive as an HTTP field (anything outside printable
ASCII, leading or trailing blanks, or text that already looks like the
wrapper) is sent base64-wrapped as ``=?base64?<payload>?=``, the form the
specification gives for it; everything else is sent verbatim.
"""

from __future__ import annotations

import base64
import re
from typing import Any, Dict, Mapping, Optional

from agcore_sync.mcp.shared import protocol as proto

__all__ = ["NAME_BEARING_METHODS", "message_headers", "routing_headers", "header_value"]

#: Methods whose ``Mcp-Name`` header mirrors a parameter, and that parameter's key.
NAME_BEARING_METHODS: Mapping[str, str] = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}

_PRINTABLE = re.compile(r"[\x20-\x7E]*")
_WRAPPED = re.compile(r"=\?base64\?.*\?=")


def header_value(value: str) -> str:
    """Return ``value`` as an HTTP field value: verbatim if it survives one, else base64-wrapped."""
    if _PRINTABLE.fullmatch(value) and value == value.strip() and not _WRAPPED.fullmatch(value):
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


def routing_headers(message: Mapping[str, Any], version: Optional[str]) -> Dict[str, str]:
    """Return the ``Mcp-Method`` / ``Mcp-Name`` headers ``message`` needs at ``version`` (empty if none).

    Args:
        message: the JSON-RPC message about to be POSTed.
        version: the protocol version the transport speaks (None before any).
    """
    method = message.get("method")
    if version is None or version in proto.HANDSHAKE_VERSIONS or not isinstance(method, str):
        return {}
    headers = {"Mcp-Method": method}
    key = NAME_BEARING_METHODS.get(method)
    params = message.get("params")
    if key is not None and isinstance(params, dict) and isinstance(params.get(key), str):
        headers["Mcp-Name"] = header_value(params[key])
    return headers


def message_headers(message: Mapping[str, Any], version: Optional[str]) -> Dict[str, str]:
    """Return what the headers of the POST carrying ``message`` say about it: its type and routing."""
    return {"Content-Type": "application/json", **routing_headers(message, version)}
