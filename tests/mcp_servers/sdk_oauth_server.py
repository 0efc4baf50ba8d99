"""An OAuth-protected MCP server built with the official MCP Python SDK's auth support, for the auth tests.

Run as ``python tests/mcp_servers/sdk_oauth_server.py PORT ISSUER``. The SDK
serves the RFC 9728 protected-resource metadata, answers a request
without a valid token with ``401`` and ``WWW-Authenticate: Bearer
resource_metadata=...``, and checks scopes (``mcp:read``); tokens are
checked by RFC 7662 introspection at ``ISSUER/introspect``, the local
authorization server of :class:`tests.mcp_servers.oauth_server.OAuthWorld`
(which issues them). One tool: ``echo(text)``. Prints ``LISTENING http://127.0.0.1:<port>/mcp`` once it
listens (the port is bound before that line is printed).
"""

from __future__ import annotations

import json
import socket
import sys
import urllib.parse
import urllib.request
from typing import Optional

import anyio
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer


class IntrospectionVerifier:
    """Checks a bearer token with the authorization server's ``/introspect`` (RFC 7662)."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint

    async def verify_token(self, token: str) -> Optional[AccessToken]:
        data = await anyio.to_thread.run_sync(self._introspect, token)
        if not data.get("active"):
            return None
        return AccessToken(token=token, client_id=str(data.get("client_id", "")),
                           scopes=str(data.get("scope", "")).split())

    def _introspect(self, token: str) -> dict:
        body = urllib.parse.urlencode({"token": token}).encode()
        with urllib.request.urlopen(self.endpoint, data=body, timeout=10.0) as answer:  # noqa: S310 - local AS
            return json.loads(answer.read())


def main() -> None:
    port, issuer = int(sys.argv[1]), sys.argv[2]
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"
    server = MCPServer(
        "sdk-oauth",
        token_verifier=IntrospectionVerifier(f"{issuer}/introspect"),
        auth=AuthSettings(issuer_url=issuer, resource_server_url=url, required_scopes=["mcp:read"]),
    )

    @server.tool()
    def echo(text: str) -> str:
        """Answer the text back, behind the token check."""
        return f"protected: {text}"

    import uvicorn

    config = uvicorn.Config(server.streamable_http_app(), log_level="warning", lifespan="on")
    print(f"LISTENING {url}", flush=True)
    anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    main()
