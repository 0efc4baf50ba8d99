"""MCP prompts: what ``prompts/list`` and ``prompts/get`` return, as frozen values.

``prompts/get`` messages become :class:`~agcore_sync.llm.types.Message`
values ready for a provider (images as
:class:`~agcore_sync.llm.media.ImageBlock`; see
:mod:`agcore_sync.mcp.shared.content` for the other content types).

.. versionadded:: 0.1.0
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Tuple

import attrs

from agcore_sync.llm.types import Message
from agcore_sync.mcp.shared.content import mcp_message

__all__ = ["McpPrompt", "McpPromptArgument", "McpPromptResult"]


def _optional_str(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None


@attrs.frozen
class McpPromptArgument:
    """One argument a prompt takes.

    Attributes:
        name: the argument's name.
        description: what it is, if the server says.
        required: whether ``get_prompt`` must be given it.

    .. versionadded:: 0.1.0
    """

    name: str
    description: Optional[str] = None
    required: bool = False


@attrs.frozen
class McpPrompt:
    """One prompt template a server lists.

    Attributes:
        name: the prompt's name (what :meth:`McpClient.get_prompt` takes).
        description: what it is for, if the server says.
        arguments: the arguments it takes, in the server's order.

    .. versionadded:: 0.1.0
    """

    name: str
    description: Optional[str] = None
    arguments: Tuple[McpPromptArgument, ...] = attrs.field(converter=tuple, default=())

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> McpPrompt:
        """Build from one ``prompts/list`` entry."""
        arguments = data.get("arguments")
        return cls(
            str(data.get("name", "")),
            _optional_str(data.get("description")),
            tuple(
                McpPromptArgument(str(arg["name"]), _optional_str(arg.get("description")), bool(arg.get("required")))
                for arg in (arguments if isinstance(arguments, list) else ())
                if isinstance(arg, Mapping) and isinstance(arg.get("name"), str)
            ),
        )


@attrs.frozen
class McpPromptResult:
    """What ``prompts/get`` returned: the prompt filled in, as messages.

    Attributes:
        description: the server's description of the result, if any.
        messages: the messages, ready to send to a provider.

    .. versionadded:: 0.1.0
    """

    description: Optional[str]
    messages: Tuple[Message, ...] = attrs.field(converter=tuple)

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> McpPromptResult:
        """Build from a ``prompts/get`` result."""
        messages = data.get("messages")
        return cls(
            _optional_str(data.get("description")),
            tuple(mcp_message(m) for m in (messages if isinstance(messages, list) else ()) if isinstance(m, Mapping)),
        )
