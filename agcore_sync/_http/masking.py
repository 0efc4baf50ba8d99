"""Keeping secrets out of text and parsed JSON: the one masking rule.

A server may echo the credential it was sent (an API key in an error body, a
malformed chunk, a proxy's error page). Whatever a client puts in an
exception, a log line or an error's ``body`` goes through a :class:`Masker`
first, which replaces every occurrence of each secret with :data:`MASK`.

The secrets of a client are its API key and what :func:`url_secrets` and
:func:`header_secrets` find: the password of a URL's userinfo
(``https://user:password@host``) and the values of headers that carry
credentials (named ``Authorization``, ``api-key`` or ``x-api-key``, or with
``token``, ``secret`` or ``key`` in their name). :func:`masked_url` is a URL
fit for a ``repr`` or a log line.
"""

from __future__ import annotations

import urllib.parse
from typing import Any, Iterable, List, Mapping, Optional, Tuple

__all__ = ["MASK", "Masker", "mask", "url_secrets", "header_secrets", "masked_url", "is_secret_header"]

#: Placeholder that replaces a secret wherever it would appear.
MASK = "***"

_SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "api-key", "x-api-key"})
_SECRET_PARTS = ("token", "secret", "key")


def is_secret_header(name: str) -> bool:
    """Whether a header named ``name`` carries a credential (its value is masked)."""
    lowered = name.lower()
    return lowered in _SECRET_HEADERS or any(part in lowered for part in _SECRET_PARTS)


def header_secrets(headers: Optional[Mapping[str, str]]) -> List[str]:
    """Return the values to mask among ``headers``: each credential header's value, and its part after a scheme.

    ``Authorization: Bearer abc`` gives ``"Bearer abc"`` and ``"abc"``, so an
    echo of the bare token is masked too.
    """
    found: List[str] = []
    for name, value in (headers or {}).items():
        if not isinstance(name, str) or not isinstance(value, str) or not is_secret_header(name):
            continue
        value = value.strip()
        if value:
            found.append(value)
            scheme, _, credential = value.partition(" ")
            if credential.strip():
                found.append(credential.strip())
    return found


def url_secrets(url: str) -> List[str]:
    """Return the password of ``url``'s userinfo (as written and decoded), or nothing."""
    try:
        password = urllib.parse.urlsplit(url).password
    except ValueError:
        return []
    if not password:
        return []
    return [password, urllib.parse.unquote(password)]


def masked_url(url: str) -> str:
    """Return ``url`` with the password of its userinfo replaced by :data:`MASK`."""
    try:
        parts = urllib.parse.urlsplit(url)
        password = parts.password
    except ValueError:
        return url
    if not password:
        return url
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:{MASK}@{host}"))


def mask(text: str, secret: Optional[str]) -> str:
    """Return ``text`` with every occurrence of ``secret`` replaced by :data:`MASK`."""
    if secret and secret in text:
        return text.replace(secret, MASK)
    return text


class Masker:
    """Masks some secrets (or none) in text and in parsed JSON values.

    Its ``repr`` never shows a secret, so a masker can sit in any object.

    Args:
        secrets: the values to hide; None and ``""`` are skipped. The
            longest is masked first, so a secret holding another one is
            masked whole.
    """

    __slots__ = ("_secrets",)

    def __init__(self, *secrets: Optional[str]) -> None:
        kept = {secret for secret in secrets if secret}
        self._secrets: Tuple[str, ...] = tuple(sorted(kept, key=len, reverse=True))

    @classmethod
    def of(cls, key: Optional[str], url: str = "", headers: Optional[Mapping[str, str]] = None,
           more: Iterable[Optional[str]] = ()) -> Masker:
        """Return the masker of a client: its ``key``, ``url``'s password and the credential ``headers``."""
        return cls(key, *url_secrets(url), *header_secrets(headers), *more)

    def __repr__(self) -> str:
        return f"Masker({MASK if self._secrets else None})"

    def text(self, text: str) -> str:
        """Return ``text`` with every secret replaced by :data:`MASK`."""
        for secret in self._secrets:
            text = mask(text, secret)
        return text

    def json(self, value: Any) -> Any:
        """Return a copy of ``value`` (parsed JSON) with the secrets masked in every string, keys too."""
        if not self._secrets:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(str(k)): self.json(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.json(v) for v in value]
        return value
