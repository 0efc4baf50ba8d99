"""A local OAuth 2.1 authorization server and a protected MCP resource, for the auth tests.

Two :class:`~tests.mcp_servers.scripted_http.ScriptedServer`\\ s on
127.0.0.1 (port 0 each): the authorization server (RFC 8414 metadata,
RFC 7591 registration, ``/authorize`` that approves at once and redirects,
``/token`` for the authorization code with PKCE S256, refresh tokens with
rotation, and client credentials) and the MCP server (RFC 9728 metadata,
a Bearer check answering 401 / ``403 insufficient_scope`` with
``WWW-Authenticate``, and a tiny MCP endpoint with one ``echo`` tool).

Knobs a test sets on :class:`OAuthWorld` before connecting make either
server misbehave (a wrong issuer, a mismatched resource, a token answer
without ``access_token``, scopes a tool call needs, short-lived tokens,
endpoints or issuers named off this machine over plain http, answers
padded past 1 MB), and
:meth:`OAuthWorld.expire_tokens` forces every issued access token to expire.
Everything each server saw is in ``world.auth.requests`` /
``world.mcp.requests``.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import threading
from typing import Any, Dict, List, Optional, Set
from urllib.parse import parse_qs, urlencode, urlsplit

from tests.mcp_servers.scripted_http import Exchange, ScriptedServer

PROTOCOL = "2025-11-25"


def _b64url_sha256(text: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(text.encode("ascii")).digest()).rstrip(b"=").decode("ascii")


class OAuthWorld:
    """The two servers and their shared state; a context manager that closes both."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        #: Scopes every MCP request needs (sent in the 401's ``scope``; None: no scope parameter).
        self.challenge_scope: Optional[str] = "mcp:read"
        #: Scopes ``tools/call`` needs beyond them (a 403 asks for ``held + these``).
        self.call_scopes: Set[str] = set()
        #: Always answer ``tools/call`` with 403 insufficient_scope (a scope that never suffices).
        self.never_enough = False
        #: ``scopes_supported`` of the resource metadata.
        self.scopes_supported: Optional[List[str]] = ["mcp:read"]
        #: Override of the ``issuer`` the AS metadata names.
        self.issuer_override: Optional[str] = None
        #: Override of the ``resource`` the resource metadata names.
        self.resource_override: Optional[str] = None
        #: Leave ``access_token`` out of token answers.
        self.omit_access_token = False
        #: ``expires_in`` of issued access tokens.
        self.expires_in = 3600
        #: Endpoint URLs the AS metadata names instead of its own (keys as in the document).
        self.endpoint_overrides: Dict[str, str] = {}
        #: The ``authorization_servers`` the resource metadata names instead of the issuer.
        self.authorization_servers_override: Optional[List[str]] = None
        #: The ``resource_metadata`` URL the 401 challenge names instead of the real one.
        self.resource_metadata_override: Optional[str] = None
        #: Answers padded past 1 MB: any of "metadata", "register", "token".
        self.oversized: Set[str] = set()
        self.access: Dict[str, Dict[str, Any]] = {}
        #: How many ``/introspect`` requests the authorization server answered.
        self.introspections = 0
        self.refresh: Dict[str, str] = {}
        self.codes: Dict[str, Dict[str, Any]] = {}
        self.issued_codes: List[str] = []
        self.clients: Dict[str, Optional[str]] = {}
        self.authorizations: List[Dict[str, str]] = []
        self.token_requests: List[Dict[str, str]] = []
        self.auth = ScriptedServer(self._auth_handler)
        self.mcp = ScriptedServer(self._mcp_handler)
        self.issuer = self.auth.url[: -len("/mcp")]
        self.base = self.mcp.url[: -len("/mcp")]
        self.url = self.mcp.url

    def close(self) -> None:
        self.mcp.close()
        self.auth.close()

    def __enter__(self) -> OAuthWorld:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def expire_tokens(self) -> None:
        """Make every access token issued so far invalid (as if it had expired)."""
        with self._lock:
            for entry in self.access.values():
                entry["expired"] = True

    def issued_tokens(self) -> List[str]:
        with self._lock:
            return list(self.access) + list(self.refresh) + list(self.issued_codes)

    # -- the authorization server ------------------------------------------------

    def _auth_handler(self, ex: Exchange) -> None:
        path = urlsplit(ex.path).path
        if ex.method == "GET" and path == "/.well-known/oauth-authorization-server":
            ex.send_json(self._padded("metadata", {
                "issuer": self.issuer_override or self.issuer,
                "authorization_endpoint": f"{self.issuer}/authorize",
                "token_endpoint": f"{self.issuer}/token",
                "registration_endpoint": f"{self.issuer}/register",
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
                **self.endpoint_overrides,
            }))
        elif ex.method == "POST" and path == "/register":
            client_id = f"client-{next(self._ids)}"
            secret = f"secret-{next(self._ids)}"
            with self._lock:
                self.clients[client_id] = secret
            ex.send_json(self._padded("register", {"client_id": client_id, "client_secret": secret,
                                                   "token_endpoint_auth_method": "client_secret_basic",
                                                   "redirect_uris": ex.body.get("redirect_uris", [])}), status=201)
        elif ex.method == "GET" and path == "/authorize":
            query = {k: v[0] for k, v in parse_qs(urlsplit(ex.path).query).items()}
            code = f"code-{next(self._ids)}"
            with self._lock:
                self.authorizations.append(query)
                self.codes[code] = query
                self.issued_codes.append(code)
            target = query["redirect_uri"] + "?" + urlencode({"code": code, "state": query.get("state", "")})
            ex.send_empty(302, headers={"Location": target})
        elif ex.method == "POST" and path == "/token":
            self._token(ex)
        elif ex.method == "POST" and path == "/introspect":
            # RFC 7662, for resource servers that check tokens here (sdk_oauth_server.py).
            form = {k: v[0] for k, v in parse_qs(ex.body.decode() if isinstance(ex.body, bytes) else "").items()}
            with self._lock:
                entry = self.access.get(form.get("token", ""))
                self.introspections += 1
            if entry is None or entry["expired"]:
                ex.send_json({"active": False})
            else:
                ex.send_json({"active": True, "scope": " ".join(sorted(entry["scope"]))})
        else:
            ex.send_json({"error": "not_found"}, status=404)

    def _client_ok(self, ex: Exchange, form: Dict[str, str]) -> bool:
        header = ex.headers.get("authorization", "")
        if header.startswith("Basic "):
            client_id, _, secret = base64.b64decode(header[6:]).decode().partition(":")
        else:
            client_id, secret = form.get("client_id", ""), form.get("client_secret", "")
        with self._lock:
            return client_id in self.clients and self.clients[client_id] == secret

    def _token(self, ex: Exchange) -> None:
        form = {k: v[0] for k, v in parse_qs(ex.body.decode() if isinstance(ex.body, bytes) else "").items()}
        with self._lock:
            self.token_requests.append(form)
        if not self._client_ok(ex, form):
            ex.send_json({"error": "invalid_client"}, status=401)
            return
        grant = form.get("grant_type")
        if grant == "authorization_code":
            with self._lock:
                request = self.codes.pop(form.get("code", ""), None)
            if request is None or _b64url_sha256(form.get("code_verifier", "")) != request.get("code_challenge") \
                    or form.get("redirect_uri") != request.get("redirect_uri"):
                ex.send_json({"error": "invalid_grant"}, status=400)
                return
            scope = request.get("scope", "")
        elif grant == "refresh_token":
            with self._lock:
                scope = self.refresh.pop(form.get("refresh_token", ""), None)  # rotated: single use
            if scope is None:
                ex.send_json({"error": "invalid_grant"}, status=400)
                return
        elif grant == "client_credentials":
            scope = form.get("scope", "")
        else:
            ex.send_json({"error": "unsupported_grant_type"}, status=400)
            return
        access, refresh = f"access-{next(self._ids)}", f"refresh-{next(self._ids)}"
        with self._lock:
            self.access[access] = {"scope": set(scope.split()), "expired": False}
            self.refresh[refresh] = scope
        answer: Dict[str, Any] = {"token_type": "Bearer", "expires_in": self.expires_in, "refresh_token": refresh,
                                  "scope": scope}
        if not self.omit_access_token:
            answer["access_token"] = access
        ex.send_json(self._padded("token", answer))

    def _padded(self, kind: str, document: Dict[str, Any]) -> Dict[str, Any]:
        """``document``, with 1.5 MB of padding if ``kind`` is in :attr:`oversized`."""
        if kind in self.oversized:
            return {**document, "padding": "x" * 1_500_000}
        return document

    # -- the MCP server (resource server) ------------------------------------------

    def _challenge(self, ex: Exchange, status: int, error: str, scope: Optional[str]) -> None:
        metadata = self.resource_metadata_override or f"{self.base}/.well-known/oauth-protected-resource/mcp"
        params = [f'resource_metadata="{metadata}"']
        if scope:
            params.append(f'scope="{scope}"')
        params.append(f'error="{error}"')
        ex.send_json({"error": error}, status=status, headers={"WWW-Authenticate": "Bearer " + ", ".join(params)})

    def _mcp_handler(self, ex: Exchange) -> None:
        path = urlsplit(ex.path).path
        if ex.method == "GET" and path == "/.well-known/oauth-protected-resource/mcp":
            document: Dict[str, Any] = {"resource": self.resource_override or self.url,
                                        "authorization_servers": self.authorization_servers_override
                                        or [self.issuer]}
            if self.scopes_supported is not None:
                document["scopes_supported"] = self.scopes_supported
            ex.send_json(document)
            return
        if path != "/mcp":
            ex.send_json({"error": "not_found"}, status=404)
            return
        if ex.method != "POST":
            ex.send_empty(405)
            return
        header = ex.headers.get("authorization", "")
        with self._lock:
            entry = self.access.get(header[7:]) if header.startswith("Bearer ") else None
        if entry is None or entry["expired"]:
            self._challenge(ex, 401, "invalid_token", self.challenge_scope)
            return
        body = ex.body if isinstance(ex.body, dict) else {}
        method = body.get("method")
        if method == "tools/call":
            needed = set((self.challenge_scope or "").split()) | self.call_scopes
            if self.never_enough or not needed <= entry["scope"]:
                self._challenge(ex, 403, "insufficient_scope", " ".join(sorted(needed | {"mcp:admin"}
                                                                               if self.never_enough else needed)))
                return
        if "id" not in body:
            ex.send_empty(202)
            return
        if method == "initialize":
            result: Dict[str, Any] = {"protocolVersion": PROTOCOL, "capabilities": {"tools": {}},
                                      "serverInfo": {"name": "oauth-test", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": "echo: " + str(body["params"].get("arguments"))}]}
        else:
            ex.send_json({"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32601, "message": "unknown"}})
            return
        ex.send_json({"jsonrpc": "2.0", "id": body["id"], "result": result})
