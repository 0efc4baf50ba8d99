"""RecordingTransport and ReplayTransport: an MCP session on a cassette, one row per message.

:class:`RecordingTransport` wraps a real :class:`~agcore_sync.mcp.Transport`
and appends every JSON-RPC message, in the order the transport saw it, as
``{"from": "client", "message": ...}`` (written before it is sent, so a
response is never recorded before its request) or ``{"from": "server",
"message": ...}`` (written when it arrives, before the client gets it).
Only messages are recorded: HTTP headers, ``Authorization``, OAuth tokens
and the server's environment never are.

:class:`ReplayTransport` plays a session back with no server process and
no socket. Its rule (causal replay):

1. A message the client sends must equal a client row not yet used, its
   JSON-RPC ``id`` (and a ``progressToken`` equal to it) aside: the first
   such row in recorded order is used up. None equal raises
   :class:`~agcore_sync.testing.CassetteMismatchError` against the first
   unused client row.
2. A server response is delivered once its request's row is used, with
   the id of the live request that matched it (requests sent from several
   threads, or in another order, get other ids than when recording); a
   server notification or request once every client row before it is
   used. Released rows go out in recorded order.
3. Delivery happens on the thread whose ``send`` made rows deliverable
   (as the HTTP transport delivers on the sending thread), one thread at
   a time, so the client sees the server's messages in recorded order.

.. versionadded:: 0.2
"""

from __future__ import annotations

import collections
import copy
import threading
from typing import Any, Callable, Deque, Dict, List, Optional

from agcore_sync.mcp import Transport
from agcore_sync.testing._cassette import CassetteWriter, read_cassette
from agcore_sync.testing._diff import first_difference, shown
from agcore_sync.testing.errors import CassetteError, CassetteMismatchError

__all__ = ["RecordingTransport", "ReplayTransport"]

_CLIENT = "client"
_SERVER = "server"


class RecordingTransport(Transport):
    """Wraps an MCP transport and appends every message of the session to a cassette.

    The cassette is checked when this is made (a path that cannot be
    written raises here, before the server starts). ``restartable`` is the
    inner transport's.

    Args:
        inner: the transport to the real server (e.g. a
            :class:`~agcore_sync.mcp.StdioTransport`).
        path: the cassette file (``.jsonl``).

    Raises:
        TypeError: ``inner`` is not a transport.
        CassetteError: the path cannot be written or holds another kind of cassette.

    Example::

        transport = RecordingTransport(StdioTransport("python", ["server.py"]), "tests/cassettes/mcp.jsonl")
        with McpClient("notes", transport) as client:
            client.call_tool("search", {"query": "lunch"})

    .. versionadded:: 0.2
    """

    def __init__(self, inner: Transport, path: Any) -> None:
        if not isinstance(inner, Transport):
            raise TypeError(f"RecordingTransport: inner must be an MCP Transport such as StdioTransport(...), "
                            f"got {type(inner).__name__}")
        self.inner = inner
        self.restartable = inner.restartable  # type: ignore[misc] - an instance may narrow the class default
        #: The cassette file.
        self.path = str(path)
        self._writer = CassetteWriter(self.path, {"kind": "mcp", "transport": type(inner).__name__},
                                      same=("transport",))

    def __repr__(self) -> str:
        return f"RecordingTransport({self.inner!r}, {self.path!r})"

    def start(self, on_message: Callable[[Dict[str, Any]], None], on_closed: Callable[[Any], None]) -> None:
        """Start the inner transport; each server message is recorded, then handed to ``on_message``."""

        def recorded(message: Dict[str, Any]) -> None:
            self._writer.write({"from": _SERVER, "message": message})
            on_message(message)

        self.inner.start(recorded, on_closed)

    def send(self, message: Dict[str, Any], *, timeout: Optional[float] = None) -> None:
        """Record ``message``, then send it through the inner transport."""
        self._writer.write({"from": _CLIENT, "message": message})
        self.inner.send(message, timeout=timeout)

    def set_protocol_version(self, version: str) -> None:
        """Pass the negotiated version on to the inner transport."""
        self.inner.set_protocol_version(version)

    def close(self) -> None:
        """Close the inner transport."""
        self.inner.close()


def _comparable(message: Dict[str, Any]) -> Dict[str, Any]:
    """Return ``message`` without its request id (and a progress token equal to it): rule 1."""
    data = dict(message)
    request_id = data.pop("id", None)
    params = data.get("params")
    if request_id is not None and isinstance(params, dict) and isinstance(params.get("_meta"), dict) \
            and params["_meta"].get("progressToken") == request_id:
        meta = dict(params["_meta"])
        del meta["progressToken"]
        data["params"] = {**params, "_meta": meta}
    return data


