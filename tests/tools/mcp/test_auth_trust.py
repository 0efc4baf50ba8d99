"""McpOAuth refuses cleartext and oversized answers (issue 21, items 3 and 6).

Item 3: every authorization-server URL (the MCP server's, the resource
metadata, the issuer, the authorization, token and registration endpoints)
must be https, plain http only on a loopback host; otherwise McpAuthError is
raised before anything is sent there. The local servers of
tests/mcp_servers/oauth_server.py (127.0.0.1, loopback) name URLs on
``*.example.test`` over http; the session's adapter for those hosts fails
the test if it is ever asked to send.

Item 6: OAuth metadata, token and registration answers above 1 MB raise the
auth error (``response_too_large``) and nothing is stored.
"""

from __future__ import annotations

from typing import Iterator, List

import pytest
import requests
from requests.adapters import BaseAdapter

from agcore_sync import McpAuthError
from agcore_sync.mcp import HttpTransport, McpClient
from agcore_sync.mcp.auth import InMemoryTokenStorage, McpOAuth, headless_authorize
from agcore_sync.mcp.auth import _guard as guard
from tests.mcp_servers.oauth_server import OAuthWorld

TIMEOUT = 10.0
OFF_HOST = "http://auth.example.test"


class NeverSend(BaseAdapter):
    """A transport adapter that records and refuses every request: nothing may reach it."""

    def __init__(self) -> None:
        super().__init__()
        self.attempts: List[str] = []

    def send(self, request, **kwargs):  # noqa: ANN001 - requests' adapter signature
        self.attempts.append(f"{request.method} {request.url}")
        raise AssertionError(f"a request was sent to {request.url}")

    def close(self) -> None:
        pass


@pytest.fixture
def world() -> Iterator[OAuthWorld]:
    with OAuthWorld() as servers:
        yield servers


@pytest.fixture
def guarded() -> Iterator[tuple]:
    """A session whose adapter for the *.example.test hosts fails the test if called."""
    adapter = NeverSend()
    session = requests.Session()
    for prefix in ("http://auth.example.test", "http://mcp.example.test", "https://mcp.example.test"):
        session.mount(prefix, adapter)
    yield session, adapter
    session.close()


def _connect(url: str, auth: McpOAuth, session: requests.Session) -> McpAuthError:
    client = McpClient("oauth-trust", HttpTransport(url, auth=auth, listen=False, session=session), timeout=TIMEOUT)
    try:
        with pytest.raises(McpAuthError) as caught:
            client.connect()
    finally:
        client.close()
    return caught.value


def _secrets(world: OAuthWorld) -> List[str]:
    return world.issued_tokens() + [s for s in world.clients.values() if s]


@pytest.mark.parametrize("field", ["token_endpoint", "registration_endpoint", "authorization_endpoint"])
def test_an_https_or_loopback_metadata_naming_an_http_endpoint_off_loopback_is_refused_before_any_request(
        world, guarded, field):
    session, adapter = guarded
    endpoint = f"{OFF_HOST}/{field.split('_')[0]}?client_secret=hidden"
    world.endpoint_overrides = {field: endpoint}
    authorized: List[str] = []
    storage = InMemoryTokenStorage()
    auth = McpOAuth(authorize=lambda url: authorized.append(url) or headless_authorize(url), storage=storage,
                    redirect_uri="http://127.0.0.1:9/callback")
    error = _connect(world.url, auth, session)
    assert error.reason == "insecure_url"
    assert f"{OFF_HOST}/{field.split('_')[0]}" in str(error) and "hidden" not in str(error)
    assert not any(secret in str(error) for secret in _secrets(world))
    assert adapter.attempts == [] and authorized == []
    assert world.token_requests == [] and world.clients == {}
    assert storage.get_tokens(world.url) is None


def test_a_client_secret_is_never_sent_to_an_http_token_endpoint_even_with_a_preregistered_client(world, guarded):
    session, adapter = guarded
    world.endpoint_overrides = {"token_endpoint": f"{OFF_HOST}/token"}
    auth = McpOAuth(grant_type="client_credentials", client_id="svc", client_secret="s3cret-value")
    error = _connect(world.url, auth, session)
    assert error.reason == "insecure_url" and "s3cret-value" not in str(error)
    assert adapter.attempts == [] and world.token_requests == []


