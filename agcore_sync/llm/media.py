"""Images and documents in messages: :class:`ImageBlock` and :class:`DocumentBlock`.

Both are frozen content blocks like those of :mod:`agcore_sync.llm.types`
(and dispatch through ``ContentBlock.from_dict`` the same way). Their bytes
travel as base64 text, or they point at a URL the provider fetches. The
constructors ``from_path``, ``from_bytes`` and ``from_url`` check what a
provider would refuse, before any request: an unknown media type, a file
over the documented size limits, a URL scheme other than http, https or
data. A ``repr`` shows sizes, never the base64 data, and hides a URL's query
string (signed URLs carry tokens there).

The providers translate these blocks into their wire formats (Anthropic
``image`` / ``document`` blocks with a ``base64``, ``url`` or ``text``
source; OpenAI ``image_url`` and ``file`` parts).
"""

from __future__ import annotations

import base64
import binascii
import os
import urllib.parse
from typing import Any, ClassVar, Optional, Tuple, Union

import attrs

from agcore_sync.llm.content import ContentBlock

__all__ = ["ImageBlock", "DocumentBlock"]

#: Image types both Anthropic and OpenAI accept.
IMAGE_MEDIA_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
#: Document types: PDF (base64 or URL) and plain text.
DOCUMENT_MEDIA_TYPES = ("application/pdf", "text/plain")

#: Largest image, counted as base64 text: Anthropic refuses images over 5 MB
#: ("Image size: maximum 5MB per image" via the API,
#: docs.anthropic.com/en/docs/build-with-claude/vision, read 2026-12; the API
#: measures the base64 string). OpenAI's limit is larger (20 MB per image,
#: platform.openai.com/docs/guides/images-vision), so an image under this
#: one works with both.
MAX_IMAGE_BASE64_CHARS = 5 * 1024 * 1024
#: Largest document, counted as base64 text (or characters for text):
#: Anthropic's PDF support allows 32 MB per request
#: (docs.anthropic.com/en/docs/build-with-claude/pdf-support, "Maximum request
#: size: 32MB"); OpenAI's file inputs allow as much (50 MB per file,
#: platform.openai.com/docs/guides/pdf-files), so the smaller figure applies.
MAX_DOCUMENT_BASE64_CHARS = 32 * 1024 * 1024

_EXTENSIONS = {
    ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp",
    ".pdf": "application/pdf", ".txt": "text/plain", ".text": "text/plain", ".md": "text/plain",
}
_URL_SCHEMES = ("http", "https", "data")


