"""BearerAuth end to end: our McpOAuth client gets a token from a local authorization server and calls McpServer.

The authorization server is the one of tests/mcp_servers/oauth_server.py
(discovery, registration, PKCE, tokens); McpServer's ``verify`` looks the
token up in what it issued, as an introspection would.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, Optional

import pytest
from demo_server import make_server as make_demo
from mcp_server_helpers import WsgiThreadServer

from agcore_sync.mcp import HttpTransport, McpClient
from agcore_sync.mcp.auth import McpOAuth, headless_authorize
from agcore_sync.mcp.server import BearerAuth
from tests.mcp_servers.oauth_server import OAuthWorld


@pytest.fixture
def world() -> Iterator[OAuthWorld]:
    with OAuthWorld() as servers:
        yield servers


def test_mcp_oauth_discovers_authorizes_and_calls_a_bearer_protected_mcp_server(world: OAuthWorld) -> None:
    def verify(token: str) -> Optional[Dict[str, Any]]:
        entry = world.access.get(token)
        if entry is None or entry["expired"]:
            return None
        return {"sub": "user", "scope": " ".join(sorted(entry["scope"]))}

    demo = make_demo()
    served = WsgiThreadServer(None)
    auth = BearerAuth(verify, resource=served.url, authorization_servers=[world.issuer], scopes=["mcp:read"])
    served.httpd.set_app(demo.wsgi_app(auth=auth))
    oauth = McpOAuth(authorize=headless_authorize, redirect_uri="http://127.0.0.1:9/callback")
    try:
        client = McpClient("demo", HttpTransport(served.url, auth=oauth, listen=False), timeout=30.0)
        with client.connect():
            assert client.call_tool("add", {"a": 5, "b": 6}).structured_content == {"result": 11}
        [token_request] = world.token_requests
        assert token_request["resource"] == served.url
        assert token_request["grant_type"] == "authorization_code"
    finally:
        demo.close()
        served.close()
