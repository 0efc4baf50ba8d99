"""A Flask app whose users connect an OAuth-protected MCP server through the app's own routes.

The MCP client runs inside a request, on the request's thread. When the
server needs an authorization, McpOAuth calls ``authorize(url)``; here it
raises :class:`AuthorizationNeeded`, the view catches it and redirects the
user's browser to ``url``. The authorization server sends the browser back
to ``/oauth/callback``, which hands the full URL to
``McpOAuth.complete_authorization``: the state is checked, the code is
exchanged (PKCE) and the tokens are stored, per user, in the app's SQLite
database through :class:`SqliteTokenStorage`. The next visit to ``/tools``
uses them, and refreshes them when they expire, without the user.

Run it with ``flask --app docs/examples/mcp_oauth_flask.py run`` after
setting ``MCP_URL``; tests/examples/test_mcp_oauth_flask.py drives it
against a local authorization server.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import threading
from typing import Dict, Optional

from flask import Flask, redirect, request, session, url_for

from agcore_sync import (
    HttpTransport,
    McpClient,
    McpOAuth,
    OAuthClientInfo,
    OAuthToken,
    TokenStorage,
)


class AuthorizationNeeded(Exception):
    """Raised by the authorize callback: send the user's browser to ``url``."""

    def __init__(self, url: str) -> None:
        super().__init__("the MCP server needs the user's authorization")
        self.url = url


def send_user_away(authorization_url: str) -> str:
    """The ``authorize`` callback of a web app: never returns, the view redirects instead."""
    raise AuthorizationNeeded(authorization_url)


class SqliteTokenStorage(TokenStorage):
    """Tokens and client registrations of one user in the app's SQLite database."""

    def __init__(self, path: str, user: str) -> None:
        self.path = path
        self.user = user
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE IF NOT EXISTS oauth (user TEXT, kind TEXT, key TEXT, value TEXT, "
                       "PRIMARY KEY (user, kind, key))")

    def __repr__(self) -> str:
        return f"SqliteTokenStorage({self.path!r}, user={self.user!r})"

    def _get(self, kind: str, key: str) -> Optional[dict]:
        with sqlite3.connect(self.path) as db:
            row = db.execute("SELECT value FROM oauth WHERE user=? AND kind=? AND key=?",
                             (self.user, kind, key)).fetchone()
        return None if row is None else json.loads(row[0])

    def _set(self, kind: str, key: str, value: Optional[dict]) -> None:
        with sqlite3.connect(self.path) as db:
            if value is None:
                db.execute("DELETE FROM oauth WHERE user=? AND kind=? AND key=?", (self.user, kind, key))
            else:
                db.execute("INSERT OR REPLACE INTO oauth VALUES (?, ?, ?, ?)",
                           (self.user, kind, key, json.dumps(value)))

    def get_tokens(self, resource: str) -> Optional[OAuthToken]:
        data = self._get("tokens", resource)
        return None if data is None else OAuthToken.from_dict(data)

    def set_tokens(self, resource: str, tokens: Optional[OAuthToken]) -> None:
        self._set("tokens", resource, None if tokens is None else tokens.to_dict())

    def get_client(self, issuer: str) -> Optional[OAuthClientInfo]:
        data = self._get("clients", issuer)
        return None if data is None else OAuthClientInfo.from_dict(data)

    def set_client(self, issuer: str, client: Optional[OAuthClientInfo]) -> None:
        self._set("clients", issuer, None if client is None else client.to_dict())


def create_app(mcp_url: str, database: str) -> Flask:
    """Build the app: ``/tools`` lists the MCP server's tools, ``/oauth/callback`` takes the redirect."""
    app = Flask(__name__)
    app.secret_key = os.environ.get("FLASK_SECRET_KEY") or secrets.token_hex(16)
    # One McpOAuth per user, kept between requests: it holds the PKCE verifier and state of an
    # authorization in flight (one process; several workers need sticky sessions).
    oauths: Dict[str, McpOAuth] = {}
    lock = threading.Lock()

    def oauth_for_user() -> McpOAuth:
        user = session.setdefault("user", secrets.token_hex(8))
        with lock:
            if user not in oauths:
                oauths[user] = McpOAuth(authorize=send_user_away, storage=SqliteTokenStorage(database, user),
                                        redirect_uri=url_for("oauth_callback", _external=True),
                                        client_name="agcore_sync Flask example")
            return oauths[user]

    @app.get("/tools")
    def tools():
        try:
            transport = HttpTransport(mcp_url, auth=oauth_for_user(), listen=False)
            with McpClient("remote", transport, timeout=30.0) as client:
                return {"tools": [tool.name for tool in client.list_tools()]}
        except AuthorizationNeeded as needed:
            return redirect(needed.url)

    @app.get("/oauth/callback")
    def oauth_callback():
        oauth_for_user().complete_authorization(request.url)
        return redirect(url_for("tools"))

    return app


if __name__ == "__main__":
    create_app(os.environ.get("MCP_URL", "http://127.0.0.1:8000/mcp"), "tokens.sqlite3").run(port=5000)