def _sniff(head: bytes) -> Optional[str]:
    """Return the media type the first bytes of a file announce, if any."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head.startswith(b"%PDF-"):
        return "application/pdf"
    return None


def _base64_chars(size: int) -> int:
    return 4 * ((size + 2) // 3)


def _size_text(chars: int) -> str:
    return f"{chars / (1024 * 1024):.1f} MB" if chars >= 1024 * 1024 else f"{chars} chars"


def _read_checked(path: Union[str, os.PathLike], kinds: Tuple[str, ...], limit: int, what: str) -> Tuple[bytes, str]:
    """Read a file after checking its type and size; ValueError names the path."""
    name = os.fspath(path)
    try:
        size = os.stat(name).st_size
        if _base64_chars(size) > limit:  # checked before reading, so a huge file is never loaded
            raise ValueError(
                f"{what} file {name!r} is {size} bytes, over the {limit // (1024 * 1024)} MB limit "
                "(counted as base64) the providers accept"
            )
        with open(name, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise ValueError(f"cannot read {what} file {name!r}: {exc.strerror or exc}") from None
    media_type = _sniff(data[:16]) or _EXTENSIONS.get(os.path.splitext(name)[1].lower())
    if media_type not in kinds:
        raise ValueError(
            f"{what} file {name!r} is not of a supported type ({', '.join(kinds)}); "
            f"its type looks like {media_type or 'unknown'}"
        )
    return data, media_type


def _check_size(chars: int, limit: int, what: str) -> None:
    if chars > limit:
        raise ValueError(f"{what} is {_size_text(chars)} as base64, over the {limit // (1024 * 1024)} MB limit")


def _check_url(_instance: Any, attribute: Any, value: Optional[str]) -> None:
    if value is None:
        return
    if not isinstance(value, str):
        raise TypeError(f"{attribute.name} must be a str URL, got {type(value).__name__}")
    scheme = urllib.parse.urlsplit(value).scheme.lower()
    if scheme not in _URL_SCHEMES:
        raise ValueError(f"{attribute.name} must be an http, https or data URL, got the scheme {scheme or 'none'!r}")


def _check_base64(_instance: Any, attribute: Any, value: Optional[str]) -> None:
    if value is None:
        return
    if not isinstance(value, str):
        raise TypeError(f"{attribute.name} must be base64 text (str); use from_bytes() for bytes")
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{attribute.name} is not valid base64") from None


def _split_data_url(url: str) -> Tuple[str, str]:
    """Return ``(media_type, base64 data)`` of a ``data:<type>;base64,<data>`` URL."""
    header, comma, payload = url[5:].partition(",")
    if not comma or not header.endswith(";base64"):
        raise ValueError("a data URL must be 'data:<media type>;base64,<data>'")
    return header[: -len(";base64")].lower(), payload


def _short_url(url: str) -> str:
    if url.lower().startswith("data:"):
        return f"<data URL, {len(url)} chars>"
    parts = urllib.parse.urlsplit(url)
    shown = urllib.parse.urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))
    return shown + ("?…" if parts.query else "")


@attrs.frozen(repr=False)
class ImageBlock(ContentBlock):
    """An image, as base64 ``data`` or a ``url`` the provider fetches.

    Args:
        media_type: ``image/jpeg``, ``image/png``, ``image/gif`` or
            ``image/webp``; may be None for a URL whose type is unknown.
        data: the image bytes, base64-encoded (str).
        url: an http(s) or data URL.

    Exactly one of ``data`` and ``url`` is given.

    Raises:
        ValueError: both or neither of ``data`` and ``url``, an unsupported
            media type, invalid base64, or a URL scheme other than http,
            https or data.

    Example:
        >>> ImageBlock.from_bytes(bytes(9), "image/png")
        ImageBlock(media_type='image/png', data=<12 base64 chars>)
        >>> ImageBlock.from_url("https://example.com/cat.png?token=secret")
        ImageBlock(media_type='image/png', url='https://example.com/cat.png?…')

    .. versionadded:: 0.1.0
    """

    type: ClassVar[str] = "image"
    media_type: Optional[str]
    data: Optional[str] = attrs.field(default=None, validator=_check_base64)
    url: Optional[str] = attrs.field(default=None, validator=_check_url)

    def __attrs_post_init__(self) -> None:
        if (self.data is None) == (self.url is None):
            raise ValueError("ImageBlock takes exactly one of data= and url=")
        if self.media_type is None and self.data is not None:
            raise ValueError("ImageBlock needs a media_type for base64 data")
        if self.media_type is not None and self.media_type not in IMAGE_MEDIA_TYPES:
            raise ValueError(f"ImageBlock media_type must be one of {IMAGE_MEDIA_TYPES}, got {self.media_type!r}")

    @classmethod
    def from_path(cls, path: Union[str, os.PathLike]) -> ImageBlock:
        """Read an image file; its type comes from its first bytes, else its extension.

        Raises:
            ValueError: the file cannot be read, is not a supported image,
                or is over 5 MB as base64 (the providers' limit).
        """
        data, media_type = _read_checked(path, IMAGE_MEDIA_TYPES, MAX_IMAGE_BASE64_CHARS, "image")
        return cls(media_type, data=base64.b64encode(data).decode("ascii"))

    @classmethod
    def from_bytes(cls, data: bytes, media_type: str) -> ImageBlock:
        """Wrap image bytes of the given media type.

        Raises:
            ValueError: an unsupported media type, or over 5 MB as base64.
        """
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"from_bytes() takes bytes, got {type(data).__name__}")
        _check_size(_base64_chars(len(data)), MAX_IMAGE_BASE64_CHARS, "the image")
        return cls(media_type, data=base64.b64encode(data).decode("ascii"))

    @classmethod
    def from_url(cls, url: str, media_type: Optional[str] = None) -> ImageBlock:
        """Point at an image by URL; a ``data:`` URL becomes base64 ``data``.

        Args:
            url: an http(s) URL (the provider fetches it) or a base64 data URL.
            media_type: the image type; None guesses it from the URL's
                extension (and leaves it None when there is none).

        Raises:
            ValueError: another scheme, a malformed data URL, or a data URL
                over 5 MB.
        """
        _check_url(None, attrs.fields(cls).url, url)
        if url.lower().startswith("data:"):
            kind, payload = _split_data_url(url)
            _check_size(len(payload), MAX_IMAGE_BASE64_CHARS, "the image")
            return cls(media_type or kind, data=payload)
        if media_type is None:
            guessed = _EXTENSIONS.get(os.path.splitext(urllib.parse.urlsplit(url).path)[1].lower())
            media_type = guessed if guessed in IMAGE_MEDIA_TYPES else None
        return cls(media_type, url=url)

    def __repr__(self) -> str:
        source = f"data=<{len(self.data)} base64 chars>" if self.data is not None else f"url={_short_url(self.url)!r}"
        return f"ImageBlock(media_type={self.media_type!r}, {source})"


@attrs.frozen(repr=False)
class DocumentBlock(ContentBlock):
    """A document: a PDF (base64 ``data`` or a ``url``) or plain ``text``.

    Args:
        media_type: ``application/pdf`` (with ``data`` or ``url``) or
            ``text/plain`` (with ``text``).
        data: the PDF bytes, base64-encoded (str).
        url: an http(s) URL of a PDF the provider fetches.
        text: the document's text, for ``text/plain``.
        title: a title shown to the model, if any.

    Exactly one of ``data``, ``url`` and ``text`` is given.

    Raises:
        ValueError: not exactly one source, an unsupported media type or one
            that does not fit the source, invalid base64, or a URL scheme
            other than http, https or data.

    .. versionadded:: 0.1.0
    """

    type: ClassVar[str] = "document"
    media_type: str
    data: Optional[str] = attrs.field(default=None, validator=_check_base64)
    url: Optional[str] = attrs.field(default=None, validator=_check_url)
    text: Optional[str] = None
    title: Optional[str] = None

    def __attrs_post_init__(self) -> None:
        sources = [name for name in ("data", "url", "text") if getattr(self, name) is not None]
        if len(sources) != 1:
            raise ValueError(f"DocumentBlock takes exactly one of data=, url= and text=, got {sources or 'none'}")
        expected = "text/plain" if self.text is not None else "application/pdf"
        if self.media_type != expected:
            raise ValueError(f"a DocumentBlock with {sources[0]}= has media_type {expected!r}, got {self.media_type!r}")

    @classmethod
    def from_path(cls, path: Union[str, os.PathLike], *, title: Optional[str] = None) -> DocumentBlock:
        """Read a PDF or a UTF-8 text file (``.txt``, ``.md``).

        Raises:
            ValueError: the file cannot be read, is neither a PDF nor text,
                is not UTF-8 text, or is over 32 MB as base64.
        """
        data, media_type = _read_checked(path, DOCUMENT_MEDIA_TYPES, MAX_DOCUMENT_BASE64_CHARS, "document")
        return cls._of(data, media_type, title, what=f"document file {os.fspath(path)!r}")

    @classmethod
    def from_bytes(cls, data: bytes, media_type: str, *, title: Optional[str] = None) -> DocumentBlock:
        """Wrap PDF bytes (``application/pdf``) or UTF-8 text bytes (``text/plain``).

        Raises:
            ValueError: another media type, text that is not UTF-8, or over
                32 MB as base64.
        """
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"from_bytes() takes bytes, got {type(data).__name__}")
        if media_type not in DOCUMENT_MEDIA_TYPES:
            raise ValueError(f"DocumentBlock media_type must be one of {DOCUMENT_MEDIA_TYPES}, got {media_type!r}")
        _check_size(_base64_chars(len(data)), MAX_DOCUMENT_BASE64_CHARS, "the document")
        return cls._of(bytes(data), media_type, title, what="the document")

    @classmethod
    def from_url(cls, url: str, *, title: Optional[str] = None) -> DocumentBlock:
        """Point at a PDF by URL; a base64 ``data:application/pdf`` URL becomes ``data``.

        Raises:
            ValueError: another scheme, a malformed data URL, or one that
                is not a PDF or is over 32 MB.
        """
        _check_url(None, attrs.fields(cls).url, url)
        if url.lower().startswith("data:"):
            kind, payload = _split_data_url(url)
            if kind != "application/pdf":
                raise ValueError(f"a document data URL must hold application/pdf, got {kind!r}")
            _check_size(len(payload), MAX_DOCUMENT_BASE64_CHARS, "the document")
            return cls("application/pdf", data=payload, title=title)
        return cls("application/pdf", url=url, title=title)

    @classmethod
    def _of(cls, data: bytes, media_type: str, title: Optional[str], *, what: str) -> DocumentBlock:
        if media_type == "text/plain":
            try:
                return cls(media_type, text=data.decode("utf-8"), title=title)
            except UnicodeDecodeError:
                raise ValueError(f"{what} is not UTF-8 text") from None
        return cls(media_type, data=base64.b64encode(data).decode("ascii"), title=title)

    def __repr__(self) -> str:
        if self.data is not None:
            source = f"data=<{len(self.data)} base64 chars>"
        elif self.url is not None:
            source = f"url={_short_url(self.url)!r}"
        else:
            source = f"text=<{len(self.text or '')} chars>"
        title = f", title={self.title!r}" if self.title is not None else ""
        return f"DocumentBlock(media_type={self.media_type!r}, {source}{title})"

