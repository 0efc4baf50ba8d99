"""OAuth end to end against a protected MCP server built with the official SDK's auth support.

The resource server is ``tests/mcp_servers/sdk_oauth_server.py`` (the MCP
Python SDK: its protected-resource metadata, its 401 challenge, its bearer
and scope checks), in a subprocess; the authorization server is the local
one of :class:`~tests.mcp_servers.oauth_server.OAuthWorld` (discovery,
dynamic registration, PKCE, tokens, refresh), whose ``/introspect`` the
SDK server asks about each token. Tokens are forced to expire to prove
the refresh.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Iterator, Tuple
from urllib.parse import urlsplit

import pytest

from agcore_sync import HttpTransport, InMemoryTokenStorage, McpClient, McpOAuth, headless_authorize
from tests.mcp_servers.oauth_server import OAuthWorld

SERVER = Path(__file__).resolve().parents[2] / "mcp_servers" / "sdk_oauth_server.py"
#: Seconds for each answer (the first includes the SDK server's start-up).
TIMEOUT = 30.0
#: Seconds the server may take to exit after SIGTERM before it is killed.
STOP_TIMEOUT = 5.0


@pytest.fixture
def protected() -> Iterator[Tuple[OAuthWorld, str]]:
    """The local authorization server and the SDK-built protected MCP server: ``(world, url)``."""
    pytest.importorskip("mcp", reason="the SDK-built server needs the `mcp` package (Python >= 3.10)")
    with OAuthWorld() as world:
        proc = subprocess.Popen([sys.executable, str(SERVER), "0", world.issuer], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            line = proc.stdout.readline()  # bounded: the server prints it or exits (EOF)
            assert line.startswith("LISTENING "), f"the SDK OAuth server did not start: {line!r}"
            yield world, line.split()[1]
        finally:
            proc.terminate()
            try:
                proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(STOP_TIMEOUT)
            proc.stdout.close()


def test_the_client_gets_a_token_from_the_sdk_server_s_challenge_and_refreshes_it_after_expiry(protected):
    world, url = protected
    storage = InMemoryTokenStorage()
    auth = McpOAuth(authorize=headless_authorize, redirect_uri="http://127.0.0.1:9/callback", storage=storage)
    with McpClient("sdk-oauth", HttpTransport(url, auth=auth, listen=False), timeout=TIMEOUT) as client:
        assert client.call_tool("echo", {"text": "one"}).text == "protected: one"
        paths = [f"{r.method} {urlsplit(r.path).path}" for r in world.auth.requests]
        # Discovery of the AS (from the SDK's resource metadata), registration, PKCE authorization, token.
        assert paths[:4] == ["GET /.well-known/oauth-authorization-server", "POST /register",
                             "GET /authorize", "POST /token"]
        authorization = world.authorizations[0]
        assert authorization["code_challenge_method"] == "S256" and authorization["resource"] == url
        assert world.introspections >= 1
        world.expire_tokens()
        assert client.call_tool("echo", {"text": "two"}).text == "protected: two"
    grants = [form.get("grant_type") for form in world.token_requests]
    assert grants == ["authorization_code", "refresh_token"]
    assert len(world.authorizations) == 1  # refreshed, not authorized again
