"""Bearer tokens for the Streamable HTTP app: :class:`BearerAuth` (RFC 6750, RFC 9728 metadata).

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple
from urllib.parse import urlsplit

__all__ = ["BearerAuth", "METADATA_PATH"]

#: Where the protected-resource metadata is served (RFC 9728), with the resource's path appended.
METADATA_PATH = "/.well-known/oauth-protected-resource"

#: What :meth:`BearerAuth.check` refuses with: status line, headers, body.
Refusal = Tuple[str, List[Tuple[str, str]], bytes]


class BearerAuth:
    """Verify ``Authorization: Bearer`` tokens and describe the resource to OAuth clients.

    Args:
        verify: ``verify(token)`` returns the token's claims (a dict) or None
            when the token is invalid or expired; it must not raise for a
            bad token. JWTs can be checked with the ``oauth-jwt`` extra's PyJWT.
        resource: the MCP endpoint's canonical URL (the token's audience).
        authorization_servers: the issuers' URLs clients get tokens from.
        scopes: scopes every request needs; a token lacking one gets 403
            ``insufficient_scope``.

    .. versionadded:: 0.1.0
    """

    def __init__(self, verify: Callable[[str], Optional[Dict[str, Any]]], *, resource: str,
                 authorization_servers: Iterable[str], scopes: Optional[Iterable[str]] = None) -> None:
        if not callable(verify):
            raise TypeError(f"BearerAuth: verify must be callable, not {type(verify).__name__}")
        parts = urlsplit(resource) if isinstance(resource, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"BearerAuth: resource must be an http(s) URL, got {resource!r}")
        self.verify = verify
        self.resource = resource
        self.authorization_servers = list(authorization_servers)
        if not self.authorization_servers:
            raise ValueError("BearerAuth: name at least one authorization server")
        self.scopes = list(scopes or ())
        path = parts.path.rstrip("/")
        #: The path the metadata is served at.
        self.metadata_path = METADATA_PATH + path
        #: The metadata URL sent in ``WWW-Authenticate``.
        self.metadata_url = f"{parts.scheme}://{parts.netloc}{self.metadata_path}"

    def metadata(self) -> Dict[str, Any]:
        """Return the protected-resource metadata document (RFC 9728)."""
        document: Dict[str, Any] = {"resource": self.resource, "authorization_servers": self.authorization_servers,
                                    "bearer_methods_supported": ["header"]}
        if self.scopes:
            document["scopes_supported"] = self.scopes
        return document

    def metadata_response(self) -> Refusal:
        """Return the metadata as a 200 JSON answer."""
        body = json.dumps(self.metadata()).encode("utf-8")
        return "200 OK", [("Content-Type", "application/json"), ("Access-Control-Allow-Origin", "*")], body

    def check(self, environ: Dict[str, Any]) -> Tuple[Optional[Refusal], Optional[Dict[str, Any]]]:
        """Check a request's token; return ``(refusal, None)`` or ``(None, claims)``."""
        header = environ.get("HTTP_AUTHORIZATION", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return self._refuse("401 Unauthorized", None, "a bearer token is required"), None
        try:
            claims = self.verify(token.strip())
        except Exception:  # noqa: BLE001 - a verifier that raises refuses the token; never echo it
            claims = None
        if not isinstance(claims, dict):
            return self._refuse("401 Unauthorized", "invalid_token", "the token is invalid or expired"), None
        granted = _scopes(claims)
        lacking = [scope for scope in self.scopes if scope not in granted]
        if lacking:
            return self._refuse("403 Forbidden", "insufficient_scope", "the token lacks a required scope"), None
        return None, claims

    def _refuse(self, status: str, error: Optional[str], description: str) -> Refusal:
        parts = []
        if error is not None:
            parts.append(f'error="{error}"')
            parts.append(f'error_description="{description}"')
        if self.scopes:
            parts.append(f'scope="{" ".join(self.scopes)}"')
        parts.append(f'resource_metadata="{self.metadata_url}"')
        headers = [("WWW-Authenticate", "Bearer " + ", ".join(parts)), ("Content-Type", "application/json")]
        body = json.dumps({"error": error or "unauthorized", "error_description": description}).encode("utf-8")
        return status, headers, body


def _scopes(claims: Dict[str, Any]) -> List[str]:
    value = claims.get("scope", claims.get("scp", claims.get("scopes", ())))
    if isinstance(value, str):
        return value.split()
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else []
