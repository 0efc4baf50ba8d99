"""Version negotiation: ``initialize`` (2024-11-05 .. 2025-11-25) or ``server/discover`` (2026-07-28).

:func:`negotiate` runs once, inside ``McpClient.connect()``, through the
client's own request function, and returns what was agreed. It never
cancels ``initialize`` or ``server/discover`` (the specification forbids it).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

import attrs

from agcore_sync import _check, _instrument
from agcore_sync.mcp.client._requests import RequestOptions
from agcore_sync.mcp.errors import McpConnectionError, McpError
from agcore_sync.mcp.shared import jsonrpc
from agcore_sync.mcp.shared import protocol as proto
from agcore_sync.mcp.transports.base import Transport

__all__ = ["Agreement", "negotiate", "check_protocol", "check_client_arguments"]


def check_client_arguments(server_name: Any, transport: Any, timeout: Any) -> None:
    """Check ``McpClient``'s first three arguments, one line naming the one that is wrong.

    Raises:
        TypeError: ``server_name`` is not a non-empty str, or ``transport`` not a Transport.
        ValueError: ``timeout`` is not a positive number or None.
    """
    if not isinstance(server_name, str) or not server_name:
        raise TypeError(f"McpClient: server_name must be a non-empty str, got {server_name!r}")
    _check.instance("McpClient", "transport", transport, Transport,
                    "a transport such as StdioTransport('npx', [...]) or HttpTransport(url)")
    _check.timeout("McpClient", timeout)


def check_protocol(protocol: Optional[str]) -> None:
    """Raise ValueError unless ``protocol`` is None, ``"auto"`` or a known version."""
    if protocol is not None and protocol != "auto" and protocol not in proto.KNOWN_VERSIONS:
        raise ValueError(f"protocol must be None, 'auto' or one of {', '.join(proto.KNOWN_VERSIONS)}; got {protocol!r}")

logger = _instrument.get_logger("agcore_sync.mcp")

#: ``request(method, params, options) -> result``: the client's request function.
RequestFunction = Callable[[str, Optional[Dict[str, Any]], RequestOptions], Dict[str, Any]]


@attrs.frozen
class Agreement:
    """What the handshake settled.

    Attributes:
        version: the protocol version spoken from now on.
        server_info: the server's ``Implementation`` dict, if it sent one.
        capabilities: the server's capabilities.
        instructions: the server's instructions, if any.
        request_meta: on 2026-07-28, the ``_meta`` entries every request
            carries; None for the handshake versions.
    """

    version: str
    server_info: Optional[Dict[str, Any]]
    capabilities: Dict[str, Any]
    instructions: Optional[str]
    request_meta: Optional[Dict[str, Any]] = None


def negotiate(
    protocol: Optional[str],
    request: RequestFunction,
    transport: Transport,
    *,
    server_name: str,
    client_info: Dict[str, Any],
    capabilities: Dict[str, Any],
    timeout: Optional[float],
) -> Agreement:
    """Agree on a protocol version with the server, as ``McpClient(protocol=...)`` asks.

    None offers 2025-11-25 through ``initialize``; a handshake version
    offers that one; ``"auto"`` probes ``server/discover`` and falls back to
    ``initialize`` on any error or timeout; ``"2026-07-28"`` requires it.
    Any handshake version the server answers is accepted. The transport is
    told the version before the request that speaks it: 2026-07-28 before
    ``server/discover`` (HTTP routes by it), none again before a fallback
    ``initialize``, the agreed handshake version after ``initialize``.

    Raises:
        McpConnectionError: the server went away.
        McpTimeoutError: ``initialize`` was not answered in time.
        McpError: the server refused, or answered a version this client does not know.
    """
    session = _Session(request, transport, server_name, client_info, capabilities, timeout)
    if protocol == proto.MODERN_VERSION:
        try:
            result = session.discover()
        except McpConnectionError:
            raise
        except McpError as exc:
            raise McpError(
                f"MCP server {server_name!r} does not speak protocol {proto.MODERN_VERSION}: {exc}",
                code=exc.code,
                data=exc.data,
            ) from exc
        return session.require(result)
    if protocol == "auto":
        return session.auto()
    return session.initialize(protocol or proto.LATEST_HANDSHAKE_VERSION)


class _Session:
    """The handshake's state and steps (one per ``negotiate`` call)."""

    def __init__(
        self,
        request: RequestFunction,
        transport: Transport,
        server_name: str,
        client_info: Dict[str, Any],
        capabilities: Dict[str, Any],
        timeout: Optional[float],
    ) -> None:
        self.request = request
        self.transport = transport
        self.server_name = server_name
        self.client_info = client_info
        self.capabilities = capabilities
        self.timeout = timeout

    def auto(self) -> Agreement:
        try:
            result = self.discover()
        except McpConnectionError:
            raise
        except McpError as exc:
            logger.debug("server/discover failed on %r (%s); falling back to initialize", self.server_name, exc)
        else:
            agreement = self.adopt(result)
            if agreement is not None:
                return agreement
        # initialize is sent without a version: the server has not agreed to one.
        self.transport.set_protocol_version(None)
        try:
            return self.initialize(proto.LATEST_HANDSHAKE_VERSION)
        except McpError as exc:
            # A discover that timed out here but reached the server can lock
            # the connection to 2026-07-28; the server then says so with
            # -32022 and the versions it supports. Probe once more.
            supported = exc.data.get("supported") if isinstance(exc.data, dict) else None
            if exc.code != jsonrpc.UNSUPPORTED_PROTOCOL_VERSION or proto.MODERN_VERSION not in (supported or ()):
                raise
            return self.require(self.discover())

    def discover(self) -> Dict[str, Any]:
        # The transport speaks 2026-07-28 from the probe on: over HTTP the
        # server routes the POST by its MCP-Protocol-Version and Mcp-Method.
        self.transport.set_protocol_version(proto.MODERN_VERSION)
        meta = proto.modern_meta(proto.MODERN_VERSION, self.client_info, self.capabilities)
        timeout = proto.DISCOVER_TIMEOUT if self.timeout is None else min(self.timeout, proto.DISCOVER_TIMEOUT)
        return self.request("server/discover", {"_meta": meta}, RequestOptions(timeout=timeout, cancellable=False))

    def require(self, result: Dict[str, Any]) -> Agreement:
        agreement = self.adopt(result)
        if agreement is None:
            raise McpError(
                f"MCP server {self.server_name!r} does not offer protocol {proto.MODERN_VERSION} "
                f"(it supports {result.get('supportedVersions')!r})"
            )
        return agreement

    def adopt(self, result: Dict[str, Any]) -> Optional[Agreement]:
        """Return the 2026-07-28 agreement a discover result offers, or None if it offers none."""
        supported = result.get("supportedVersions")
        if not isinstance(supported, list) or proto.MODERN_VERSION not in supported:
            return None
        meta = result.get("_meta")
        info = meta.get(proto.SERVER_INFO_META_KEY) if isinstance(meta, dict) else None
        return Agreement(
            version=proto.MODERN_VERSION,
            server_info=info if isinstance(info, dict) else None,
            capabilities=proto.object_or_empty(result.get("capabilities")),
            instructions=result.get("instructions"),
            request_meta=proto.modern_meta(proto.MODERN_VERSION, self.client_info, self.capabilities),
        )

    def initialize(self, offer: str) -> Agreement:
        params = {"protocolVersion": offer, "capabilities": self.capabilities, "clientInfo": self.client_info}
        result = self.request("initialize", params, RequestOptions(timeout=self.timeout, cancellable=False))
        version = result.get("protocolVersion")
        if version not in proto.HANDSHAKE_VERSIONS:
            raise McpError(
                f"MCP server {self.server_name!r} answered protocol version {version!r}, which this client "
                f"does not know (it speaks {', '.join(proto.KNOWN_VERSIONS)}); the server was stopped"
            )
        self.transport.set_protocol_version(version)
        self.transport.send(jsonrpc.notification("notifications/initialized"), timeout=self.timeout)
        info = result.get("serverInfo")
        return Agreement(
            version=version,
            server_info=info if isinstance(info, dict) else None,
            capabilities=proto.object_or_empty(result.get("capabilities")),
            instructions=result.get("instructions"),
        )

