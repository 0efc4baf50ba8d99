"""RecordingProvider and ReplayProvider: provider exchanges on a cassette.

:class:`RecordingProvider` wraps a real provider and appends each exchange
to a JSONL cassette (see :mod:`agcore_sync.testing._cassette` for the
layout); :class:`ReplayProvider` answers from that cassette, streamed or
not, without a socket. The row of an exchange is the request in the
library's neutral form (``MessageRequest.to_dict()``), then the response
(``chat``) or the stream's events in order (``chat_stream``), then the
error if it failed. Request headers are not recorded at all: what a
provider sends on the wire (its key, an ``Authorization`` header, OAuth
tokens) never reaches a cassette.

Matching a request on replay (one rule): the request is compared with the
first exchange not yet replayed; if they differ, with the later ones (for
requests that several threads send in another order than when
recording); the first equal one answers, and is used up. None equal raises
:class:`~agcore_sync.testing.CassetteMismatchError` naming the first
differing JSON path against the first exchange not yet replayed.

.. versionadded:: 0.2
"""

from __future__ import annotations

import json
import threading
from typing import Any, Dict, Iterator, List, Optional, Tuple

import attrs

from agcore_sync import _check
from agcore_sync.llm import errors as llm_errors
from agcore_sync.llm.cost import cost_usd
from agcore_sync.llm.events import MessageComplete, StreamEvent
from agcore_sync.llm.mock import events_for
from agcore_sync.llm.provider import LlmProvider
from agcore_sync.llm.types import MessageRequest, MessageResponse
from agcore_sync.testing._cassette import CassetteWriter, Row, read_cassette
from agcore_sync.testing._diff import first_difference, shown
from agcore_sync.testing.errors import CassetteError, CassetteMismatchError

__all__ = ["RecordingProvider", "ReplayProvider"]

#: The LLM errors a cassette can hold, by class name (an explicit registry:
#: no class is ever imported by a name read from a file).
_ERRORS: Dict[str, type] = {cls.__name__: cls for cls in (
    llm_errors.LlmError, llm_errors.ProviderError, llm_errors.AuthenticationError, llm_errors.RateLimitError,
    llm_errors.ServerError, llm_errors.LlmTimeoutError, llm_errors.LlmConnectionError,
    llm_errors.ResponseParseError, llm_errors.OutputRefusedError, llm_errors.OutputValidationError,
)}


def _neutral(request: MessageRequest) -> Dict[str, Any]:
    """Return the request as the cassette holds it: its ``to_dict()`` through JSON (tuples become lists)."""
    return json.loads(json.dumps(request.to_dict()))


def _error_row(exc: llm_errors.LlmError) -> Dict[str, Any]:
    # The message is already masked by the provider; the body is left out.
    return {"class": type(exc).__name__, "message": exc.message, "status_code": exc.status_code,
            "retryable": exc.retryable, "retry_after": exc.retry_after}


def _error_from(row: Dict[str, Any]) -> llm_errors.LlmError:
    cls = _ERRORS.get(row.get("class", ""), llm_errors.LlmError)
    return cls(str(row.get("message", "")), status_code=row.get("status_code"), retryable=row.get("retryable"),
               retry_after=row.get("retry_after"))


@attrs.frozen(kw_only=True)
class _Exchange:
    """One recorded exchange, built when the cassette is read."""

    line: int
    request: Dict[str, Any]
    response: Optional[MessageResponse]
    events: Tuple[StreamEvent, ...]
    error: Optional[Dict[str, Any]]
    closed: bool


