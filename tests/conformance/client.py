"""The conformance-suite client: McpClient over HttpTransport, one scenario per run.

The official MCP conformance suite (npm ``@modelcontextprotocol/conformance``)
starts a scenario's test server, then runs this script as::

    python tests/conformance/client.py <server-url>

with ``MCP_CONFORMANCE_SCENARIO`` naming the scenario, and judges the
traffic it saw. ``tests/conformance/run.sh`` drives the scenarios this
client covers. Exit status 0 means the client did its part without error;
the suite decides whether the protocol was right.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any, Callable, Dict, List, Optional

import requests

from agcore_sync.mcp import HttpTransport, McpClient
from agcore_sync.mcp.auth import McpOAuth, headless_authorize
from agcore_sync.tools.error import McpAuthError

#: Seconds each request may take (the suite gives the whole run 30 s).
TIMEOUT = 20.0

logger = logging.getLogger("agcore_sync.conformance")


#: The Client ID Metadata Document URL the auth scenarios expect (``auth/basic-cimd``).
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
#: The redirect URI registered in the auth scenarios (their servers redirect to it at once).
REDIRECT_URI = "http://localhost:3000/callback"
#: The RFC 8693 token exchange an enterprise IdP offers (``auth/cross-app-access-complete-flow``).
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"


def _client(url: str, auth: Optional[McpOAuth] = None, **kwargs: Any) -> McpClient:
    return McpClient("conformance", HttpTransport(url, auth=auth), timeout=TIMEOUT, **kwargs)


def _context() -> Dict[str, Any]:
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    return json.loads(raw) if raw else {}


def _id_jag_assertion(context: Dict[str, Any]) -> Callable[[str, str], str]:
    """Exchange the IdP's ID token for an ID-JAG (RFC 8693) addressed to the authorization server."""

    def assertion(issuer: str, resource: str) -> str:
        answer = requests.post(context["idp_token_endpoint"], timeout=TIMEOUT, data={
            "grant_type": TOKEN_EXCHANGE,
            "subject_token": context["idp_id_token"],
            "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
            "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
            "audience": issuer,
            "resource": resource,
            "client_id": context.get("idp_client_id", ""),
        })
        answer.raise_for_status()
        return answer.json()["access_token"]

    return assertion


def _oauth_for(scenario: str) -> McpOAuth:
    """The McpOAuth a scenario needs: credentials from MCP_CONFORMANCE_CONTEXT where it gives them."""
    context = _context()
    if scenario == "auth/client-credentials-jwt":
        return McpOAuth(grant_type="client_credentials", client_id=context["client_id"],
                        private_key_pem=context["private_key_pem"],
                        signing_algorithm=context.get("signing_algorithm", "ES256"))
    if scenario == "auth/client-credentials-basic":
        return McpOAuth(grant_type="client_credentials", client_id=context["client_id"],
                        client_secret=context["client_secret"])
    if scenario == "auth/cross-app-access-complete-flow":
        return McpOAuth(grant_type="urn:ietf:params:oauth:grant-type:jwt-bearer", client_id=context["client_id"],
                        client_secret=context["client_secret"], token_endpoint_auth_method="client_secret_basic",
                        assertion=_id_jag_assertion(context))
    if scenario == "auth/pre-registration":
        return McpOAuth(authorize=headless_authorize, redirect_uri=REDIRECT_URI, client_id=context["client_id"],
                        client_secret=context["client_secret"])
    return McpOAuth(authorize=headless_authorize, redirect_uri=REDIRECT_URI, client_metadata_url=CLIENT_METADATA_URL)


def run_auth(url: str) -> None:
    """Connect through OAuth, list the tools and call the first one (a 403 may ask for more scopes)."""
    scenario = os.environ["MCP_CONFORMANCE_SCENARIO"]
    auth = _oauth_for(scenario)
    try:
        with _client(url, auth) as client:
            tools = client.list_tools()
            if tools:
                result = client.call_tool(tools[0].name, {})
                logger.info("%s answered: %s", tools[0].name, result.text)
    except McpAuthError as exc:
        logger.info("authorization refused: %s (%s)", exc, exc.reason)
        raise SystemExit(1) from None


def run_initialize(url: str) -> None:
    """Handshake, list the tools, close (DELETE)."""
    with _client(url) as client:
        logger.info("negotiated %s with %s", client.negotiated_version, client.server_info)
        client.list_tools()


def run_tools_call(url: str) -> None:
    """Call the scenario's ``add_numbers`` tool and check its answer."""
    with _client(url) as client:
        names = [tool.name for tool in client.list_tools()]
        if "add_numbers" not in names:
            raise SystemExit(f"add_numbers not offered; tools: {names}")
        result = client.call_tool("add_numbers", {"a": 5, "b": 3})
        if result.is_error or "8" not in result.text:
            raise SystemExit(f"add_numbers(5, 3) answered {result.text!r}")
        logger.info("add_numbers: %s", result.text)


def run_elicitation_defaults(url: str) -> None:
    """Accept an elicitation with empty content: the client must fill in the schema's defaults."""
    asked: List[Dict[str, Any]] = []

    def accept_empty(params: Dict[str, Any]) -> Dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {}}

    with _client(url, elicitation_handler=accept_empty) as client:
        result = client.call_tool("test_client_elicitation_defaults", {})
        logger.info("tool answered: %s", result.text)
    if not asked:
        raise SystemExit("the server never asked for elicitation")


def run_sse_retry(url: str) -> None:
    """Call the tool whose SSE stream the server cuts: the answer must come after reconnecting."""
    with _client(url) as client:
        client.list_tools()
        result = client.call_tool("test_reconnection", {})
        logger.info("tool answered: %s", result.text)


SCENARIOS: Dict[str, Callable[[str], None]] = {
    "initialize": run_initialize,
    "tools_call": run_tools_call,
    "elicitation-sep1034-client-defaults": run_elicitation_defaults,
    "sse-retry": run_sse_retry,
}


#: Every client scenario of the conformance suite 0.1.16 whose name starts with ``auth/``.
AUTH_SCENARIOS = (
    "auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
    "auth/basic-cimd", "auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined", "auth/scope-step-up", "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none",
    "auth/pre-registration", "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback", "auth/resource-mismatch", "auth/offline-access-scope",
    "auth/offline-access-not-supported", "auth/client-credentials-jwt", "auth/client-credentials-basic",
    "auth/cross-app-access-complete-flow",
)
SCENARIOS.update({name: run_auth for name in AUTH_SCENARIOS})


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    logging.basicConfig(level=logging.DEBUG, stream=sys.stderr,
                        format="%(asctime)s %(threadName)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("urllib3").setLevel(logging.WARNING)
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if not argv or scenario not in SCENARIOS:
        print(f"usage: MCP_CONFORMANCE_SCENARIO=<{'|'.join(SCENARIOS)}> {sys.argv[0]} <server-url>; "
              f"got scenario {scenario!r}", file=sys.stderr)
        return 2
    SCENARIOS[scenario](argv[-1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
