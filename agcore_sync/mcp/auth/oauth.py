"""McpOAuth: OAuth 2.1 for :class:`~agcore_sync.mcp.transports.http.HttpTransport`.

The transport calls two methods, the whole seam:

- :meth:`McpOAuth.auth_headers` before every request: the
  ``Authorization: Bearer`` header of the stored token, refreshed first
  when it expires within ``refresh_margin`` seconds;
- :meth:`McpOAuth.handle_challenge` on a 401 or 403: it discovers the
  authorization server, registers, authorizes and stores the new tokens,
  then tells the transport to resend. A 401 first tries the refresh token
  (the access token expired); a ``403 insufficient_scope`` re-authorizes
  with the scopes already held plus those challenged (step-up). After
  ``max_retries`` challenges to one message the transport gets
  :class:`~agcore_sync.tools.error.McpAuthError` instead of a loop.

One flow runs at a time per ``McpOAuth`` (a lock); a thread that waited
for it resends with the token the other thread got. The interactive step
is the ``authorize(url) -> redirect_url`` callback, run on the thread
that made the request: :func:`headless_authorize` follows an
authorization server that redirects at once (tests, the conformance
suite), :func:`console_authorize` asks a person (scripts, notebooks), and
a web app passes a callback that raises its own exception to send the
user to ``url``, then calls :meth:`McpOAuth.complete_authorization` from
its redirect route (docs/examples/mcp_oauth_flask.py).

Nothing here logs, raises or shows a token, a secret or a code. Every
authorization-server URL (and the MCP server's own) must be https, plain
http only on a loopback host: checked before anything is sent there
(:mod:`~agcore_sync.mcp.auth._guard`).
"""

from __future__ import annotations

import threading
from typing import Callable, Dict, List, Optional, Tuple
from urllib.parse import parse_qs, urljoin, urlsplit

import attrs
import requests

from agcore_sync import _instrument
from agcore_sync.mcp.auth import discovery, flows
from agcore_sync.mcp.auth._guard import require_https
from agcore_sync.mcp.auth.jwt_assertion import private_key_signer
from agcore_sync.mcp.auth.registration import register_client
from agcore_sync.mcp.auth.storage import InMemoryTokenStorage, OAuthClientInfo, OAuthToken, TokenStorage
from agcore_sync.mcp.errors import McpAuthError

__all__ = ["McpOAuth", "headless_authorize", "console_authorize", "AuthorizeCallback", "DEFAULT_REDIRECT_URI"]

logger = _instrument.get_logger("agcore_sync.mcp.auth")

#: ``authorize(authorization_url) -> redirect_url``: the URL the authorization
#: server sent the user back to (with ``code`` and ``state``).
AuthorizeCallback = Callable[[str], str]
#: The redirect URI used when none is given (a loopback address, RFC 8252).
DEFAULT_REDIRECT_URI = "http://127.0.0.1:33418/callback"
#: Seconds :func:`headless_authorize` waits for the authorization server.
HEADLESS_TIMEOUT = (10.0, 30.0)
#: Grants McpOAuth can run.
GRANT_TYPES = ("authorization_code", "client_credentials", flows.JWT_BEARER_GRANT)
#: Pending authorizations kept for :meth:`McpOAuth.complete_authorization` (oldest dropped).
MAX_PENDING = 32


def headless_authorize(authorization_url: str) -> str:
    """Follow an authorization server that redirects without a user; return where it redirects.

    For tests, the conformance suite and servers that approve at once.

    Raises:
        McpAuthError: the URL is not https off loopback, or the server
            answered anything but a redirect.
    """
    require_https(authorization_url, "authorization endpoint")
    try:
        response = requests.get(authorization_url, allow_redirects=False, timeout=HEADLESS_TIMEOUT, stream=True)
    except (requests.RequestException, OSError) as exc:
        raise McpAuthError(f"authorization request failed: {type(exc).__name__}", reason="authorize_failed") from exc
    try:
        location = response.headers.get("Location")
        if not (300 <= response.status_code < 400) or not location:
            raise McpAuthError(f"the authorization server answered HTTP {response.status_code}, not a redirect: "
                               "it needs a person (use console_authorize or a browser)",
                               reason="authorize_failed", status_code=response.status_code)
    finally:
        response.close()
    return urljoin(authorization_url, location)


