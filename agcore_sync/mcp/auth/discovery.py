"""Finding the authorization server of an MCP server: challenges, RFC 9728 and RFC 8414.

The rules this module implements (MCP "Authorization", 2025-06-18 and
2025-11-25, with the 2025-03-26 fallbacks), each cited where it refuses:

1. A 401 or 403 carries ``WWW-Authenticate: Bearer ...``; its
   ``resource_metadata``, ``scope`` and ``error`` parameters are read
   (:func:`parse_www_authenticate`, RFC 6750 section 3 / RFC 9728 5.1).
2. Protected resource metadata: the ``resource_metadata`` URL when given,
   else the path-aware well-known URL
   (``/.well-known/oauth-protected-resource/<path>``), then the root one.
3. The metadata's ``resource`` must name the server: same scheme, host and
   port, and a path that is the server's path or a parent of it (RFC 9728
   section 3.3, RFC 8707). Anything else is refused (``resource_mismatch``).
4. Authorization server metadata, for an issuer with a path
   ``/tenant``: ``/.well-known/oauth-authorization-server/tenant``,
   ``/.well-known/openid-configuration/tenant``,
   ``/tenant/.well-known/openid-configuration``; without a path, the two
   root documents. The document's ``issuer`` must equal the issuer the URL
   was built from (RFC 8414 section 3.3), else ``issuer_mismatch``.
5. No protected resource metadata at all (a 2025-03-26 server): the
   authorization base URL is the server URL without its path; its
   ``/.well-known/oauth-authorization-server`` is read if present (its
   issuer must then be on the server's origin, since no issuer was known
   in advance), else the default endpoints ``/authorize``, ``/token`` and
   ``/register`` are used.

Every request goes through the ``requests.Session`` given (the
transport's), bounded by a timeout; no ``requests`` exception leaves the
module: each becomes :class:`~agcore_sync.tools.error.McpAuthError`. Every
URL is checked before it is fetched, and every endpoint a document names as
it is read (https only, plain http on loopback hosts), and a document above
:data:`MAX_DOCUMENT` bytes is refused: the rules of
:mod:`~agcore_sync.mcp.auth._guard`.
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import urlsplit, urlunsplit

import attrs
import requests

from agcore_sync import _instrument
from agcore_sync.mcp.auth._guard import MAX_DOCUMENT, read_document, require_https  # noqa: F401 - MAX_DOCUMENT stays importable here
from agcore_sync.mcp.errors import McpAuthError

__all__ = [
    "Challenge",
    "ResourceMetadata",
    "ServerMetadata",
    "parse_www_authenticate",
    "discover_resource_metadata",
    "discover_server_metadata",
    "legacy_server_metadata",
    "resource_matches",
    "canonical_url",
]

logger = _instrument.get_logger("agcore_sync.mcp.auth")

#: Seconds (connect, read) for each metadata request.
METADATA_TIMEOUT = (10.0, 30.0)

_PARAM = re.compile(r'\s*([A-Za-z0-9_\-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]*))\s*,?')


@attrs.frozen
class Challenge:
    """What a ``WWW-Authenticate: Bearer`` challenge said.

    Attributes:
        resource_metadata: the protected resource metadata URL, if given.
        scope: the scopes the request needs (space separated), if given.
        error: the OAuth error code (``invalid_token``, ``insufficient_scope``), if given.
    """

    resource_metadata: Optional[str] = None
    scope: Optional[str] = None
    error: Optional[str] = None


def parse_www_authenticate(value: Optional[str]) -> Challenge:
    """Parse the ``Bearer`` challenge of a ``WWW-Authenticate`` header value.

    Other schemes' parameters are ignored; a header without a ``Bearer``
    challenge gives an empty :class:`Challenge`.
    """
    if not value:
        return Challenge()
    match = re.search(r"(?:^|,)\s*Bearer(?:\s+|$)", value, re.IGNORECASE)
    if match is None:
        return Challenge()
    params: Dict[str, str] = {}
    rest = value[match.end():]
    position = 0
    while position < len(rest):
        found = _PARAM.match(rest, position)
        if found is None or found.end() == position:
            break
        name = found.group(1).lower()
        if found.group(2) is None and re.match(r"\s*[A-Za-z]+\s+[A-Za-z0-9_\-]+\s*=", rest[position:]):
            break  # the next challenge's scheme
        raw = found.group(2)
        params.setdefault(name, re.sub(r"\\(.)", r"\1", raw) if raw is not None else (found.group(3) or ""))
        position = found.end()
    return Challenge(resource_metadata=params.get("resource_metadata") or None,
                     scope=params.get("scope") or None, error=params.get("error") or None)


@attrs.frozen(kw_only=True)
class ResourceMetadata:
    """The protected resource metadata of an MCP server (RFC 9728), the parts used.

    Attributes:
        resource: the resource identifier (sent as the ``resource`` parameter).
        authorization_servers: the issuers that can grant tokens for it.
        scopes_supported: the scopes it names, or None.
        url: where the document was read.
    """

    resource: str
    authorization_servers: Tuple[str, ...] = attrs.field(converter=tuple)
    scopes_supported: Optional[Tuple[str, ...]] = None
    url: str = ""


@attrs.frozen(kw_only=True)
class ServerMetadata:
    """Authorization server metadata (RFC 8414 / OpenID discovery), the parts used.

    Attributes:
        issuer: the checked issuer identifier.
        authorization_endpoint: where the user is sent.
        token_endpoint: where codes and refresh tokens are exchanged.
        registration_endpoint: RFC 7591 dynamic registration, if offered.
        code_challenge_methods_supported: PKCE methods, None if not listed.
        token_endpoint_auth_methods_supported: client authentication methods offered.
        scopes_supported: the scopes the server names, or None.
        grant_types_supported: the grant types offered, or None.
        client_id_metadata_document_supported: whether URL client ids are accepted.
        url: where the document was read ("" for the 2025-03-26 defaults).
    """

    issuer: str
    authorization_endpoint: Optional[str] = None
    token_endpoint: str
    registration_endpoint: Optional[str] = None
    code_challenge_methods_supported: Optional[Tuple[str, ...]] = None
    token_endpoint_auth_methods_supported: Tuple[str, ...] = ("client_secret_basic",)
    scopes_supported: Optional[Tuple[str, ...]] = None
    grant_types_supported: Optional[Tuple[str, ...]] = None
    client_id_metadata_document_supported: bool = False
    url: str = ""


def canonical_url(url: str) -> str:
    """Return ``url`` with a lower-case scheme and host, no fragment, no trailing slash on the path."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, parts.query, ""))


