"""RestartPolicy: how :class:`~agcore_sync.mcp.client.session.McpClient` brings a crashed server back.

The policy is a value; the client applies it. After the server's process
exits without ``close()``, every call in flight fails at once with
:class:`~agcore_sync.tools.error.McpConnectionError`, and the client starts
the server again after :meth:`RestartPolicy.backoff` seconds, runs the
handshake again and drops its tools cache; calls made meanwhile wait for the
new process (within their own timeout). Restarts are counted from the last
successful call: after ``max_restarts`` restarts with no call answered in
between (failed restarts and servers that crash again on their first call
alike), the client gives up and every call fails at once.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import math
from typing import Any

import attrs

__all__ = ["RestartPolicy"]

# Past this exponent 2.0 ** k no longer fits a float (** raises OverflowError);
# any realistic max_backoff is reached long before.
_MAX_EXPONENT = 1000


def _finite_non_negative(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"RestartPolicy.{attribute.name} must be a finite number >= 0, got {value!r}")


def _count(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"RestartPolicy.{attribute.name} must be an int >= 0, got {value!r}")


@attrs.frozen
class RestartPolicy:
    """When and how often an MCP client restarts a server that went away.

    Give one to ``McpClient(..., restart=RestartPolicy())``. Only transports
    that can start again support it (:class:`StdioTransport`; an
    ``HttpTransport`` cannot start a server, so the client refuses the
    combination).

    Args:
        max_restarts: restarts allowed with no successful call in between; the
            next loss after that is final. 0 never restarts.
        initial_backoff: seconds before the first restart after a successful
            call.
        max_backoff: cap of the doubling backoff.

    Raises:
        ValueError: a negative or non-finite value.

    .. versionadded:: 0.1.0
    """

    max_restarts: int = attrs.field(default=3, validator=_count)
    initial_backoff: float = attrs.field(default=0.5, validator=_finite_non_negative)
    max_backoff: float = attrs.field(default=10.0, validator=_finite_non_negative)

    def backoff(self, attempt: int) -> float:
        """Return the seconds to wait before restart ``attempt`` (0 after a successful call).

        ``initial_backoff * 2 ** attempt``, capped at ``max_backoff``.
        """
        return min(self.max_backoff, self.initial_backoff * 2.0 ** min(max(attempt, 0), _MAX_EXPONENT))