def console_authorize(authorization_url: str) -> str:
    """Ask a person: print the URL, then read the URL the browser was sent back to.

    For scripts and notebooks (``input()`` works in Jupyter). The browser
    lands on the redirect URI, which may show an error page when nothing
    listens there: its address is what to paste.
    """
    print(f"Open this URL in a browser and approve the access:\n\n    {authorization_url}\n")
    return input("Then paste the full URL the browser was sent back to: ").strip()


@attrs.frozen(kw_only=True)
class _Context:
    """What discovery found for one MCP server."""

    resource: str
    metadata: discovery.ServerMetadata
    resource_metadata: Optional[discovery.ResourceMetadata]


@attrs.frozen(kw_only=True)
class _Pending:
    """An authorization sent to a browser, waiting for its redirect."""

    server_key: str
    verifier: str = attrs.field(repr=False)
    context: _Context
    client: OAuthClientInfo
    scope: Optional[str]


def _union(*scopes: Optional[str]) -> Optional[str]:
    seen: List[str] = []
    for scope in scopes:
        for item in (scope or "").split():
            if item not in seen:
                seen.append(item)
    return " ".join(seen) or None


class McpOAuth:
    """OAuth 2.1 for one or more MCP servers over HTTP: ``HttpTransport(url, auth=McpOAuth(...))``.

    Registration, in the order the MCP specification gives: ``client_id``
    (pre-registered) if given; a registration stored earlier for that
    authorization server; ``client_metadata_url`` (a Client ID Metadata
    Document) where the server says it accepts one; dynamic registration
    where the server offers it.

    Args:
        authorize: ``authorize(authorization_url) -> redirect_url`` for the
            authorization code grant (see the module docstring); None means
            a stored token must do (else :class:`McpAuthError`).
        redirect_uri: where the authorization server sends the user back.
        storage: where tokens and registrations are kept (default: in memory).
        client_id: a pre-registered client id.
        client_secret: its secret (confidential client).
        token_endpoint_auth_method: force ``client_secret_basic``,
            ``client_secret_post``, ``private_key_jwt`` or ``none``.
        client_metadata_url: the HTTPS URL of this client's Client ID
            Metadata Document, used as ``client_id`` where accepted.
        client_name: the name registered dynamically.
        scope: scopes to ask for instead of those the server suggests.
        grant_type: ``"authorization_code"`` (a user), ``"client_credentials"``
            (the client itself) or the RFC 7523 jwt-bearer grant.
        private_key_pem: the key for ``private_key_jwt`` (needs the
            ``oauth-jwt`` extra).
        signing_algorithm: ``ES256``, ``ES384`` or ``RS256``.
        assertion: for the jwt-bearer grant, ``assertion(issuer, resource) ->
            str`` returns the assertion (e.g. an ID-JAG from an identity provider).
        offline_access: ask for ``offline_access`` (a refresh token) where
            the authorization server lists it.
        max_retries: challenges (401/403) answered per message before giving up.
        refresh_margin: seconds before expiry when a token is refreshed ahead.

    .. versionadded:: 0.2
    """

    def __init__(
        self,
        *,
        authorize: Optional[AuthorizeCallback] = None,
        redirect_uri: str = DEFAULT_REDIRECT_URI,
        storage: Optional[TokenStorage] = None,
        client_id: Optional[str] = None,
        client_secret: Optional[str] = None,
        token_endpoint_auth_method: Optional[str] = None,
        client_metadata_url: Optional[str] = None,
        client_name: str = "agcore_sync",
        scope: Optional[str] = None,
        grant_type: str = "authorization_code",
        private_key_pem: Optional[str] = None,
        signing_algorithm: str = "ES256",
        assertion: Optional[Callable[[str, str], str]] = None,
        offline_access: bool = True,
        max_retries: int = 3,
        refresh_margin: float = 60.0,
    ) -> None:
        if grant_type not in GRANT_TYPES:
            raise ValueError(f"grant_type must be one of {', '.join(GRANT_TYPES)}; got {grant_type!r}")
        if authorize is not None and not callable(authorize):
            raise TypeError("authorize must be a callable authorize(url) -> redirect_url")
        if not isinstance(redirect_uri, str) or not redirect_uri.lower().startswith(("http://", "https://")):
            raise ValueError(f"redirect_uri must be an http(s) URL, got {redirect_uri!r}")
        if storage is not None and not isinstance(storage, TokenStorage):
            raise TypeError("storage must be a TokenStorage")
        if grant_type != "authorization_code" and not client_id:
            raise ValueError(f"grant_type {grant_type!r} needs client_id")
        if grant_type == flows.JWT_BEARER_GRANT and assertion is None:
            raise ValueError("the jwt-bearer grant needs assertion(issuer, resource) -> str")
        if client_metadata_url is not None and not client_metadata_url.startswith("https://"):
            raise ValueError("client_metadata_url must be an https:// URL")
        if not isinstance(max_retries, int) or max_retries < 1:
            raise ValueError(f"max_retries must be a positive int, got {max_retries!r}")
        self.authorize = authorize
        self.redirect_uri = redirect_uri
        self.storage: TokenStorage = storage if storage is not None else InMemoryTokenStorage()
        self.client_id = client_id
        self._client_secret = client_secret
        self.token_endpoint_auth_method = token_endpoint_auth_method
        self.client_metadata_url = client_metadata_url
        self.client_name = client_name
        self.scope = scope
        self.grant_type = grant_type
        self._signer = None if private_key_pem is None else private_key_signer(private_key_pem, signing_algorithm)
        self._assertion = assertion
        self.offline_access = offline_access
        self.max_retries = max_retries
        self.refresh_margin = refresh_margin
        self._lock = threading.RLock()
        self._contexts: Dict[str, _Context] = {}
        self._pending: Dict[str, _Pending] = {}

    def __repr__(self) -> str:
        return f"McpOAuth(grant_type={self.grant_type!r}, client_id={self.client_id!r}, storage={self.storage!r})"

    # -- the transport's seam ------------------------------------------------

    def auth_headers(self, session: requests.Session, server_url: str) -> Dict[str, str]:
        """Return the ``Authorization`` header for a request to ``server_url`` (empty without a token).

        Raises:
            McpAuthError: ``server_url`` is not https and not on a loopback
                host: no token goes there, and no request is made.
        """
        require_https(server_url, "MCP server URL")
        key = discovery.canonical_url(server_url)
        token = self.storage.get_tokens(key)
        if token is not None and token.refresh_token and token.expires_within(self.refresh_margin):
            with self._lock:
                token = self.storage.get_tokens(key)
                context = self._contexts.get(key)
                if token is not None and token.refresh_token and token.expires_within(self.refresh_margin) \
                        and context is not None:
                    try:
                        token = self._refresh(session, key, context, token)
                    except McpAuthError as exc:
                        # Send the old token: the server's 401 then runs the full flow.
                        logger.info("refreshing the token for %s ahead of expiry failed (%s)", server_url, exc.reason)
        if token is None:
            return {}
        return {"Authorization": f"Bearer {token.access_token}"}

    def handle_challenge(self, session: requests.Session, server_url: str, response: requests.Response,
                         attempt: int) -> bool:
        """Answer a 401 or 403 to a request to ``server_url``; True means resend it.

        Args:
            session: the transport's session (used for every OAuth request).
            server_url: the MCP endpoint.
            response: the 401/403 (only its status and headers are read).
            attempt: how many challenges this message has met, this one included.

        Raises:
            McpAuthError: authorization failed, was refused, or the server
                still refuses after ``max_retries`` attempts.
        """
        status = response.status_code
        challenge = discovery.parse_www_authenticate(response.headers.get("WWW-Authenticate"))
        if status == 403 and challenge.error != "insufficient_scope":
            return False
        if status not in (401, 403):
            return False
        if attempt > self.max_retries:
            raise McpAuthError(
                f"MCP server at {server_url} still answers HTTP {status} after {attempt - 1} authorization "
                f"attempts{' (insufficient_scope: ' + challenge.scope + ')' if challenge.scope else ''}; giving up",
                reason="insufficient_scope" if status == 403 else "unauthorized", status_code=status)
        require_https(server_url, "MCP server URL")
        key = discovery.canonical_url(server_url)
        sent = (response.request.headers.get("Authorization") if response.request is not None else None) or ""
        with self._lock:
            token = self.storage.get_tokens(key)
            if token is not None and sent != f"Bearer {token.access_token}":
                return True  # another thread renewed the token meanwhile: resend with it
            context = self._discover(session, server_url, challenge)
            if status == 401 and token is not None and token.refresh_token and attempt == 1:
                try:
                    self._refresh(session, key, context, token)
                    return True
                except McpAuthError as exc:
                    logger.info("refreshing the token for %s failed (%s); authorizing again", server_url, exc.reason)
            if status == 403:
                held = token.scope if token is not None else None
                scope = _union(held, challenge.scope)
            else:
                scope = self._select_scope(context, challenge)
            self._obtain(session, key, context, scope)
        return True

    # -- flows ----------------------------------------------------------------

    def _discover(self, session: requests.Session, server_url: str, challenge: discovery.Challenge) -> _Context:
        key = discovery.canonical_url(server_url)
        prm = discovery.discover_resource_metadata(session, server_url, challenge, {})
        if prm is not None:
            issuer = prm.authorization_servers[0]
            metadata = discovery.discover_server_metadata(session, issuer, {})
            context = _Context(resource=prm.resource, metadata=metadata, resource_metadata=prm)
        else:
            metadata = discovery.legacy_server_metadata(session, server_url, {})
            context = _Context(resource=key, metadata=metadata, resource_metadata=None)
        self._contexts[key] = context
        return context

    def _select_scope(self, context: _Context, challenge: discovery.Challenge) -> Optional[str]:
        if self.scope is not None:
            scope: Optional[str] = self.scope
        elif challenge.scope:
            scope = challenge.scope
        elif context.resource_metadata is not None and context.resource_metadata.scopes_supported:
            scope = " ".join(context.resource_metadata.scopes_supported)
        else:
            scope = None
        supported = context.metadata.scopes_supported or ()
        if (scope and self.offline_access and self.grant_type == "authorization_code"
                and "offline_access" in supported):
            scope = _union(scope, "offline_access")
        return scope

    def _client(self, session: requests.Session, metadata: discovery.ServerMetadata) -> OAuthClientInfo:
        if self.client_id:
            return OAuthClientInfo(client_id=self.client_id, client_secret=self._client_secret,
                                   token_endpoint_auth_method=self.token_endpoint_auth_method,
                                   redirect_uris=(self.redirect_uri,))
        stored = self.storage.get_client(metadata.issuer)
        if stored is not None:
            return stored
        if self.client_metadata_url and metadata.client_id_metadata_document_supported:
            return OAuthClientInfo(client_id=self.client_metadata_url,
                                   token_endpoint_auth_method="private_key_jwt" if self._signer else "none",
                                   redirect_uris=(self.redirect_uri,))
        grants = ["authorization_code", "refresh_token"]
        client = register_client(session, metadata, client_name=self.client_name, redirect_uris=[self.redirect_uri],
                                 grant_types=grants)
        if self.token_endpoint_auth_method and client.token_endpoint_auth_method is None:
            client = attrs.evolve(client, token_endpoint_auth_method=self.token_endpoint_auth_method)
        self.storage.set_client(metadata.issuer, client)
        return client

    def _token_request(self, session: requests.Session, context: _Context, client: OAuthClientInfo,
                       data: Dict[str, str], previous: Optional[OAuthToken] = None) -> OAuthToken:
        metadata = context.metadata
        method = flows.choose_auth_method(client, metadata.token_endpoint_auth_methods_supported,
                                          has_key=self._signer is not None)
        return flows.request_token(session, metadata.token_endpoint, data, client, method, audience=metadata.issuer,
                                   signer=self._signer, previous=previous)

    def _refresh(self, session: requests.Session, key: str, context: _Context, token: OAuthToken) -> OAuthToken:
        client = self._client(session, context.metadata)
        data = {"grant_type": "refresh_token", "refresh_token": token.refresh_token or "",
                "resource": context.resource}
        new = self._token_request(session, context, client, data, previous=token)
        self.storage.set_tokens(key, new)
        return new

    def _obtain(self, session: requests.Session, key: str, context: _Context, scope: Optional[str]) -> None:
        metadata = context.metadata
        if self.grant_type == "authorization_code":
            token = self._authorization_code(session, key, context, scope)
        else:
            client = self._client(session, metadata)
            data: Dict[str, str] = {"grant_type": self.grant_type, "resource": context.resource}
            if self.grant_type == flows.JWT_BEARER_GRANT and self._assertion is not None:
                data["assertion"] = self._assertion(metadata.issuer, context.resource)
            if scope:
                data["scope"] = scope
            token = self._token_request(session, context, client, data)
        self.storage.set_tokens(key, token)

    def _authorization_code(self, session: requests.Session, key: str, context: _Context,
                            scope: Optional[str]) -> OAuthToken:
        metadata = context.metadata
        if metadata.code_challenge_methods_supported is None or "S256" not in metadata.code_challenge_methods_supported:
            raise McpAuthError(f"authorization server {metadata.issuer} does not list PKCE S256 in "
                               "code_challenge_methods_supported; refusing to authorize", reason="pkce_unsupported")
        if not metadata.authorization_endpoint:
            raise McpAuthError(f"authorization server {metadata.issuer} has no authorization_endpoint",
                               reason="metadata_invalid")
        client = self._client(session, metadata)
        url, state = self._begin(key, context, client, scope)
        if self.authorize is None:
            raise McpAuthError(f"MCP server {key} needs authorization and McpOAuth has no authorize callback",
                               reason="authorization_required")
        redirect = self.authorize(url)
        return self._finish(session, redirect, state)

    def _begin(self, key: str, context: _Context, client: OAuthClientInfo, scope: Optional[str]) -> Tuple[str, str]:
        verifier, challenge = flows.make_pkce()
        state = flows.make_state()
        url = flows.authorization_url(context.metadata.authorization_endpoint or "", {
            "response_type": "code", "client_id": client.client_id, "redirect_uri": self.redirect_uri,
            "scope": scope, "state": state, "code_challenge": challenge, "code_challenge_method": "S256",
            "resource": context.resource,
        })
        with self._lock:
            self._pending[state] = _Pending(server_key=key, verifier=verifier, context=context, client=client,
                                            scope=scope)
            while len(self._pending) > MAX_PENDING:
                self._pending.pop(next(iter(self._pending)))
        return url, state

    def _finish(self, session: requests.Session, redirect_url: str, state: str) -> OAuthToken:
        """Check the redirect against the pending authorization ``state``, then exchange its code."""
        with self._lock:
            pending = self._pending.get(state)
        if pending is None:
            raise McpAuthError("the authorization redirect carries a wrong or no state; its code was discarded",
                               reason="state_mismatch")
        code = flows.parse_redirect(redirect_url, state)
        with self._lock:
            self._pending.pop(state, None)
        data = {"grant_type": "authorization_code", "code": code, "redirect_uri": self.redirect_uri,
                "code_verifier": pending.verifier, "resource": pending.context.resource}
        token = self._token_request(session, pending.context, pending.client, data)
        if token.scope is None and pending.scope:
            token = attrs.evolve(token, scope=pending.scope)
        return token

    # -- for web apps -----------------------------------------------------------

    def complete_authorization(self, redirect_url: str) -> None:
        """Finish an authorization whose ``authorize`` callback sent the user away.

        Call it from the app's redirect route with the full URL of that
        request; the tokens are stored, and the next request to the MCP
        server uses them.

        Raises:
            McpAuthError: an unknown or wrong ``state`` (nothing stored), an
                error in the redirect, or a failed token request.
        """
        if not isinstance(redirect_url, str):
            raise McpAuthError("complete_authorization needs the redirect URL as a str", reason="redirect_invalid")
        state = (parse_qs(urlsplit(redirect_url).query).get("state") or [""])[0]
        with self._lock:
            pending = self._pending.get(state)
        if pending is None:
            raise McpAuthError("the authorization redirect carries a wrong or no state; its code was discarded",
                               reason="state_mismatch")
        with requests.Session() as session:
            token = self._finish(session, redirect_url, state)
        self.storage.set_tokens(pending.server_key, token)
