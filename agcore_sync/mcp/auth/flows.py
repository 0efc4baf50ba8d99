"""The OAuth 2.1 requests themselves: PKCE, the authorization URL, the token endpoint.

Pure helpers plus one function per token request; each token request
authenticates the client the way its registration (or the server's
metadata) says: ``client_secret_basic`` (HTTP Basic over the
form-encoded id and secret, RFC 6749 section 2.3.1), ``client_secret_post``
(both in the body), ``private_key_jwt`` (a signed assertion, RFC 7523;
needs the optional ``oauth-jwt`` extra) or ``none`` (``client_id`` only).
Every token request carries the ``resource`` parameter (RFC 8707).

A token response must be JSON with an ``access_token``; anything else,
and every error answer, raises :class:`~agcore_sync.tools.error.McpAuthError`
naming the OAuth ``error`` code only (never the body: it may hold a token).
The token endpoint must be https (plain http only on a loopback host),
checked before the request is built, and an answer above 1 MB is refused
(:mod:`~agcore_sync.mcp.auth._guard`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from typing import Any, Dict, Optional, Tuple
from urllib.parse import parse_qs, quote, urlencode, urlsplit, urlunsplit

import requests

from agcore_sync.mcp.auth._guard import read_document, require_https
from agcore_sync.mcp.auth.storage import OAuthClientInfo, OAuthToken
from agcore_sync.mcp.errors import McpAuthError

__all__ = [
    "make_pkce",
    "make_state",
    "authorization_url",
    "parse_redirect",
    "request_token",
    "choose_auth_method",
    "JWT_BEARER_GRANT",
]

#: Seconds (connect, read) for each token or registration request.
TOKEN_TIMEOUT = (10.0, 30.0)
#: The RFC 7523 grant type of an assertion grant (e.g. an ID-JAG).
JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
#: The client authentication methods this module speaks, most preferred first.
AUTH_METHODS = ("client_secret_basic", "client_secret_post", "private_key_jwt", "none")


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def make_pkce() -> Tuple[str, str]:
    """Return a new PKCE ``(code_verifier, code_challenge)`` pair (S256, RFC 7636)."""
    verifier = _b64url(secrets.token_bytes(48))
    return verifier, _b64url(hashlib.sha256(verifier.encode("ascii")).digest())


def make_state() -> str:
    """Return a fresh, unguessable ``state`` value."""
    return _b64url(secrets.token_bytes(24))


def authorization_url(endpoint: str, params: Dict[str, Optional[str]]) -> str:
    """Return ``endpoint`` with ``params`` (None values left out) added to its query."""
    parts = urlsplit(endpoint)
    query = [(k, v) for k, v in parse_qs(parts.query, keep_blank_values=True).items() for v in v]
    query += [(k, v) for k, v in params.items() if v is not None]
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query, quote_via=quote), ""))


def parse_redirect(redirect_url: str, expected_state: str) -> str:
    """Return the authorization code of the redirect back to the client.

    Raises:
        McpAuthError: the redirect carries an OAuth error, a wrong or no
            ``state`` (``state_mismatch``), or no code.
    """
    if not isinstance(redirect_url, str):
        raise McpAuthError("the authorize callback must return the redirect URL as a str", reason="redirect_invalid")
    query = parse_qs(urlsplit(redirect_url).query)
    state = (query.get("state") or [None])[0]
    if state is None or not secrets.compare_digest(state, expected_state):
        raise McpAuthError("the authorization redirect carries a wrong or no state; its code was discarded",
                           reason="state_mismatch")
    error = (query.get("error") or [None])[0]
    if error:
        raise McpAuthError(f"the authorization server refused the authorization: {error}", reason=str(error))
    code = (query.get("code") or [None])[0]
    if not code:
        raise McpAuthError("the authorization redirect carries no code", reason="redirect_invalid")
    return code


def choose_auth_method(client: OAuthClientInfo, supported: Tuple[str, ...], *, has_key: bool) -> str:
    """Pick the token endpoint authentication method for ``client``."""
    if client.token_endpoint_auth_method:
        return client.token_endpoint_auth_method
    for method in AUTH_METHODS:
        if method not in supported:
            continue
        if method.startswith("client_secret") and not client.client_secret:
            continue
        if method == "private_key_jwt" and not has_key:
            continue
        return method
    if has_key:
        return "private_key_jwt"
    return "client_secret_basic" if client.client_secret else "none"


def _authenticate(data: Dict[str, str], headers: Dict[str, str], client: OAuthClientInfo, method: str,
                  audience: str, signer: Any) -> None:
    if method == "client_secret_basic" and client.client_secret:
        pair = f"{quote(client.client_id, safe='')}:{quote(client.client_secret, safe='')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
    elif method == "client_secret_post" and client.client_secret:
        data["client_id"] = client.client_id
        data["client_secret"] = client.client_secret
    elif method == "private_key_jwt":
        if signer is None:
            raise McpAuthError("the authorization server wants private_key_jwt but no private key was given",
                               reason="client_auth")
        data["client_assertion_type"] = _ASSERTION_TYPE
        data["client_assertion"] = signer(client.client_id, audience)
    else:
        data["client_id"] = client.client_id


def request_token(session: requests.Session, token_endpoint: str, data: Dict[str, str], client: OAuthClientInfo,
                  method: str, *, audience: str, signer: Any = None,
                  previous: Optional[OAuthToken] = None) -> OAuthToken:
    """POST one token request and return the checked tokens.

    Args:
        session: the transport's session.
        token_endpoint: where to POST.
        data: the grant's form fields (``grant_type``, ``code``, ``resource``, ...).
        client: who asks.
        method: the client authentication method (see :func:`choose_auth_method`).
        audience: the ``aud`` of a ``private_key_jwt`` assertion (the issuer).
        signer: ``signer(client_id, audience) -> str`` for ``private_key_jwt``.
        previous: the tokens being refreshed; their refresh token is kept
            when the server issues no new one.

    Raises:
        McpAuthError: the endpoint is not https off loopback (``insecure_url``,
            nothing sent), the request failed, the answer is over 1 MB
            (``response_too_large``), the server answered an error, or the
            answer has no ``access_token`` (``token_response``).
    """
    require_https(token_endpoint, "token endpoint")
    data = dict(data)
    headers = {"Accept": "application/json", "Content-Type": "application/x-www-form-urlencoded"}
    _authenticate(data, headers, client, method, audience, signer)
    try:
        response = session.post(token_endpoint, data=data, headers=headers, timeout=TOKEN_TIMEOUT,
                                allow_redirects=False, stream=True)
    except (requests.RequestException, OSError) as exc:
        raise McpAuthError(f"token request to {token_endpoint} failed: {type(exc).__name__}",
                           reason="token_unreachable") from exc
    try:
        status = response.status_code
        body = read_document(response, token_endpoint, "token response", failed="token_unreachable")
    finally:
        response.close()
    try:
        document = json.loads(body)
    except ValueError:
        document = None
    if status >= 400 or not isinstance(document, dict):
        code = document.get("error") if isinstance(document, dict) else None
        raise McpAuthError(
            f"token endpoint {token_endpoint} answered HTTP {status}"
            + (f" with error {code!r}" if isinstance(code, str) else " without a JSON object"),
            reason=code if isinstance(code, str) else "token_response", status_code=status)
    access = document.get("access_token")
    if not isinstance(access, str) or not access:
        raise McpAuthError(f"token response from {token_endpoint} has no access_token; nothing was stored",
                           reason="token_response", status_code=status)
    token_type = document.get("token_type") or "Bearer"
    if not isinstance(token_type, str) or token_type.lower() != "bearer":
        raise McpAuthError(f"token response from {token_endpoint} has token_type {token_type!r}, not Bearer",
                           reason="token_response", status_code=status)
    expires_in = document.get("expires_in")
    expires_at = None
    if isinstance(expires_in, (int, float)) and not isinstance(expires_in, bool) and expires_in >= 0:
        expires_at = time.time() + float(expires_in)
    refresh = document.get("refresh_token")
    if not isinstance(refresh, str) or not refresh:
        refresh = previous.refresh_token if previous is not None else None
    scope = document.get("scope")
    if not isinstance(scope, str):
        scope = data.get("scope") or (previous.scope if previous is not None else None)
    return OAuthToken(access_token=access, token_type="Bearer", refresh_token=refresh, expires_at=expires_at,
                      scope=scope)
