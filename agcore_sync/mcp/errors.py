"""Errors of the MCP package.

Every MCP error is a :class:`~agcore_sync.tools.error.ToolError`: a server's
error answer to a tool call reaches the model like any tool failure, and code
catching ``ToolError`` around a registry catches MCP failures too. The classes
are therefore defined with the tool layer's tree in :mod:`agcore_sync.tools.error`
(which sits below this package and cannot import it); this module is where the
MCP package and its users import them from.

Tree (under :class:`~agcore_sync.tools.error.ToolError`), with the class
default of ``recoverable``::

    McpError                   True   a JSON-RPC error answer (code, data)
    +-- McpNotInitializedError False  used before connect()
    +-- McpTimeoutError        False  no answer within the timeout
    +-- McpConnectionError     False  the server is gone (exit_code, stderr_tail)
    +-- McpAuthError           False  OAuth for an HTTP server failed or was refused (reason)

.. versionadded:: 0.1.0
"""

from __future__ import annotations

from agcore_sync.tools.error import (
    McpAuthError,
    McpConnectionError,
    McpError,
    McpNotInitializedError,
    McpTimeoutError,
)

__all__ = ["McpError", "McpNotInitializedError", "McpTimeoutError", "McpConnectionError", "McpAuthError"]
