"""``private_key_jwt`` client assertions (RFC 7523 section 2.2), signed with ``cryptography``.

``cryptography`` is the optional ``oauth-jwt`` extra: it is imported only
when an assertion is signed, and a missing extra raises one
:class:`~agcore_sync.tools.error.McpAuthError` naming it. ES256, ES384 and
RS256 keys in PEM (PKCS#8) are supported.
"""

from __future__ import annotations

import base64
import json
import secrets
import time
from typing import Any, Callable

from agcore_sync.mcp.errors import McpAuthError

__all__ = ["private_key_signer", "ASSERTION_LIFETIME"]

#: Seconds a client assertion stays valid.
ASSERTION_LIFETIME = 300

_EC_SIZES = {"ES256": 32, "ES384": 48}


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _load(private_key_pem: str) -> Any:
    try:
        from cryptography.hazmat.primitives import serialization
    except ImportError:
        raise McpAuthError("private_key_jwt needs the optional extra: pip install 'agcore_sync[oauth-jwt]'",
                           reason="missing_extra") from None
    try:
        return serialization.load_pem_private_key(private_key_pem.encode("ascii"), password=None)
    except (ValueError, TypeError):
        raise McpAuthError("the private key for private_key_jwt is not an unencrypted PEM key",
                           reason="client_auth") from None


def private_key_signer(private_key_pem: str, algorithm: str = "ES256") -> Callable[[str, str], str]:
    """Return ``signer(client_id, audience) -> str`` making a signed client assertion.

    The key is loaded on first use. Claims: ``iss`` and ``sub`` the
    client id, ``aud`` the authorization server's issuer, ``iat``, ``exp``
    (:data:`ASSERTION_LIFETIME` later) and a random ``jti``.

    Raises:
        ValueError: ``algorithm`` is not ES256, ES384 or RS256.
    """
    if algorithm not in ("ES256", "ES384", "RS256"):
        raise ValueError(f"algorithm must be ES256, ES384 or RS256, got {algorithm!r}")

    def sign(client_id: str, audience: str) -> str:
        key = _load(private_key_pem)
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
        from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

        now = int(time.time())
        header = {"alg": algorithm, "typ": "JWT"}
        claims = {"iss": client_id, "sub": client_id, "aud": audience, "iat": now,
                  "exp": now + ASSERTION_LIFETIME, "jti": secrets.token_hex(16)}
        signing_input = (_b64url(json.dumps(header, separators=(",", ":")).encode())
                         + "." + _b64url(json.dumps(claims, separators=(",", ":")).encode()))
        if algorithm in _EC_SIZES:
            if not isinstance(key, ec.EllipticCurvePrivateKey):
                raise McpAuthError(f"{algorithm} needs an EC private key", reason="client_auth")
            digest = hashes.SHA256() if algorithm == "ES256" else hashes.SHA384()
            r, s = decode_dss_signature(key.sign(signing_input.encode("ascii"), ec.ECDSA(digest)))
            size = _EC_SIZES[algorithm]
            signature = r.to_bytes(size, "big") + s.to_bytes(size, "big")
        else:
            if not isinstance(key, rsa.RSAPrivateKey):
                raise McpAuthError("RS256 needs an RSA private key", reason="client_auth")
            signature = key.sign(signing_input.encode("ascii"), padding.PKCS1v15(), hashes.SHA256())
        return signing_input + "." + _b64url(signature)

    return sign
