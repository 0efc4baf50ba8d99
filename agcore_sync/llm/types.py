"""Provider-neutral LLM values: messages, content blocks, requests, responses.

Every class here is a frozen attrs value; sequences are stored as tuples.
Providers translate these to and from their wire formats at the edge
(``openai.py``, ``anthropic.py``). Every class has ``to_dict()`` and
``from_dict()`` whose output survives ``json.dumps`` / ``json.loads``.
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar, Dict, Optional, Tuple, Union

import attrs

from agcore_sync.llm import media  # noqa: F401 - defines, and so registers, the image and document blocks
from agcore_sync.llm.content import ContentBlock

__all__ = [
    "Role",
    "TextBlock",
    "ToolUseBlock",
    "ToolResultBlock",
    "ThinkingBlock",
    "Message",
    "ToolDef",
    "ToolChoice",
    "MessageRequest",
    "StopReason",
    "Usage",
    "MessageResponse",
]


class Role(str, enum.Enum):
    """Who wrote a message."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class StopReason(str, enum.Enum):
    """Why a provider stopped generating."""

    STOP = "stop"
    TOOL_USE = "tool_use"
    LENGTH = "length"
    CONTENT_FILTER = "content_filter"
    ERROR = "error"


@attrs.frozen
class TextBlock(ContentBlock):
    """Plain text."""

    type: ClassVar[str] = "text"
    text: str


@attrs.frozen
class ToolUseBlock(ContentBlock):
    """A tool call requested by the model.

    ``input`` is the parsed JSON arguments; arguments that were not valid
    JSON are kept as the raw string so the registry can refuse them.
    """

    type: ClassVar[str] = "tool_use"
    id: str
    name: str
    input: Union[Dict[str, Any], str] = attrs.field(factory=dict)


#: Block types a tool result may hold besides text.
_TOOL_RESULT_TAGS = ("text", "image")


def _tool_result_content(content: Any) -> Union[str, Tuple[ContentBlock, ...]]:
    if isinstance(content, str):
        return content
    if isinstance(content, ContentBlock):
        content = (content,)
    blocks = tuple(ContentBlock.from_dict(b) if isinstance(b, dict) else b for b in content)
    for block in blocks:
        if not isinstance(block, ContentBlock) or block.type not in _TOOL_RESULT_TAGS:
            raise TypeError(
                f"tool result content must be a str or TextBlock / ImageBlock blocks, got {type(block).__name__}"
            )
    return blocks


@attrs.frozen
class ToolResultBlock(ContentBlock):
    """The result of a tool call, sent back to the model.

    ``content`` is a str, or a tuple of :class:`TextBlock` and
    :class:`~agcore_sync.llm.media.ImageBlock` (a list is stored as a tuple).
    """

    type: ClassVar[str] = "tool_result"
    tool_use_id: str
    content: Union[str, Tuple[ContentBlock, ...]] = attrs.field(converter=_tool_result_content)
    is_error: bool = False

    @property
    def text(self) -> str:
        """The content as text: the str itself, or the text blocks joined with no separator."""
        if isinstance(self.content, str):
            return self.content
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    def to_dict(self) -> Dict[str, Any]:
        """Return a JSON-ready dict (block content as a list of block dicts)."""
        content = self.content if isinstance(self.content, str) else [b.to_dict() for b in self.content]
        return {"type": self.type, "tool_use_id": self.tool_use_id, "content": content, "is_error": self.is_error}


@attrs.frozen
class ThinkingBlock(ContentBlock):
    """Model reasoning; ``signature`` and ``redacted_data`` go back unchanged."""

    type: ClassVar[str] = "thinking"
    text: str
    signature: Optional[str] = None
    redacted_data: Optional[str] = None


def _to_blocks(content: Any) -> Tuple[ContentBlock, ...]:
    if isinstance(content, str):
        return (TextBlock(content),)
    blocks = tuple(content)
    for block in blocks:
        if not isinstance(block, ContentBlock):
            raise TypeError(f"message content must be content blocks, got {type(block).__name__}")
    return blocks


@attrs.frozen
class Message:
    """One message of a conversation.

    Args:
        role: a :class:`Role` or its string value.
        content: content blocks (a list is stored as a tuple; a str becomes
            one :class:`TextBlock`).
    """

    role: Role = attrs.field(converter=Role)
    content: Tuple[ContentBlock, ...] = attrs.field(converter=_to_blocks, factory=tuple)

    @classmethod
    def user(cls, text: str, *blocks: ContentBlock) -> Message:
        """Return a user message holding ``text``, then ``blocks`` (images, documents...).

        An empty ``text`` with blocks adds no text block (APIs refuse empty text).
        """
        head = (TextBlock(text),) if text or not blocks else ()
        return cls(Role.USER, (*head, *blocks))

    @classmethod
    def assistant(cls, text: str) -> Message:
        """Return an assistant message holding ``text``."""
        return cls(Role.ASSISTANT, (TextBlock(text),))

    @classmethod
    def tool_result(
        cls, tool_use_id: str, content: Union[str, Tuple[ContentBlock, ...]], is_error: bool = False
    ) -> Message:
        """Return a ``tool`` message answering the tool call ``tool_use_id`` (content: str or blocks)."""
        return cls(Role.TOOL, (ToolResultBlock(tool_use_id, content, is_error),))

    @property
    def text(self) -> str:
        """The text blocks joined with no separator."""
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def tool_uses(self) -> Tuple[ToolUseBlock, ...]:
        """The tool calls in this message, in order."""
        return tuple(b for b in self.content if isinstance(b, ToolUseBlock))

    def to_dict(self) -> Dict[str, Any]:
        """Return a JSON-ready dict."""
        return {"role": self.role.value, "content": [b.to_dict() for b in self.content]}

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> Message:
        """Build a message from ``to_dict()`` output."""
        return cls(data["role"], tuple(ContentBlock.from_dict(b) for b in data["content"]))