class RecordingProvider(LlmProvider):
    """Wraps a provider and appends each exchange to a cassette.

    The cassette is checked when this is made: a path that cannot be
    written raises here, before any request is sent. An existing cassette
    recorded from the same provider class gets the new exchanges appended.
    A ``chat`` exchange is written when its response (or error) arrives; a
    stream's when it ends, fails (its events so far, then the error) or is
    closed early by the caller (its events so far, marked ``"closed"``).
    Errors other than :class:`~agcore_sync.LlmError` (a bug, not an answer)
    are raised and leave no row.

    Args:
        inner: the provider that answers.
        path: the cassette file (``.jsonl``).

    Raises:
        TypeError: ``inner`` is not an :class:`~agcore_sync.LlmProvider`.
        CassetteError: the path cannot be written, or holds a cassette of
            another provider class.

    Example::

        provider = RecordingProvider(OpenAIProvider(model="gpt-4o-mini"), "tests/cassettes/turn.jsonl")

    .. versionadded:: 0.2
    """

    def __init__(self, inner: LlmProvider, path: Any) -> None:
        _check.instance("RecordingProvider", "inner", inner, LlmProvider, "an LlmProvider such as OpenAIProvider(...)")
        self.inner = inner
        self.model = inner.model
        #: The cassette file.
        self.path = str(path)
        header = {"kind": "llm", "provider": type(inner).__name__, "model": inner.model}
        self._writer = CassetteWriter(self.path, header, same=("provider",))

    def __repr__(self) -> str:
        return f"RecordingProvider({self.inner!r}, {self.path!r})"

    def chat(self, request: MessageRequest) -> MessageResponse:
        """Call ``inner.chat`` and record the exchange (a failure too)."""
        row: Dict[str, Any] = {"request": _neutral(request)}
        try:
            response = self.inner.chat(request)
        except llm_errors.LlmError as exc:
            self._writer.write({**row, "error": _error_row(exc)})
            raise
        self._writer.write({**row, "response": response.to_dict()})
        return response

    def chat_stream(self, request: MessageRequest) -> Iterator[StreamEvent]:
        """Stream from ``inner``, passing each event on as it comes; record the exchange at the end."""
        return self._stream(request)

    def _stream(self, request: MessageRequest) -> Iterator[StreamEvent]:
        row: Dict[str, Any] = {"request": _neutral(request)}
        events: List[Dict[str, Any]] = []
        stream = self.inner.chat_stream(request)
        try:
            for event in stream:
                events.append(event.to_dict())
                yield event
        except llm_errors.LlmError as exc:
            self._writer.write({**row, "events": events, "error": _error_row(exc)})
            raise
        except GeneratorExit:  # the caller closed the stream early
            self._writer.write({**row, "events": events, "closed": True})
            raise
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()
        self._writer.write({**row, "events": events})

    def close(self) -> None:
        """Close the inner provider (the cassette holds no open file)."""
        self.inner.close()


