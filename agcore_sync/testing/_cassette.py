"""The cassette file: JSONL, a header line, then one row per line.

Layout (format version :data:`FORMAT_VERSION`)::

    {"agcore_cassette": 1, "kind": "llm", "provider": "OpenAIProvider", "model": "gpt-4o-mini", ...}
    {"request": {...}, "events": [{...}, ...]}          a streamed exchange
    {"request": {...}, "response": {...}}               a chat() exchange
    {"request": {...}, "events": [...], "error": {...}} a stream that failed

An MCP cassette (``"kind": "mcp"``) holds one message per row instead:
``{"from": "client", "message": {...}}`` or ``{"from": "server", ...}``.

Rules:

1. The first line is the header; its ``agcore_cassette`` is the format
   version. A version above :data:`FORMAT_VERSION` is refused (a newer
   library wrote it), and so is a cassette of the other kind.
2. Every other non-blank line is one JSON object. A line that is not (a
   corrupt file, or one cut short by a crash) is refused with the file's
   path and the line's number: nothing of a broken cassette is replayed.
3. Rows are written whole, one ``write`` of one line under the writer's
   lock, with the file opened for appending for that write only: a
   recorder holds no descriptor, and a crash leaves at most the last line
   cut (rule 2 names it).
4. What is written is the library's neutral JSON (``to_dict()``), never
   HTTP: no header, key or token reaches a cassette.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any, Dict, List, Tuple

import attrs

from agcore_sync._version import __version__
from agcore_sync.testing.errors import CassetteError

__all__ = ["FORMAT_VERSION", "Row", "CassetteWriter", "read_cassette"]

#: The format version this library writes, and the newest it reads.
FORMAT_VERSION = 1
#: The header's key holding the format version.
HEADER_KEY = "agcore_cassette"


@attrs.frozen(kw_only=True)
class Row:
    """One row of a cassette and the 1-based line it was read from."""

    line: int
    data: Dict[str, Any]


def read_cassette(path: str, kind: str) -> Tuple[Dict[str, Any], List[Row]]:
    """Return the header and the rows of the cassette at ``path``, checked (rules 1 and 2).

    Raises:
        CassetteError: no such file, unreadable, a corrupt line, another
            kind of cassette, or a newer format version.
    """
    try:
        with open(path, "rb") as file:
            raw_lines = file.read().split(b"\n")
    except FileNotFoundError:
        raise CassetteError(f"no cassette at {path}", path=path) from None
    except OSError as exc:
        raise CassetteError(f"cannot read cassette {path}: {exc.strerror or exc}", path=path) from None
    rows = []
    for number, raw in enumerate(raw_lines, 1):
        if raw.strip():
            rows.append(Row(line=number, data=_parse(path, number, raw)))
    if not rows:
        raise CassetteError(f"cassette {path} is empty (no header line); re-record it", path=path, line=1)
    header = rows[0].data
    _check_header(path, header, rows[0].line, kind)
    return header, rows[1:]


def _parse(path: str, number: int, raw: bytes) -> Dict[str, Any]:
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise CassetteError(f"cassette {path}, line {number}: not UTF-8 text; the file is corrupt, re-record it",
                            path=path, line=number) from None
    except ValueError as exc:
        raise CassetteError(f"cassette {path}, line {number}: not valid JSON ({exc}); the file is corrupt "
                            "or was cut short: re-record it", path=path, line=number) from None
    except RecursionError:
        raise CassetteError(f"cassette {path}, line {number}: JSON nested too deep to read; re-record it",
                            path=path, line=number) from None
    if not isinstance(data, dict):
        raise CassetteError(f"cassette {path}, line {number}: a row must be a JSON object, not "
                            f"{type(data).__name__}; the file is corrupt, re-record it", path=path, line=number)
    return data


def _check_header(path: str, header: Dict[str, Any], number: int, kind: str) -> None:
    version = header.get(HEADER_KEY)
    if isinstance(version, bool) or not isinstance(version, int):
        raise CassetteError(f"cassette {path}, line {number}: the first line is not a cassette header "
                            f"(no {HEADER_KEY!r} version); re-record it", path=path, line=number)
    if version > FORMAT_VERSION:
        raise CassetteError(f"cassette {path} has format version {version}, newer than this agcore_sync "
                            f"{__version__} reads (up to {FORMAT_VERSION}): upgrade agcore_sync or re-record it",
                            path=path, line=number)
    if header.get("kind") != kind:
        raise CassetteError(f"cassette {path} is a {header.get('kind')!r} cassette, not a {kind!r} one: "
                            "give the provider cassettes to ReplayProvider and the MCP ones to ReplayTransport",
                            path=path, line=number)


class CassetteWriter:
    """Appends rows to one cassette file (rule 3); thread-safe.

    Making one checks at once that the file can be written (a read-only
    path fails here, before anything is sent anywhere) and writes the header
    if the file is new or empty; an existing cassette must be of the same
    kind and recorded from the same class, and gets its new rows appended.

    Args:
        path: the cassette file; its folder is created if missing.
        header: the header's fields besides the format version.
        same: the header fields an existing cassette must share.

    Raises:
        CassetteError: the path cannot be written, or an existing cassette
            there differs in kind or class (or is corrupt).
    """

    def __init__(self, path: str, header: Dict[str, Any], same: Tuple[str, ...]) -> None:
        self.path = path
        self._lock = threading.Lock()
        existing = os.path.isfile(path) and os.path.getsize(path) > 0
        if existing:
            old, _rows = read_cassette(path, header["kind"])
            for key in same:
                if old.get(key) != header.get(key):
                    raise CassetteError(f"cassette {path} was recorded with {key} {old.get(key)!r}, not "
                                        f"{header.get(key)!r}: record into another file or delete it", path=path)
        try:
            folder = os.path.dirname(path)
            if folder:
                os.makedirs(folder, exist_ok=True)
            with open(path, "a", encoding="utf-8"):
                pass
        except OSError as exc:
            raise CassetteError(f"cannot write cassette {path}: {exc.strerror or exc}", path=path) from None
        if not existing:
            self.write({HEADER_KEY: FORMAT_VERSION, **header, "recorded_with": f"agcore_sync {__version__}"})

    def __repr__(self) -> str:
        return f"CassetteWriter({self.path!r})"

    def write(self, row: Dict[str, Any]) -> None:
        """Append ``row`` as one line.

        Raises:
            CassetteError: the file cannot be written any more.
        """
        line = json.dumps(row, ensure_ascii=False) + "\n"
        with self._lock:
            try:
                with open(self.path, "a", encoding="utf-8") as file:
                    file.write(line)
            except OSError as exc:
                raise CassetteError(f"cannot write cassette {self.path}: {exc.strerror or exc}",
                                    path=self.path) from None
