"""Dynamic client registration (RFC 7591), the last of the registration ways MCP lists.

The order (MCP 2025-11-25 "Client Registration Approaches") is decided by
:class:`~agcore_sync.mcp.auth.McpOAuth`: a pre-registered client id,
then a stored registration, then a Client ID Metadata Document where the
server accepts one, then this module's registration where the server has a
``registration_endpoint``.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Sequence

import requests

from agcore_sync.mcp.auth._guard import read_document, require_https
from agcore_sync.mcp.auth.discovery import ServerMetadata
from agcore_sync.mcp.auth.flows import TOKEN_TIMEOUT
from agcore_sync.mcp.auth.storage import OAuthClientInfo
from agcore_sync.mcp.errors import McpAuthError

__all__ = ["register_client", "registration_auth_method"]


def registration_auth_method(metadata: ServerMetadata) -> str:
    """Return the token endpoint authentication method to ask for: a public client where allowed."""
    supported = metadata.token_endpoint_auth_methods_supported
    for method in ("none", "client_secret_basic", "client_secret_post"):
        if method in supported:
            return method
    return "client_secret_basic"


def register_client(session: requests.Session, metadata: ServerMetadata, *, client_name: str,
                    redirect_uris: Sequence[str], grant_types: Sequence[str], scope: Any = None) -> OAuthClientInfo:
    """Register a client at ``metadata.registration_endpoint`` and return its registration.

    Raises:
        McpAuthError: the server has no registration endpoint, it is not
            https off loopback (``insecure_url``), the answer is over 1 MB
            (``response_too_large``), the server refused, or answered
            without a ``client_id``.
    """
    endpoint = metadata.registration_endpoint
    if not endpoint:
        raise McpAuthError(f"authorization server {metadata.issuer} offers no dynamic client registration; "
                           "give McpOAuth a client_id", reason="no_registration")
    require_https(endpoint, "registration endpoint")
    body: Dict[str, Any] = {
        "client_name": client_name,
        "redirect_uris": list(redirect_uris),
        "grant_types": list(grant_types),
        "response_types": ["code"] if "authorization_code" in grant_types else [],
        "token_endpoint_auth_method": registration_auth_method(metadata),
    }
    if scope:
        body["scope"] = scope
    try:
        response = session.post(endpoint, json=body, headers={"Accept": "application/json"},
                                timeout=TOKEN_TIMEOUT, allow_redirects=False, stream=True)
    except (requests.RequestException, OSError) as exc:
        raise McpAuthError(f"client registration at {endpoint} failed: {type(exc).__name__}",
                           reason="registration_failed") from exc
    try:
        status = response.status_code
        content = read_document(response, endpoint, "registration response", failed="registration_failed")
    finally:
        response.close()
    try:
        document = json.loads(content)
    except ValueError:
        document = None
    if status >= 400 or not isinstance(document, dict) or not isinstance(document.get("client_id"), str):
        code = document.get("error") if isinstance(document, dict) else None
        raise McpAuthError(f"client registration at {endpoint} answered HTTP {status}"
                           + (f" with error {code!r}" if isinstance(code, str) else " without a client_id"),
                           reason="registration_failed", status_code=status)
    secret = document.get("client_secret")
    method = document.get("token_endpoint_auth_method")
    return OAuthClientInfo(client_id=document["client_id"], client_secret=secret if isinstance(secret, str) else None,
                           token_endpoint_auth_method=method if isinstance(method, str) else None,
                           redirect_uris=tuple(redirect_uris))
