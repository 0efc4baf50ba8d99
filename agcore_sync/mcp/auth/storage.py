"""Where OAuth tokens and client registrations live: :class:`TokenStorage` and two stores.

Two kinds of record, each a frozen value that turns into a plain dict and
back (so an app can keep it in its own database):

- :class:`OAuthToken`, the tokens for one MCP server, keyed by the
  server's URL (lower-case scheme and host, no trailing slash);
- :class:`OAuthClientInfo`, the client registration at one authorization
  server, keyed by its issuer (registrations are per authorization server:
  a ``client_id`` from one means nothing to another).

Neither value shows a token or a secret in its ``repr``. The stores never
log what they hold. :class:`FileTokenStorage` writes its file with mode
0600 (and replaces it atomically); :class:`InMemoryTokenStorage` forgets
everything with the process. To keep tokens in an app's database, subclass
:class:`TokenStorage` and store ``to_dict()`` per user (docs/mcp.rst shows
one).
"""

from __future__ import annotations

import abc
import json
import os
import tempfile
import threading
import time
from typing import Any, Dict, Mapping, Optional

import attrs

__all__ = ["OAuthToken", "OAuthClientInfo", "TokenStorage", "InMemoryTokenStorage", "FileTokenStorage"]

#: File mode of :class:`FileTokenStorage`'s file (and its lock file): owner read and write only.
FILE_MODE = 0o600
#: What :class:`FileTokenStorage` appends to its path to name its lock file.
LOCK_SUFFIX = ".lock"

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


class _FileLock:
    """An exclusive ``flock`` on ``path`` (created 0600) for the ``with`` block.

    Each entry opens the file anew: ``flock`` locks belong to an open file
    description, so two objects (or two threads) of one process exclude
    each other as two processes do. Closing the descriptor releases it,
    also when the process dies.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: Optional[int] = None

    def __enter__(self) -> _FileLock:
        if fcntl is None:  # pragma: no cover - Windows
            return self
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # releases the lock


def _optional_str(value: Any) -> Optional[str]:
    return None if value is None else str(value)


@attrs.frozen(kw_only=True)
class OAuthToken:
    """The tokens the authorization server issued for one MCP server.

    Attributes:
        access_token: sent as ``Authorization: Bearer ...``; hidden from repr.
        token_type: the type the server named (``Bearer``).
        refresh_token: for a new access token without the user; hidden from repr.
        expires_at: when the access token expires (seconds since the epoch),
            None if the server did not say.
        scope: the scopes granted (space separated), or None.

    .. versionadded:: 0.2
    """

    access_token: str = attrs.field(repr=False)
    token_type: str = "Bearer"
    refresh_token: Optional[str] = attrs.field(default=None, repr=False)
    expires_at: Optional[float] = None
    scope: Optional[str] = None

    def expires_within(self, seconds: float, *, now: Optional[float] = None) -> bool:
        """Whether the access token expires within ``seconds`` (False if no expiry is known)."""
        if self.expires_at is None:
            return False
        return self.expires_at - (time.time() if now is None else now) <= seconds

    def to_dict(self) -> Dict[str, Any]:
        """Return the token as a JSON-ready dict (it holds secrets: store it safely)."""
        return attrs.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OAuthToken:
        """Rebuild a token from :meth:`to_dict`'s output."""
        expires = data.get("expires_at")
        return cls(access_token=str(data["access_token"]), token_type=str(data.get("token_type") or "Bearer"),
                   refresh_token=_optional_str(data.get("refresh_token")),
                   expires_at=None if expires is None else float(expires), scope=_optional_str(data.get("scope")))


@attrs.frozen(kw_only=True)
class OAuthClientInfo:
    """A client registration at one authorization server.

    Attributes:
        client_id: the client's identifier there (a URL for a Client ID
            Metadata Document).
        client_secret: the secret of a confidential client; hidden from repr.
        token_endpoint_auth_method: ``client_secret_basic``,
            ``client_secret_post``, ``private_key_jwt`` or ``none``; None lets
            the client pick from the server's metadata.
        redirect_uris: the redirect URIs registered.

    .. versionadded:: 0.2
    """

    client_id: str
    client_secret: Optional[str] = attrs.field(default=None, repr=False)
    token_endpoint_auth_method: Optional[str] = None
    redirect_uris: tuple = attrs.field(default=(), converter=tuple)

    def to_dict(self) -> Dict[str, Any]:
        """Return the registration as a JSON-ready dict (it may hold a secret)."""
        data = attrs.asdict(self)
        data["redirect_uris"] = list(self.redirect_uris)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OAuthClientInfo:
        """Rebuild a registration from :meth:`to_dict`'s output."""
        return cls(client_id=str(data["client_id"]), client_secret=_optional_str(data.get("client_secret")),
                   token_endpoint_auth_method=_optional_str(data.get("token_endpoint_auth_method")),
                   redirect_uris=tuple(data.get("redirect_uris") or ()))


