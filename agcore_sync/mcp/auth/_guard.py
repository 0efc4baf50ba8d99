"""What the OAuth client checks before it talks to an authorization server, and what it reads back.

Two rules, each raising :class:`~agcore_sync.tools.error.McpAuthError`:

1. Transport security (MCP "Authorization", Communication Security; OAuth
   2.1 section 1.5): every authorization-server URL (the MCP server whose
   resource metadata is read, the resource metadata URL, the issuer, the
   authorization, token and registration endpoints) must be ``https``,
   except on a loopback host (``localhost``, 127.0.0.0/8, ``::1``), where
   plain ``http`` never leaves the machine. :func:`require_https` is called
   before anything is sent to such a URL, and on every endpoint a metadata
   document names as soon as it is read, so a code, a PKCE verifier, a client
   secret or a token is never sent in cleartext over a network. The error
   names the URL without its user info, query or fragment.
2. Size: a metadata document, a token answer or a registration answer
   above :data:`MAX_DOCUMENT` bytes is refused (``response_too_large``)
   while it is read, through the library's bounded body reader
   (:func:`~agcore_sync._http.body.read_limited`): a server cannot make the
   client hold, parse or store an unbounded answer.
"""

from __future__ import annotations

import ipaddress
from typing import Optional
from urllib.parse import urlsplit, urlunsplit

import requests

from agcore_sync._http.body import TRANSPORT_ERRORS, BodyTooLarge, read_limited
from agcore_sync.mcp.errors import McpAuthError

__all__ = ["MAX_DOCUMENT", "is_loopback", "require_https", "shown_url", "read_document"]

#: The largest OAuth metadata document, token answer or registration answer read (bytes, 1 MB).
MAX_DOCUMENT = 1_000_000


def is_loopback(host: Optional[str]) -> bool:
    """Whether ``host`` is ``localhost`` or a loopback address (127.0.0.0/8, ``::1``)."""
    if not host:
        return False
    host = host.strip("[]").lower().rstrip(".")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def shown_url(url: str) -> str:
    """Return ``url`` as an error may show it: scheme, host, port and path only."""
    try:
        parts = urlsplit(url)
        netloc = parts.hostname or ""
        if ":" in netloc:
            netloc = f"[{netloc}]"
        if parts.port is not None:
            netloc = f"{netloc}:{parts.port}"
    except ValueError:
        return "<an unparsable URL>"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def require_https(url: object, what: str) -> str:
    """Return ``url`` if it may carry OAuth traffic (rule 1 of the module docstring), else raise.

    Args:
        url: the URL about to be used.
        what: what it is, for the message (``"token endpoint"``).

    Raises:
        McpAuthError: ``url`` is not a str, not ``https`` and not ``http`` on
            a loopback host (``reason="insecure_url"``).
    """
    if not isinstance(url, str):
        raise McpAuthError(f"the OAuth {what} is not a URL string", reason="metadata_invalid")
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        raise McpAuthError(f"the OAuth {what} is not a valid URL", reason="metadata_invalid") from None
    scheme = parts.scheme.lower()
    if scheme == "https" and host:
        return url
    if scheme == "http" and is_loopback(host):
        return url
    raise McpAuthError(
        f"refusing the OAuth {what} {shown_url(url)}: authorization traffic must use https "
        "(plain http only to localhost, 127.0.0.0/8 or ::1); nothing was sent there",
        reason="insecure_url")


def read_document(response: requests.Response, url: str, what: str, *, failed: str) -> bytes:
    """Read the body of a ``stream=True`` OAuth answer, at most :data:`MAX_DOCUMENT` bytes (rule 2).

    Args:
        response: the answer (closed on return).
        url: where it came from, for the message.
        what: what it is (``"token response"``), for the message.
        failed: the ``reason`` of the error when reading fails.

    Raises:
        McpAuthError: the body is larger (``response_too_large``) or reading it failed.
    """
    try:
        return read_limited(response, MAX_DOCUMENT)
    except BodyTooLarge:
        raise McpAuthError(f"the {what} from {shown_url(url)} is larger than {MAX_DOCUMENT} bytes; refused",
                           reason="response_too_large", status_code=response.status_code) from None
    except TRANSPORT_ERRORS as exc:
        raise McpAuthError(f"reading the {what} from {shown_url(url)} failed: {type(exc).__name__}",
                           reason=failed, status_code=response.status_code) from exc