def test_an_http_issuer_off_loopback_is_refused_before_its_metadata_is_read(world, guarded):
    session, adapter = guarded
    world.authorization_servers_override = [OFF_HOST]
    error = _connect(world.url, McpOAuth(authorize=headless_authorize), session)
    assert error.reason == "insecure_url" and OFF_HOST in str(error)
    assert adapter.attempts == [] and _paths(world.auth) == []


def test_an_http_resource_metadata_url_off_loopback_is_refused_before_it_is_fetched(world, guarded):
    session, adapter = guarded
    world.resource_metadata_override = "http://mcp.example.test/.well-known/oauth-protected-resource"
    error = _connect(world.url, McpOAuth(authorize=headless_authorize), session)
    assert error.reason == "insecure_url" and "http://mcp.example.test/.well-known" in str(error)
    assert adapter.attempts == [] and _paths(world.auth) == []


def test_an_http_mcp_server_off_loopback_gets_no_request_from_an_oauth_transport(guarded):
    session, adapter = guarded
    storage = InMemoryTokenStorage()
    error = _connect("http://mcp.example.test/mcp", McpOAuth(authorize=headless_authorize, storage=storage), session)
    assert error.reason == "insecure_url" and "http://mcp.example.test/mcp" in str(error)
    assert adapter.attempts == []


def test_headless_authorize_refuses_an_http_authorization_url_off_loopback():
    with pytest.raises(McpAuthError) as caught:
        headless_authorize(f"{OFF_HOST}/authorize?code_challenge=abc&state=xyz")
    assert caught.value.reason == "insecure_url" and "state=xyz" not in str(caught.value)


@pytest.mark.parametrize(("host", "loopback"), [
    ("localhost", True), ("LOCALHOST", True), ("127.0.0.1", True), ("127.20.30.40", True), ("::1", True),
    ("[::1]", True), ("128.0.0.1", False), ("10.0.0.1", False), ("0.0.0.0", False), ("localhost.example", False),
    ("auth.example.test", False), ("", False), (None, False),
])
def test_loopback_means_localhost_127_0_0_0_8_and_ipv6_1(host, loopback):
    assert guard.is_loopback(host) is loopback


@pytest.mark.parametrize(("url", "ok"), [
    ("https://auth.example.com/token", True), ("http://127.0.0.1:8000/token", True),
    ("http://localhost/token", True), ("http://[::1]:9/token", True), ("http://auth.example.com/token", False),
    ("ftp://auth.example.com/token", False), ("https:///token", False), ("//auth.example.com/token", False),
])
def test_authorization_urls_must_be_https_unless_on_loopback(url, ok):
    if ok:
        assert guard.require_https(url, "token endpoint") == url
    else:
        with pytest.raises(McpAuthError) as caught:
            guard.require_https(url, "token endpoint")
        assert caught.value.reason == "insecure_url"


def _paths(server) -> List[str]:
    return [f"{r.method} {r.path.split('?')[0]}" for r in server.requests]


@pytest.mark.parametrize("kind", ["metadata", "register", "token"])
def test_an_oauth_answer_above_1_mb_is_refused_and_nothing_is_stored(world, kind):
    world.oversized = {kind}
    storage = InMemoryTokenStorage()
    auth = McpOAuth(authorize=headless_authorize, storage=storage, redirect_uri="http://127.0.0.1:9/callback")
    client = McpClient("oauth-trust", HttpTransport(world.url, auth=auth, listen=False), timeout=TIMEOUT)
    try:
        with pytest.raises(McpAuthError) as caught:
            client.connect()
    finally:
        client.close()
    assert caught.value.reason == "response_too_large"
    assert str(guard.MAX_DOCUMENT) in str(caught.value)
    assert storage.get_tokens(world.url) is None
    if kind != "token":  # a registration answered in full before the token request is kept
        assert storage.get_client(world.issuer) is None
