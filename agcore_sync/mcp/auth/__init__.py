"""OAuth 2.1 for MCP servers over Streamable HTTP: ``HttpTransport(url, auth=McpOAuth(...))``.

Modules, one idea each: :mod:`~agcore_sync.mcp.auth.discovery`
(challenges, protected resource and authorization server metadata),
:mod:`~agcore_sync.mcp.auth.flows` (PKCE, the authorization URL,
token requests), :mod:`~agcore_sync.mcp.auth.registration` (dynamic
client registration), :mod:`~agcore_sync.mcp.auth.storage` (tokens
and registrations), :mod:`~agcore_sync.mcp.auth.jwt_assertion`
(``private_key_jwt``, optional extra ``oauth-jwt``) and
:mod:`~agcore_sync.mcp.auth.oauth` (:class:`McpOAuth`, which runs them).

.. versionadded:: 0.2
"""

from __future__ import annotations

from agcore_sync.mcp.auth.oauth import McpOAuth, console_authorize, headless_authorize
from agcore_sync.mcp.auth.storage import (
    FileTokenStorage,
    InMemoryTokenStorage,
    OAuthClientInfo,
    OAuthToken,
    TokenStorage,
)

__all__ = [
    "McpOAuth",
    "headless_authorize",
    "console_authorize",
    "TokenStorage",
    "InMemoryTokenStorage",
    "FileTokenStorage",
    "OAuthToken",
    "OAuthClientInfo",
]