def _origin(url: str) -> Tuple[str, str, Optional[int]]:
    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme.lower())
    return parts.scheme.lower(), (parts.hostname or "").lower(), port


def resource_matches(resource: str, server_url: str) -> bool:
    """Whether a metadata ``resource`` names ``server_url`` (rule 3 of the module docstring)."""
    try:
        if _origin(resource) != _origin(server_url):
            return False
    except ValueError:
        return False
    want = [s for s in urlsplit(server_url).path.split("/") if s]
    have = [s for s in urlsplit(resource).path.split("/") if s]
    return want[:len(have)] == have


def _get_json(session: requests.Session, url: str, headers: Dict[str, str]) -> Optional[Dict[str, Any]]:
    """GET a JSON document; None for a 4xx (not there); McpAuthError for anything broken or insecure."""
    require_https(url, "metadata URL")
    try:
        response = session.get(url, headers={**headers, "Accept": "application/json"},
                               timeout=METADATA_TIMEOUT, allow_redirects=False, stream=True)
    except (requests.RequestException, OSError) as exc:
        raise McpAuthError(f"cannot read OAuth metadata at {url}: {type(exc).__name__}",
                           reason="metadata_unreachable") from exc
    try:
        if 400 <= response.status_code < 500 or 300 <= response.status_code < 400:
            return None
        if response.status_code >= 500:
            raise McpAuthError(f"OAuth metadata at {url} answered HTTP {response.status_code}",
                               reason="metadata_unreachable", status_code=response.status_code)
        body = read_document(response, url, "OAuth metadata", failed="metadata_unreachable")
    finally:
        response.close()
    try:
        document = json.loads(body)
    except ValueError:
        raise McpAuthError(f"OAuth metadata at {url} is not JSON", reason="metadata_invalid") from None
    if not isinstance(document, dict):
        raise McpAuthError(f"OAuth metadata at {url} is not a JSON object", reason="metadata_invalid")
    return document


def _strings(value: Any) -> Optional[Tuple[str, ...]]:
    if value is None:
        return None
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    return None


def _well_known(url: str, name: str, *, append: bool = False) -> str:
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    new_path = f"{path}/.well-known/{name}" if append else f"/.well-known/{name}{path}"
    return urlunsplit((parts.scheme, parts.netloc, new_path, "", ""))


