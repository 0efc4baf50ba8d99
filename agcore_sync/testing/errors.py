"""The errors of the testing kit.

Tree (under :class:`~agcore_sync.errors.AgcoreError`)::

    CassetteError              a cassette that cannot be read, written or found
    +-- CassetteMismatchError  the code sent what the cassette did not record

None of them is an :class:`~agcore_sync.LlmError` or a
:class:`~agcore_sync.ToolError`: a drifting test must fail, so no
``except LlmError`` retry or fallback path and no "give the error to the
model" path takes them for a provider's or a tool's bad luck. Their
``retryable`` flag is False, for code that reads the flag.

.. versionadded:: 0.2
"""

from __future__ import annotations

from typing import Any, ClassVar, Optional

from agcore_sync.errors import AgcoreError

__all__ = ["CassetteError", "CassetteMismatchError"]

#: How many characters of a value a mismatch message shows.
SHOWN_CHARS = 200


class CassetteError(AgcoreError):
    """A cassette that cannot be used: missing, unreadable, corrupt, too new, or not writable.

    Args:
        message: what failed, on which file (and line), and what to do next.
        path: the cassette's path, as given.
        line: the 1-based line the problem is on, when it is on one.

    .. versionadded:: 0.2
    """

    #: Never retried: replaying again gives the same answer.
    retryable: ClassVar[bool] = False

    def __init__(self, message: str, *, path: Optional[str] = None, line: Optional[int] = None) -> None:
        super().__init__(message)
        self.message = message
        #: The cassette's path (None when no file is involved).
        self.path = path
        #: The 1-based line number the problem is on, or None.
        self.line = line

    def __str__(self) -> str:
        return self.message


class CassetteMismatchError(CassetteError):
    """The code sent a request (or an MCP message) that the cassette did not record.

    The message names the cassette, the recorded exchange's line, the first
    JSON path where the two differ (``$`` is the whole request, e.g.
    ``$.messages[1].content[0].text``) and both values there. Re-record the
    cassette if the change is intended.

    Args:
        message: the full explanation.
        path: the cassette's path.
        line: the line of the recorded exchange compared against (None when
            the cassette had no exchange left).
        json_path: the first differing JSON path.
        recorded: the recorded value at ``json_path``.
        sent: the value the code sent at ``json_path``.

    .. versionadded:: 0.2
    """

    def __init__(self, message: str, *, path: Optional[str] = None, line: Optional[int] = None,
                 json_path: str = "$", recorded: Any = None, sent: Any = None) -> None:
        super().__init__(message, path=path, line=line)
        #: The first JSON path where the sent request differs from the recorded one.
        self.json_path = json_path
        #: The recorded value at :attr:`json_path`.
        self.recorded = recorded
        #: The sent value at :attr:`json_path`.
        self.sent = sent