@attrs.frozen
class ToolDef:
    """A tool as the model sees it: name, description, JSON Schema."""

    name: str
    description: str
    parameters: Dict[str, Any] = attrs.field(factory=lambda: {"type": "object", "properties": {}})

    def to_dict(self) -> Dict[str, Any]:
        """Return a JSON-ready dict."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> ToolDef:
        """Build a tool definition from ``to_dict()`` output."""
        return cls(data["name"], data["description"], data["parameters"])


_TOOL_CHOICE_MODES = ("auto", "none", "required")


@attrs.frozen
class ToolChoice:
    """Forces the model to call one named tool: ``ToolChoice.tool("search")``.

    The other choices are the strings ``"auto"``, ``"none"`` and
    ``"required"``, used as they are.
    """

    name: str

    @classmethod
    def tool(cls, name: str) -> ToolChoice:
        """Return the choice that forces the tool ``name``."""
        return cls(name)

    def to_dict(self) -> Dict[str, Any]:
        """Return a JSON-ready dict."""
        return {"type": "tool", "name": self.name}

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> ToolChoice:
        """Build the choice from ``to_dict()`` output."""
        return cls(data["name"])


def _check_tool_choice(_instance: Any, _attribute: Any, value: Any) -> None:
    if not (isinstance(value, ToolChoice) or value in _TOOL_CHOICE_MODES):
        raise ValueError(f"tool_choice must be one of {_TOOL_CHOICE_MODES} or ToolChoice.tool(name), got {value!r}")


def _optional_tuple(value: Any) -> Optional[Tuple[str, ...]]:
    if value is None:
        return None
    if isinstance(value, str):
        return (value,)
    return tuple(value)


@attrs.frozen
class MessageRequest:
    """One request to a provider.

    ``model=None`` means the provider's own ``model``.
    """

    model: Optional[str]
    messages: Tuple[Message, ...] = attrs.field(converter=tuple)
    system: Optional[str] = None
    tools: Tuple[ToolDef, ...] = attrs.field(converter=tuple, default=())
    tool_choice: Union[str, ToolChoice] = attrs.field(default="auto", validator=_check_tool_choice)
    max_tokens: Optional[int] = None
    temperature: Optional[float] = None
    stop: Optional[Tuple[str, ...]] = attrs.field(converter=_optional_tuple, default=None)

    def to_dict(self) -> Dict[str, Any]:
        """Return a JSON-ready dict."""
        choice = self.tool_choice.to_dict() if isinstance(self.tool_choice, ToolChoice) else self.tool_choice
        return {
            "model": self.model,
            "messages": [m.to_dict() for m in self.messages],
            "system": self.system,
            "tools": [t.to_dict() for t in self.tools],
            "tool_choice": choice,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "stop": list(self.stop) if self.stop is not None else None,
        }

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> MessageRequest:
        """Build a request from ``to_dict()`` output."""
        choice = data.get("tool_choice", "auto")
        if isinstance(choice, dict):
            choice = ToolChoice.from_dict(choice)
        return cls(
            model=data.get("model"),
            messages=tuple(Message.from_dict(m) for m in data["messages"]),
            system=data.get("system"),
            tools=tuple(ToolDef.from_dict(t) for t in data.get("tools", ())),
            tool_choice=choice,
            max_tokens=data.get("max_tokens"),
            temperature=data.get("temperature"),
            stop=data.get("stop"),
        )


@attrs.frozen
class Usage:
    """Token counts of one or more responses; ``a + b`` adds them.

    ``prompt_tokens`` counts every input token, cached ones included;
    ``cache_read_tokens`` and ``cache_write_tokens`` are parts of it.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> Dict[str, Any]:
        """Return a JSON-ready dict."""
        return attrs.asdict(self)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> Usage:
        """Build usage from ``to_dict()`` output."""
        return cls(**data)


@attrs.frozen
class MessageResponse:
    """A provider's complete answer; ``id`` is the provider's own response id."""

    id: str
    model: str
    message: Message
    stop_reason: StopReason = attrs.field(converter=StopReason)
    usage: Usage = attrs.field(factory=Usage)

    @property
    def has_tool_calls(self) -> bool:
        """True if the message asks for at least one tool call."""
        return bool(self.message.tool_uses)

    def to_dict(self) -> Dict[str, Any]:
        """Return a JSON-ready dict."""
        return {
            "id": self.id,
            "model": self.model,
            "message": self.message.to_dict(),
            "stop_reason": self.stop_reason.value,
            "usage": self.usage.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> MessageResponse:
        """Build a response from ``to_dict()`` output."""
        return cls(
            data["id"],
            data["model"],
            Message.from_dict(data["message"]),
            data["stop_reason"],
            Usage.from_dict(data.get("usage", {})),
        )