class ReplayProvider(LlmProvider):
    """Answers from a cassette, streamed or not, opening no socket.

    The whole cassette is read and checked when this is made. A streamed
    exchange replays its events; ``chat`` of one returns the response of
    its ``MessageComplete``; a ``chat`` exchange streamed is sent as the
    events :func:`~agcore_sync.llm.mock.events_for` makes of it. A recorded
    failure is raised again (same class, message, status, ``retryable``,
    ``retry_after``), after the events that came before it.

    Args:
        path: the cassette file.

    Attributes:
        model: the model the cassette was recorded with.
        recorded_provider: the class name of the provider recorded.
        mismatches: every :class:`CassetteMismatchError` raised so far (a
            test fixture checks it, in case the code under test swallowed one).

    Raises:
        CassetteError: no cassette there, a corrupt or cut line (its number
            named), a newer format version, or an MCP cassette.

    .. versionadded:: 0.2
    """

    def __init__(self, path: Any) -> None:
        self.path = str(path)
        header, rows = read_cassette(self.path, "llm")
        self.model: Optional[str] = header.get("model")
        self.recorded_provider: Optional[str] = header.get("provider")
        self.mismatches: List[CassetteMismatchError] = []
        self._exchanges = [self._exchange(row) for row in rows]
        self._used = [False] * len(rows)
        self._lock = threading.Lock()

    def _exchange(self, row: Row) -> _Exchange:
        """Build one exchange, so that a row that is JSON but not an exchange fails here, naming its line."""
        data = row.data
        try:
            if not isinstance(data.get("request"), dict):
                raise ValueError("no request")
            response = MessageResponse.from_dict(data["response"]) if "response" in data else None
            events = tuple(StreamEvent.from_dict(item) for item in data.get("events") or ())
            error = data.get("error")
            if error is not None and not isinstance(error, dict):
                raise ValueError("an error that is not an object")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CassetteError(f"cassette {self.path}, line {row.line}: not a provider exchange ({exc!r}); "
                                "the file is corrupt, re-record it", path=self.path, line=row.line) from None
        return _Exchange(line=row.line, request=data["request"], response=response, events=events, error=error,
                         closed=bool(data.get("closed")))

    def __repr__(self) -> str:
        return f"ReplayProvider({self.path!r}, remaining={self.remaining})"

    @property
    def remaining(self) -> int:
        """How many recorded exchanges have not been replayed."""
        with self._lock:
            return self._used.count(False)

    def _take(self, request: MessageRequest) -> _Exchange:
        sent = _neutral(request)
        with self._lock:
            waiting = [i for i, used in enumerate(self._used) if not used]
            for index in waiting:
                if first_difference(self._exchanges[index].request, sent) is None:
                    self._used[index] = True
                    return self._exchanges[index]
            error = self._mismatch(sent, self._exchanges[waiting[0]] if waiting else None)
            self.mismatches.append(error)
        raise error

    def _mismatch(self, sent: Dict[str, Any], row: Optional[_Exchange]) -> CassetteMismatchError:
        if row is None:
            return CassetteMismatchError(
                f"cassette {self.path}: the code sent a request, but all {len(self._exchanges)} recorded exchanges "
                "were replayed already; re-record the cassette if the code now makes more requests",
                path=self.path, json_path="$", recorded=None, sent=sent)
        json_path, recorded, value = first_difference(row.request, sent) or ("$", None, None)
        return CassetteMismatchError(
            f"cassette {self.path}, line {row.line}: the request differs from the recorded one at {json_path}: "
            f"recorded {shown(recorded)}, sent {shown(value)}; re-record the cassette if the change is intended",
            path=self.path, line=row.line, json_path=json_path, recorded=recorded, sent=value)

    def chat(self, request: MessageRequest) -> MessageResponse:
        """Return the recorded response of ``request`` (or raise its recorded error)."""
        exchange = self._take(request)
        if exchange.response is not None:
            return exchange.response
        for event in exchange.events:
            if isinstance(event, MessageComplete):
                return event.full_response
        raise self._ending(exchange)

    def chat_stream(self, request: MessageRequest) -> Iterator[StreamEvent]:
        """Yield the recorded events of ``request`` (then raise its recorded error, if any)."""
        return self._stream(request)

    def _stream(self, request: MessageRequest) -> Iterator[StreamEvent]:
        exchange = self._take(request)
        if exchange.response is not None:
            response = exchange.response
            yield from events_for(response, cost_usd(response.usage, response.model, None))
            return
        yield from exchange.events  # frozen values: the same objects may be yielded again
        if exchange.error is not None or exchange.closed:
            raise self._ending(exchange)

    def _ending(self, exchange: _Exchange) -> BaseException:
        if exchange.error is not None:
            return _error_from(exchange.error)
        if exchange.closed:
            return CassetteError(f"cassette {self.path}, line {exchange.line}: this exchange was recorded from a "
                                 f"stream the caller closed after {len(exchange.events)} events; nothing more was "
                                 "recorded", path=self.path, line=exchange.line)
        return CassetteError(f"cassette {self.path}, line {exchange.line}: the recorded stream ended without a "
                             "MessageComplete, so chat() has no response to return", path=self.path,
                             line=exchange.line)