class TokenStorage(abc.ABC):
    """Where :class:`~agcore_sync.mcp.auth.McpOAuth` keeps tokens and registrations.

    Implementations must be safe to call from several threads. Tokens are
    keyed by the MCP server's URL (lower-case scheme and host, no trailing
    slash), registrations by the authorization server's issuer.

    .. versionadded:: 0.2
    """

    @abc.abstractmethod
    def get_tokens(self, resource: str) -> Optional[OAuthToken]:
        """Return the tokens stored for ``resource``, or None."""

    @abc.abstractmethod
    def set_tokens(self, resource: str, tokens: Optional[OAuthToken]) -> None:
        """Store the tokens for ``resource`` (None forgets them)."""

    @abc.abstractmethod
    def get_client(self, issuer: str) -> Optional[OAuthClientInfo]:
        """Return the registration stored for the authorization server ``issuer``, or None."""

    @abc.abstractmethod
    def set_client(self, issuer: str, client: Optional[OAuthClientInfo]) -> None:
        """Store the registration at ``issuer`` (None forgets it)."""


class InMemoryTokenStorage(TokenStorage):
    """Tokens and registrations in a dict: gone when the process ends.

    .. versionadded:: 0.2
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tokens: Dict[str, OAuthToken] = {}
        self._clients: Dict[str, OAuthClientInfo] = {}

    def __repr__(self) -> str:
        return f"InMemoryTokenStorage({len(self._tokens)} token sets, {len(self._clients)} clients)"

    def get_tokens(self, resource: str) -> Optional[OAuthToken]:
        """Return the tokens stored for ``resource``, or None."""
        with self._lock:
            return self._tokens.get(resource)

    def set_tokens(self, resource: str, tokens: Optional[OAuthToken]) -> None:
        """Store the tokens for ``resource`` (None forgets them)."""
        with self._lock:
            if tokens is None:
                self._tokens.pop(resource, None)
            else:
                self._tokens[resource] = tokens

    def get_client(self, issuer: str) -> Optional[OAuthClientInfo]:
        """Return the registration stored for ``issuer``, or None."""
        with self._lock:
            return self._clients.get(issuer)

    def set_client(self, issuer: str, client: Optional[OAuthClientInfo]) -> None:
        """Store the registration at ``issuer`` (None forgets it)."""
        with self._lock:
            if client is None:
                self._clients.pop(issuer, None)
            else:
                self._clients[issuer] = client


class FileTokenStorage(TokenStorage):
    """Tokens and registrations in one JSON file readable by its owner only (mode 0600).

    Every change rewrites the file through a temporary file in the same
    folder (created 0600) and an atomic rename, so a crash never leaves a
    half-written file and the secrets are never readable by others, even
    for a moment. A file that another process changed is read again on
    each access.

    Each change (read, modify, write) holds an exclusive ``fcntl.flock`` on
    a lock file beside it (``<path>.lock``, mode 0600, never removed: a
    removed lock file would let two writers lock two different files), so
    any number of processes, and of objects in one process, writing the
    same file lose no update. Reads take no lock: the rename makes every
    read see a whole file. Where ``fcntl`` does not exist (Windows) only
    the threads of one object are serialised.

    Args:
        path: the file; its folder must exist.

    .. versionadded:: 0.2
    """

    def __init__(self, path: os.PathLike[str] | str) -> None:
        self.path = os.fspath(path)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"FileTokenStorage({self.path!r})"

    def _read(self) -> Dict[str, Dict[str, Any]]:
        try:
            with open(self.path, encoding="utf-8") as handle:
                data = json.load(handle)
        except FileNotFoundError:
            return {"tokens": {}, "clients": {}}
        except ValueError as exc:
            raise ValueError(f"token file {self.path} is not valid JSON; remove it to start again") from exc
        if not isinstance(data, dict):
            raise ValueError(f"token file {self.path} does not hold a JSON object; remove it to start again")
        return {"tokens": dict(data.get("tokens") or {}), "clients": dict(data.get("clients") or {})}

    def _write(self, data: Dict[str, Dict[str, Any]]) -> None:
        folder = os.path.dirname(os.path.abspath(self.path))
        fd, tmp = tempfile.mkstemp(prefix=".agcore-tokens-", dir=folder)  # mkstemp creates it 0600
        try:
            os.fchmod(fd, FILE_MODE)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle)
            os.replace(tmp, self.path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    def _update(self, kind: str, key: str, value: Optional[Dict[str, Any]]) -> None:
        with self._lock, _FileLock(self.path + LOCK_SUFFIX):
            data = self._read()
            if value is None:
                data[kind].pop(key, None)
            else:
                data[kind][key] = value
            self._write(data)

    def get_tokens(self, resource: str) -> Optional[OAuthToken]:
        """Return the tokens stored for ``resource``, or None."""
        with self._lock:
            entry = self._read()["tokens"].get(resource)
        return None if entry is None else OAuthToken.from_dict(entry)

    def set_tokens(self, resource: str, tokens: Optional[OAuthToken]) -> None:
        """Store the tokens for ``resource`` (None forgets them)."""
        self._update("tokens", resource, None if tokens is None else tokens.to_dict())

    def get_client(self, issuer: str) -> Optional[OAuthClientInfo]:
        """Return the registration stored for ``issuer``, or None."""
        with self._lock:
            entry = self._read()["clients"].get(issuer)
        return None if entry is None else OAuthClientInfo.from_dict(entry)

    def set_client(self, issuer: str, client: Optional[OAuthClientInfo]) -> None:
        """Store the registration at ``issuer`` (None forgets it)."""
        self._update("clients", issuer, None if client is None else client.to_dict())