class ReplayTransport(Transport):
    """Plays a recorded MCP session back, with no server process and no socket.

    The cassette is read and checked when this is made. See the module
    docstring for the matching rule. It starts no thread: server messages
    reach the client on the thread of the ``send`` that releases them.

    Args:
        path: an MCP cassette, written by :class:`RecordingTransport`.

    Attributes:
        mismatches: every :class:`CassetteMismatchError` raised so far (a
            tool adapter may turn one into a tool error the model sees; a
            test fixture checks this list).

    Raises:
        CassetteError: no cassette there, a corrupt or cut line (named), a
            newer format version, or a provider cassette.

    .. versionadded:: 0.2
    """

    def __init__(self, path: Any) -> None:
        self.path = str(path)
        header, rows = read_cassette(self.path, "mcp")
        for row in rows:
            if row.data.get("from") not in (_CLIENT, _SERVER) or not isinstance(row.data.get("message"), dict):
                raise CassetteError(f"cassette {self.path}, line {row.line}: not an MCP message row; "
                                    "the file is corrupt, re-record it", path=self.path, line=row.line)
        #: The class name of the transport recorded.
        self.recorded_transport: Optional[str] = header.get("transport")
        self.mismatches: List[CassetteMismatchError] = []
        self._rows = rows
        self._used = [False] * len(rows)  # client rows used; server rows queued for delivery
        self._ids: Dict[Any, Any] = {}  # recorded request id -> live request id
        self._outbox: Deque[Dict[str, Any]] = collections.deque()
        self._lock = threading.Lock()
        self._delivering = threading.RLock()  # rule 3: one delivering thread at a time
        self._on_message: Optional[Callable[[Dict[str, Any]], None]] = None

    def __repr__(self) -> str:
        return f"ReplayTransport({self.path!r})"

    def start(self, on_message: Callable[[Dict[str, Any]], None], on_closed: Callable[[Any], None]) -> None:
        """Remember ``on_message`` and deliver the server rows that come before any client row."""
        with self._lock:
            self._on_message = on_message
            self._release()
        self._deliver()

    def send(self, message: Dict[str, Any], *, timeout: Optional[float] = None) -> None:
        """Match ``message`` with a recorded client row (rule 1), then deliver what it releases (rule 2).

        Raises:
            CassetteMismatchError: no unused client row equals ``message``.
        """
        sent = _comparable(message)
        with self._lock:
            waiting = [i for i, row in enumerate(self._rows) if row.data["from"] == _CLIENT and not self._used[i]]
            match = next((i for i in waiting if first_difference(_comparable(self._rows[i].data["message"]),
                                                                  sent) is None), None)
            if match is None:
                error = self._mismatch(sent, waiting[0] if waiting else None)
                self.mismatches.append(error)
                raise error
            self._used[match] = True
            recorded_id = self._rows[match].data["message"].get("id")
            if recorded_id is not None and "method" in message:
                self._ids[recorded_id] = message.get("id")
            self._release()
        self._deliver()

    def _mismatch(self, sent: Dict[str, Any], index: Optional[int]) -> CassetteMismatchError:
        if index is None:
            return CassetteMismatchError(
                f"cassette {self.path}: the client sent {shown(sent)}, but every recorded client message was "
                "replayed already; re-record the cassette if the session changed", path=self.path, sent=sent)
        row = self._rows[index]
        json_path, recorded, value = first_difference(_comparable(row.data["message"]), sent) or ("$", None, None)
        return CassetteMismatchError(
            f"cassette {self.path}, line {row.line}: the client's message differs from the recorded one at "
            f"{json_path}: recorded {shown(recorded)}, sent {shown(value)}; re-record the cassette if the "
            "change is intended", path=self.path, line=row.line, json_path=json_path, recorded=recorded, sent=value)

    def _release(self) -> None:
        """Queue the server rows rule 2 releases, in recorded order; under ``_lock``."""
        blocked = False  # an unused client row was passed: later notifications and requests wait
        for index, row in enumerate(self._rows):
            message = row.data["message"]
            if row.data["from"] == _CLIENT:
                blocked = blocked or not self._used[index]
                continue
            if self._used[index]:
                continue
            response = "method" not in message
            if (response and message.get("id") not in self._ids) or (not response and blocked):
                continue
            self._used[index] = True
            message = copy.deepcopy(message)
            if response:
                message["id"] = self._ids[message["id"]]
            self._outbox.append(message)

    def _deliver(self) -> None:
        with self._delivering:
            while True:
                with self._lock:
                    if not self._outbox or self._on_message is None:
                        return
                    message = self._outbox.popleft()
                    on_message = self._on_message
                on_message(message)

    def close(self) -> None:
        """Stop delivering; idempotent."""
        with self._lock:
            self._on_message = None
            self._outbox.clear()
