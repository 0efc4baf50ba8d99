"""Errors of the tool layer.

Tree (under :class:`~agcore_sync.errors.AgcoreError`), with the class
default of ``recoverable``::

    ToolError                      True
    +-- ToolNotFoundError          True   the model named a tool we do not have
    +-- ToolExecutionError         True   the tool raised (cause chained)
    +-- InvalidArgumentsError      True   arguments fail the tool's JSON Schema
    +-- PermissionDeniedError      True   the permission checker said no
    +-- ToolTimeoutError           False  the tool ran past its timeout
    +-- McpError                   True   a JSON-RPC error answer (code, data)
        +-- McpNotInitializedError False  used before connect()
        +-- McpTimeoutError        False  no answer within the timeout
        +-- McpConnectionError     False  the server is gone (exit_code, stderr_tail)
        +-- McpAuthError           False  OAuth for an HTTP server failed or was refused (reason)

Recoverable errors go back to the model as ``is_error`` tool results; the
loops raise the others. Loops read the flag, never the class.
"""

from __future__ import annotations

from typing import Any, ClassVar, Optional

from agcore_sync.errors import AgcoreError

__all__ = [
    "ToolError",
    "ToolNotFoundError",
    "ToolExecutionError",
    "InvalidArgumentsError",
    "PermissionDeniedError",
    "ToolTimeoutError",
    "McpError",
    "McpNotInitializedError",
    "McpTimeoutError",
    "McpConnectionError",
    "McpAuthError",
]


class ToolError(AgcoreError):
    """A tool call failed.

    Args:
        message: what failed and what to do next.
        tool_name: the tool concerned, if known.
        recoverable: whether the model may be told and carry on; None takes
            the class default (:attr:`default_recoverable`).
    """

    #: The ``recoverable`` value used when the constructor gets None.
    default_recoverable: ClassVar[bool] = True

    def __init__(self, message: str, tool_name: Optional[str] = None, recoverable: Optional[bool] = None) -> None:
        super().__init__(message)
        self.message = message
        self.tool_name = tool_name
        self.recoverable = self.default_recoverable if recoverable is None else recoverable

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, tool_name={self.tool_name!r})"


class ToolNotFoundError(ToolError):
    """No tool of that name is registered."""


class ToolExecutionError(ToolError):
    """The tool raised; the original exception is ``__cause__``."""


class InvalidArgumentsError(ToolError):
    """The arguments are not a JSON object or fail the tool's schema."""


class PermissionDeniedError(ToolError):
    """The permission checker (or a PRE_TOOL_USE hook) refused the call."""


class ToolTimeoutError(ToolError):
    """The tool did not finish within its timeout."""

    default_recoverable = False


class McpError(ToolError):
    """An MCP server answered with a JSON-RPC error, or the protocol failed.

    Args:
        code: the JSON-RPC error code, if any.
        data: the error's ``data`` member, if any.
    """

    def __init__(
        self,
        message: str,
        tool_name: Optional[str] = None,
        recoverable: Optional[bool] = None,
        *,
        code: Optional[int] = None,
        data: Any = None,
    ) -> None:
        super().__init__(message, tool_name, recoverable)
        self.code = code
        self.data = data


class McpNotInitializedError(McpError):
    """The client was used before ``connect()`` (or after ``close()``)."""

    default_recoverable = False


class McpTimeoutError(McpError):
    """The server did not answer in time; ``notifications/cancelled`` was sent."""

    default_recoverable = False


class McpConnectionError(McpError):
    """The server process exited or the HTTP session was lost.

    Attributes:
        exit_code: the process's return code (None over HTTP or if unknown).
        stderr_tail: the last lines (at most 20) the server wrote to stderr.
    """

    default_recoverable = False

    def __init__(
        self,
        message: str,
        tool_name: Optional[str] = None,
        recoverable: Optional[bool] = None,
        *,
        code: Optional[int] = None,
        data: Any = None,
        exit_code: Optional[int] = None,
        stderr_tail: str = "",
    ) -> None:
        super().__init__(message, tool_name, recoverable, code=code, data=data)
        self.exit_code = exit_code
        self.stderr_tail = stderr_tail


class McpAuthError(McpError):
    """OAuth for an MCP server over HTTP failed, or the client refused what it was sent.

    Raised by :class:`~agcore_sync.mcp.auth.McpOAuth` (through
    :class:`~agcore_sync.mcp.transports.http.HttpTransport`) when discovery,
    registration, the authorization redirect or the token endpoint fails,
    and when a check refuses a document: an issuer or a ``resource`` that
    does not match, a redirect with a wrong ``state``, a token response
    without ``access_token``. Nothing is stored when it is raised. The
    message never carries a token, a secret or an authorization code.

    Attributes:
        reason: a short machine-readable tag, e.g. ``"issuer_mismatch"``,
            ``"resource_mismatch"``, ``"state_mismatch"``, ``"token_response"``,
            ``"insufficient_scope"``, or the OAuth ``error`` code the
            authorization server answered.
        status_code: the HTTP status involved, if any.

    .. versionadded:: 0.2
    """

    default_recoverable = False

    def __init__(
        self,
        message: str,
        tool_name: Optional[str] = None,
        recoverable: Optional[bool] = None,
        *,
        code: Optional[int] = None,
        data: Any = None,
        reason: str = "auth_failed",
        status_code: Optional[int] = None,
    ) -> None:
        super().__init__(message, tool_name, recoverable, code=code, data=data)
        self.reason = reason
        self.status_code = status_code