def discover_resource_metadata(session: requests.Session, server_url: str, challenge: Challenge,
                               headers: Dict[str, str]) -> Optional[ResourceMetadata]:
    """Read and check the server's protected resource metadata (rules 2 and 3); None if it has none.

    Raises:
        McpAuthError: the document is broken, names no authorization server,
            or its ``resource`` does not name ``server_url`` (``resource_mismatch``).
    """
    if challenge.resource_metadata:
        candidates = [challenge.resource_metadata]
    else:
        candidates = []
        if urlsplit(server_url).path.strip("/"):
            candidates.append(_well_known(server_url, "oauth-protected-resource"))
        root = urlsplit(server_url)
        candidates.append(urlunsplit((root.scheme, root.netloc, "/.well-known/oauth-protected-resource", "", "")))
    for url in candidates:
        document = _get_json(session, url, headers)
        if document is None:
            continue
        resource = document.get("resource")
        servers = _strings(document.get("authorization_servers"))
        if not isinstance(resource, str) or not servers:
            raise McpAuthError(f"protected resource metadata at {url} lacks resource or authorization_servers",
                               reason="metadata_invalid")
        if not resource_matches(resource, server_url):
            raise McpAuthError(
                f"protected resource metadata at {url} names resource {resource!r}, which is not the MCP "
                f"server {server_url!r}; refusing to authorize (RFC 9728 section 3.3)", reason="resource_mismatch")
        return ResourceMetadata(resource=resource, authorization_servers=servers,
                                scopes_supported=_strings(document.get("scopes_supported")), url=url)
    return None


def _server_metadata(document: Dict[str, Any], url: str, issuer: str) -> ServerMetadata:
    token_endpoint = document.get("token_endpoint")
    if not isinstance(token_endpoint, str):
        raise McpAuthError(f"authorization server metadata at {url} has no token_endpoint", reason="metadata_invalid")
    authorization_endpoint = document.get("authorization_endpoint")
    registration = document.get("registration_endpoint")
    # Checked now, before any of them is used: an https document may name an http endpoint.
    require_https(token_endpoint, "token endpoint")
    if isinstance(authorization_endpoint, str):
        require_https(authorization_endpoint, "authorization endpoint")
    if isinstance(registration, str):
        require_https(registration, "registration endpoint")
    return ServerMetadata(
        issuer=issuer,
        authorization_endpoint=authorization_endpoint if isinstance(authorization_endpoint, str) else None,
        token_endpoint=token_endpoint,
        registration_endpoint=registration if isinstance(registration, str) else None,
        code_challenge_methods_supported=_strings(document.get("code_challenge_methods_supported")),
        token_endpoint_auth_methods_supported=_strings(document.get("token_endpoint_auth_methods_supported"))
        or ("client_secret_basic",),
        scopes_supported=_strings(document.get("scopes_supported")),
        grant_types_supported=_strings(document.get("grant_types_supported")),
        client_id_metadata_document_supported=document.get("client_id_metadata_document_supported") is True,
        url=url,
    )


def _metadata_urls(issuer: str) -> List[str]:
    if urlsplit(issuer).path.strip("/"):
        return [_well_known(issuer, "oauth-authorization-server"), _well_known(issuer, "openid-configuration"),
                _well_known(issuer, "openid-configuration", append=True)]
    return [_well_known(issuer, "oauth-authorization-server"), _well_known(issuer, "openid-configuration")]


def discover_server_metadata(session: requests.Session, issuer: str, headers: Dict[str, str]) -> ServerMetadata:
    """Read the metadata of the authorization server ``issuer`` (rule 4).

    Raises:
        McpAuthError: no document found, or its ``issuer`` differs
            (``issuer_mismatch``): nothing from it is used.
    """
    require_https(issuer, "issuer")
    for url in _metadata_urls(issuer):
        document = _get_json(session, url, headers)
        if document is None:
            continue
        named = document.get("issuer")
        if not isinstance(named, str) or canonical_url(named) != canonical_url(issuer):
            raise McpAuthError(
                f"authorization server metadata at {url} names issuer {named!r}, not {issuer!r}; refusing it "
                "(RFC 8414 section 3.3)", reason="issuer_mismatch")
        return _server_metadata(document, url, named)
    raise McpAuthError(f"authorization server {issuer} publishes no OAuth or OpenID metadata",
                       reason="metadata_missing")


def legacy_server_metadata(session: requests.Session, server_url: str, headers: Dict[str, str]) -> ServerMetadata:
    """Find the authorization server the 2025-03-26 way, for a server without resource metadata (rule 5).

    Raises:
        McpAuthError: the root metadata names an issuer on another origin.
    """
    parts = urlsplit(server_url)
    base = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
    url = f"{base}/.well-known/oauth-authorization-server"
    document = _get_json(session, url, headers)
    if document is None:
        logger.debug("no OAuth metadata at %s; using the 2025-03-26 default endpoints", url)
        return ServerMetadata(issuer=base, authorization_endpoint=f"{base}/authorize", token_endpoint=f"{base}/token",
                              registration_endpoint=f"{base}/register", code_challenge_methods_supported=("S256",),
                              token_endpoint_auth_methods_supported=("client_secret_basic", "client_secret_post",
                                                                     "none"))
    named = document.get("issuer")
    if not isinstance(named, str) or _origin(named) != _origin(base):
        raise McpAuthError(f"authorization server metadata at {url} names issuer {named!r}, not on {base}; "
                           "refusing it", reason="issuer_mismatch")
    return _server_metadata(document, url, named)
