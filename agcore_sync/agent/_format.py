"""The saved-session document: its format versions and the check ``from_dict`` makes first."""

from __future__ import annotations

from typing import Any, Mapping

from agcore_sync._http import peer_json
from agcore_sync.agent.errors import AgentError

__all__ = ["FORMAT_VERSION", "check_document"]

#: The ``format_version`` written by ``AgentSession.to_dict`` (2 added
#: ``paused_turn``; version 1 still loads).
FORMAT_VERSION = 2
_READABLE_VERSIONS = (1, 2)


def check_document(data: Any) -> Mapping[str, Any]:
    """Return ``data`` if it is a saved session this version reads.

    Raises:
        AgentError: not a saved session, one of a newer format, or one
            nested deeper than :data:`~agcore_sync._http.peer_json.DOCUMENT_MAX_DEPTH`.
    """
    if not isinstance(data, Mapping) or "format_version" not in data:
        kind = type(data).__name__ if not isinstance(data, Mapping) else "a dict without format_version"
        raise AgentError(f"AgentSession.from_dict: {kind} is not a saved session; pass what "
                         "session.to_dict() returned (after json.loads, if it was stored as JSON)")
    version = data["format_version"]
    if version not in _READABLE_VERSIONS:
        raise AgentError(f"cannot load a session of format_version {version!r}: this agcore_sync "
                         f"reads versions {_READABLE_VERSIONS}; upgrade agcore_sync to load it")
    try:
        peer_json.check_value(data, allow_constants=True, max_depth=peer_json.DOCUMENT_MAX_DEPTH)
    except peer_json.TooDeep as exc:
        raise AgentError(f"AgentSession.from_dict: the saved session is {exc}") from None
    return data
