"""McpOAuth end to end: a local authorization server and a protected MCP server on 127.0.0.1.

The servers are tests/mcp_servers/oauth_server.py (real sockets, port 0).
Each test connects an McpClient over HttpTransport(auth=McpOAuth(...)) and
checks what the servers saw: the 401, discovery, registration, PKCE, the
token request, refresh after a forced expiry and ahead of expiry, step-up on
``403 insufficient_scope`` with its retry limit; then each bad input is
refused with a typed McpAuthError and nothing stored.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import queue
import threading
from typing import Iterator, List
from urllib.parse import urlsplit

import pytest

from agcore_sync import McpAuthError
from agcore_sync.mcp import HttpTransport, McpClient
from agcore_sync.mcp.auth import InMemoryTokenStorage, McpOAuth, headless_authorize
from tests.mcp_servers.oauth_server import OAuthWorld

TIMEOUT = 10.0


@pytest.fixture
def world() -> Iterator[OAuthWorld]:
    with OAuthWorld() as servers:
        yield servers


def _oauth(**kwargs) -> McpOAuth:
    kwargs.setdefault("authorize", headless_authorize)
    kwargs.setdefault("redirect_uri", "http://127.0.0.1:9/callback")
    return McpOAuth(**kwargs)


def _client(world: OAuthWorld, auth: McpOAuth) -> McpClient:
    return McpClient("oauth-test", HttpTransport(world.url, auth=auth, listen=False), timeout=TIMEOUT)


def _paths(server) -> List[str]:
    return [f"{r.method} {urlsplit(r.path).path}" for r in server.requests]


def test_a_401_runs_discovery_registration_pkce_and_the_token_request_then_resends(world):
    storage = InMemoryTokenStorage()
    auth = _oauth(storage=storage)
    with _client(world, auth) as client:
        assert [tool.name for tool in client.list_tools()] == ["echo"]
        assert client.call_tool("echo", {"x": 1}).text == "echo: {'x': 1}"

    mcp_paths = _paths(world.mcp)
    assert mcp_paths[:3] == ["POST /mcp", "GET /.well-known/oauth-protected-resource/mcp", "POST /mcp"]
    assert "authorization" not in world.mcp.requests[0].headers
    assert world.mcp.requests[2].headers["authorization"].startswith("Bearer access-")
    assert _paths(world.auth) == ["GET /.well-known/oauth-authorization-server", "POST /register",
                                  "GET /authorize", "POST /token"]
    [authorization] = world.authorizations
    [token_request] = world.token_requests
    assert authorization["code_challenge_method"] == "S256"
    challenge = base64.urlsafe_b64encode(hashlib.sha256(token_request["code_verifier"].encode()).digest())
    assert authorization["code_challenge"] == challenge.rstrip(b"=").decode()
    assert authorization["resource"] == token_request["resource"] == world.url
    assert authorization["scope"] == "mcp:read"  # from the challenge
    assert token_request["grant_type"] == "authorization_code"
    assert storage.get_tokens(world.url).scope == "mcp:read"
    assert storage.get_client(world.issuer).client_id.startswith("client-")


def test_a_token_expired_on_the_server_is_refreshed_without_a_new_authorization(world):
    auth = _oauth()
    with _client(world, auth) as client:
        client.list_tools()
        world.expire_tokens()
        assert client.call_tool("echo", {}).text.startswith("echo")
    assert len(world.authorizations) == 1
    assert [form["grant_type"] for form in world.token_requests] == ["authorization_code", "refresh_token"]
    assert world.token_requests[1]["resource"] == world.url


def test_a_token_about_to_expire_is_refreshed_before_the_request(world):
    world.expires_in = 5  # within the refresh margin
    auth = _oauth(refresh_margin=60.0)
    with _client(world, auth) as client:
        client.list_tools()
        statuses_before = len(world.mcp.requests)
        client.call_tool("echo", {})
    assert [form["grant_type"] for form in world.token_requests][:2] == ["authorization_code", "refresh_token"]
    # The refreshed token went out at once: no 401 after the first authorization.
    later = world.mcp.requests[statuses_before:]
    assert all(r.headers.get("authorization", "").startswith("Bearer ") for r in later)
    assert len(world.authorizations) == 1


def test_403_insufficient_scope_steps_up_with_the_held_and_the_challenged_scopes(world):
    world.call_scopes = {"mcp:write"}
    auth = _oauth()
    with _client(world, auth) as client:
        client.list_tools()
        assert client.call_tool("echo", {}).text.startswith("echo")
    assert [a["scope"].split() for a in world.authorizations] == [["mcp:read"], ["mcp:read", "mcp:write"]]


def test_step_up_gives_up_after_the_retry_limit_with_a_typed_error(world):
    world.never_enough = True
    auth = _oauth(max_retries=3)
    with _client(world, auth) as client:
        client.list_tools()
        with pytest.raises(McpAuthError) as caught:
            client.call_tool("echo", {})
    assert caught.value.reason == "insufficient_scope"
    assert caught.value.status_code == 403
    assert caught.value.recoverable is False
    assert len(world.authorizations) <= 4  # the first one plus at most three step-ups


def test_an_authorization_server_naming_another_issuer_is_refused_and_nothing_stored(world):
    world.issuer_override = "https://evil.example.com"
    storage = InMemoryTokenStorage()
    with pytest.raises(McpAuthError) as caught, _client(world, _oauth(storage=storage)):
        pass
    assert caught.value.reason == "issuer_mismatch"
    assert world.authorizations == [] and world.token_requests == []
    assert storage.get_tokens(world.url) is None and storage.get_client(world.issuer) is None


def test_resource_metadata_for_another_resource_is_refused_before_any_authorization(world):
    world.resource_override = "https://evil.example.com/mcp"
    storage = InMemoryTokenStorage()
    with pytest.raises(McpAuthError) as caught, _client(world, _oauth(storage=storage)):
        pass
    assert caught.value.reason == "resource_mismatch"
    assert _paths(world.auth) == []
    assert storage.get_tokens(world.url) is None


def test_a_redirect_with_a_wrong_state_is_refused_and_its_code_never_exchanged(world):
    def tampered(url: str) -> str:
        redirect = headless_authorize(url)
        return redirect.replace("state=", "state=x")

    storage = InMemoryTokenStorage()
    with pytest.raises(McpAuthError) as caught, _client(world, _oauth(authorize=tampered, storage=storage)):
        pass
    assert caught.value.reason == "state_mismatch"
    assert world.token_requests == []
    assert storage.get_tokens(world.url) is None


def test_a_token_response_without_access_token_is_refused_and_nothing_stored(world):
    world.omit_access_token = True
    storage = InMemoryTokenStorage()
    with pytest.raises(McpAuthError) as caught, _client(world, _oauth(storage=storage)):
        pass
    assert caught.value.reason == "token_response"
    assert storage.get_tokens(world.url) is None


def test_client_credentials_get_a_token_without_a_user(world):
    world.clients["machine"] = "machine-secret"
    auth = McpOAuth(grant_type="client_credentials", client_id="machine", client_secret="machine-secret")
    with _client(world, auth) as client:
        assert client.call_tool("echo", {}).text.startswith("echo")
    assert world.authorizations == []
    assert world.token_requests[0]["grant_type"] == "client_credentials"
    assert world.token_requests[0]["resource"] == world.url


class _SendUserAway(Exception):
    """What a web app's authorize callback raises to redirect the user's browser."""

    def __init__(self, url: str) -> None:
        super().__init__("redirect the user")
        self.url = url


def test_a_web_app_sends_the_user_away_then_completes_the_authorization_from_its_route(world):
    def send_away(url: str) -> str:
        raise _SendUserAway(url)

    auth = _oauth(authorize=send_away)
    with pytest.raises(_SendUserAway) as away, _client(world, auth):
        pass
    # The user's browser visits the URL; the authorization server redirects to the app's route.
    redirect = headless_authorize(away.value.url)
    with pytest.raises(McpAuthError) as wrong:
        auth.complete_authorization(redirect.replace("state=", "state=other"))
    assert wrong.value.reason == "state_mismatch"
    auth.complete_authorization(redirect)
    with _client(world, auth) as client:
        assert client.call_tool("echo", {}).text.startswith("echo")
    assert len(world.authorizations) == 1


def test_no_token_secret_or_code_reaches_the_logs_or_reprs(world, caplog):
    caplog.set_level(logging.DEBUG)
    world.call_scopes = {"mcp:write"}
    storage = InMemoryTokenStorage()
    auth = _oauth(storage=storage)
    with _client(world, auth) as client:
        client.list_tools()
        world.expire_tokens()
        client.call_tool("echo", {})
        shown = " ".join([repr(auth), repr(client), repr(storage), repr(storage.get_tokens(world.url)),
                          repr(storage.get_client(world.issuer))])
    secrets = world.issued_tokens() + [s for s in world.clients.values() if s]
    assert secrets
    for secret in secrets:
        assert secret not in caplog.text
        assert secret not in shown


def test_threads_meeting_401_together_share_one_refresh(world):
    auth = _oauth()
    with _client(world, auth) as client:
        client.list_tools()
        world.expire_tokens()
        start = threading.Barrier(4)
        results: queue.Queue[object] = queue.Queue()

        def call() -> None:
            start.wait(TIMEOUT)
            try:
                results.put(client.call_tool("echo", {}).text)
            except Exception as exc:  # noqa: BLE001 - delivered to the test
                results.put(exc)

        threads = [threading.Thread(target=call, name=f"oauth-test-caller-{n}") for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(TIMEOUT)
            assert not thread.is_alive()
    answers = [results.get_nowait() for _ in threads]
    assert all(isinstance(answer, str) and answer.startswith("echo") for answer in answers), answers
    assert [form["grant_type"] for form in world.token_requests] == ["authorization_code", "refresh_token"]
