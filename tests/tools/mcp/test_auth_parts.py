"""The parts of McpOAuth on their own: challenges, resource matching, metadata URLs, PKCE,
redirects, token storage (file mode 0600), private_key_jwt, constructor checks."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
import subprocess
import sys

import pytest

from agcore_sync import (
    FileTokenStorage,
    InMemoryTokenStorage,
    McpAuthError,
    McpError,
    McpOAuth,
    OAuthClientInfo,
    OAuthToken,
    TokenStorage,
)
from agcore_sync.mcp.auth import discovery, flows
from agcore_sync.mcp.auth.jwt_assertion import private_key_signer


def test_a_bearer_challenge_gives_its_resource_metadata_scope_and_error():
    header = ('Basic realm="x", Bearer error="insufficient_scope", scope="files:read files:write", '
              'resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource"')
    challenge = discovery.parse_www_authenticate(header)
    assert challenge == discovery.Challenge(
        resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource",
        scope="files:read files:write", error="insufficient_scope")


@pytest.mark.parametrize("header", [None, "", "Basic realm=x", "Bearer", "Bearer ,,,"])
def test_a_missing_or_foreign_challenge_is_empty(header):
    assert discovery.parse_www_authenticate(header) == discovery.Challenge()


@pytest.mark.parametrize(("resource", "server", "ok"), [
    ("http://127.0.0.1:8000/mcp", "http://127.0.0.1:8000/mcp", True),
    ("http://127.0.0.1:8000", "http://127.0.0.1:8000/mcp", True),
    ("HTTP://127.0.0.1:8000/mcp/", "http://127.0.0.1:8000/mcp", True),
    ("https://evil.example.com/mcp", "http://127.0.0.1:8000/mcp", False),
    ("http://127.0.0.1:8001/mcp", "http://127.0.0.1:8000/mcp", False),
    ("http://127.0.0.1:8000/other", "http://127.0.0.1:8000/mcp", False),
    ("http://127.0.0.1:8000/mc", "http://127.0.0.1:8000/mcp", False),
])
def test_a_resource_names_the_server_only_on_its_origin_and_a_parent_path(resource, server, ok):
    assert discovery.resource_matches(resource, server) is ok


def test_an_issuer_with_a_path_is_looked_up_in_the_specified_order():
    assert discovery._metadata_urls("https://auth.example.com/tenant1") == [
        "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
        "https://auth.example.com/.well-known/openid-configuration/tenant1",
        "https://auth.example.com/tenant1/.well-known/openid-configuration",
    ]
    assert discovery._metadata_urls("https://auth.example.com") == [
        "https://auth.example.com/.well-known/oauth-authorization-server",
        "https://auth.example.com/.well-known/openid-configuration",
    ]


def test_pkce_uses_s256_and_fresh_values():
    verifier, challenge = flows.make_pkce()
    digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    assert challenge == digest and 43 <= len(verifier) <= 128
    assert flows.make_pkce()[0] != verifier and flows.make_state() != flows.make_state()


def test_a_redirect_is_checked_for_state_error_and_code():
    assert flows.parse_redirect("http://127.0.0.1/cb?code=abc&state=s1", "s1") == "abc"
    for url, reason in [("http://127.0.0.1/cb?code=abc&state=s2", "state_mismatch"),
                        ("http://127.0.0.1/cb?code=abc", "state_mismatch"),
                        ("http://127.0.0.1/cb?error=access_denied&state=s1", "access_denied"),
                        ("http://127.0.0.1/cb?state=s1", "redirect_invalid")]:
        with pytest.raises(McpAuthError) as caught:
            flows.parse_redirect(url, "s1")
        assert caught.value.reason == reason
        assert "abc" not in str(caught.value)


def test_auth_errors_are_unrecoverable_mcp_errors():
    error = McpAuthError("no", reason="issuer_mismatch", status_code=401)
    assert isinstance(error, McpError) and error.recoverable is False
    assert (error.reason, error.status_code) == ("issuer_mismatch", 401)


def test_token_values_hide_their_secrets_and_round_trip():
    token = OAuthToken(access_token="AT-secret", refresh_token="RT-secret", expires_at=10.0, scope="a b")
    client = OAuthClientInfo(client_id="c1", client_secret="CS-secret", redirect_uris=["http://x/cb"])
    for secret in ("AT-secret", "RT-secret", "CS-secret"):
        assert secret not in repr(token) + repr(client)
    assert OAuthToken.from_dict(json.loads(json.dumps(token.to_dict()))) == token
    assert OAuthClientInfo.from_dict(json.loads(json.dumps(client.to_dict()))) == client
    assert token.expires_within(5.0, now=6.0) and not token.expires_within(3.0, now=6.0)


@pytest.mark.parametrize("make", [InMemoryTokenStorage, "file"])
def test_a_storage_keeps_tokens_per_resource_and_clients_per_issuer(make, tmp_path):
    storage: TokenStorage = FileTokenStorage(tmp_path / "tokens.json") if make == "file" else make()
    token = OAuthToken(access_token="a1", refresh_token="r1")
    storage.set_tokens("http://s/mcp", token)
    storage.set_client("http://as", OAuthClientInfo(client_id="c"))
    assert storage.get_tokens("http://s/mcp") == token
    assert storage.get_tokens("http://other/mcp") is None
    assert storage.get_client("http://as").client_id == "c"
    storage.set_tokens("http://s/mcp", None)
    assert storage.get_tokens("http://s/mcp") is None


def test_the_token_file_is_readable_by_its_owner_only_and_never_half_written(tmp_path):
    path = tmp_path / "tokens.json"
    storage = FileTokenStorage(path)
    storage.set_tokens("http://s/mcp", OAuthToken(access_token="a1"))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    os.chmod(path, 0o644)  # a later write restores the mode
    storage.set_client("http://as", OAuthClientInfo(client_id="c", client_secret="s"))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert sorted(os.listdir(tmp_path)) == ["tokens.json", "tokens.json.lock"]  # no temporary file left
    assert FileTokenStorage(path).get_tokens("http://s/mcp").access_token == "a1"
    assert "a1" not in repr(storage)


def test_a_broken_token_file_is_a_clear_error(tmp_path):
    path = tmp_path / "tokens.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        FileTokenStorage(path).get_tokens("x")


def test_private_key_jwt_assertions_verify_with_the_public_key():
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    token = private_key_signer(pem, "ES256")("client-1", "https://as.example.com")
    head, body, signature = token.split(".")

    def decode(part: str) -> bytes:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))

    claims = json.loads(decode(body))
    assert json.loads(decode(head)) == {"alg": "ES256", "typ": "JWT"}
    assert (claims["iss"], claims["sub"], claims["aud"]) == ("client-1", "client-1", "https://as.example.com")
    assert claims["exp"] > claims["iat"] and claims["jti"]
    raw = decode(signature)
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    key.public_key().verify(der, f"{head}.{body}".encode(), ec.ECDSA(hashes.SHA256()))


def test_a_bad_private_key_is_a_typed_error_without_the_key():
    with pytest.raises(McpAuthError) as caught:
        private_key_signer("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----")("c", "a")
    assert caught.value.reason == "client_auth" and "not a key" not in str(caught.value)


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"grant_type": "password"}, ValueError),
    ({"authorize": "not callable"}, TypeError),
    ({"redirect_uri": "myapp:/cb"}, ValueError),
    ({"storage": {}}, TypeError),
    ({"grant_type": "client_credentials"}, ValueError),
    ({"client_metadata_url": "http://insecure.example.com/c.json"}, ValueError),
    ({"max_retries": 0}, ValueError),
])
def test_the_constructor_refuses_what_cannot_work(kwargs, error):
    with pytest.raises(error):
        McpOAuth(**kwargs)


def test_mcp_oauth_repr_shows_no_secret():
    auth = McpOAuth(grant_type="client_credentials", client_id="machine", client_secret="CS-secret")
    assert "CS-secret" not in repr(auth)


def test_the_oauth_modules_import_no_optional_package():
    code = ("import sys, agcore_sync.mcp.auth, agcore_sync.mcp.transports.http; "
            "assert not [m for m in sys.modules if m.startswith('cryptography')], 'cryptography imported'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60, stdin=subprocess.DEVNULL)


def test_private_key_jwt_without_the_extra_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "cryptography.hazmat.primitives", None)
    with pytest.raises(McpAuthError, match=r"agcore_sync\[oauth-jwt\]") as caught:
        private_key_signer("-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----")("c", "a")
    assert caught.value.reason == "missing_extra"


def test_an_auth_error_pickles_with_its_reason_and_status():
    import pickle

    error = pickle.loads(pickle.dumps(McpAuthError("refused", "tool", reason="resource_mismatch", status_code=401)))
    assert (error.message, error.tool_name, error.reason, error.status_code, error.recoverable) == (
        "refused", "tool", "resource_mismatch", 401, False)
