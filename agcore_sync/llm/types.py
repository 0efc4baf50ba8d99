"""Provider-neutral LLM values: messages, content blocks, requests, responses.

Every class here is a frozen attrs value; sequences are stored as tuples.
Providers translate these to and from their wire formats at the edge
(``openai.py``, ``anthropic.py``). Every class has ``to_dict()`` and
``from_dict()`` whose output survives ``json.dumps`` / ``json.loads``.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any, ClassVar, Dict, Optional, Tuple, Union

import attrs

from agcore_sync._values import as_tuple, value_methods
from agcore_sync.llm.content import ContentBlock

if TYPE_CHECKING:
    from agcore_sync.llm._output_schema import OutputSchema

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
@value_methods
class TextBlock(ContentBlock):
    """Plain text."""

    type: ClassVar[str] = "text"
    text: str


@attrs.frozen
@value_methods
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
@value_methods
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
@value_methods
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
@value_methods
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
@value_methods
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
@value_methods
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


#: The smallest Anthropic extended-thinking budget (the API refuses less).
MIN_THINKING_BUDGET = 1024


def check_thinking(thinking: Any, max_tokens: Optional[int]) -> None:
    """Refuse a ``thinking`` value the APIs would refuse, before any request.

    Raises:
        ValueError: a budget under 1024, or not below ``max_tokens``; a str other than ``"adaptive"``.
        TypeError: neither None, an int nor a str.
    """
    if thinking is None or thinking == "adaptive":
        return
    if isinstance(thinking, str):
        raise ValueError(f"thinking must be None, a token budget (int) or 'adaptive', got {thinking!r}")
    if isinstance(thinking, bool) or not isinstance(thinking, int):
        raise TypeError(f"thinking must be None, a token budget (int) or 'adaptive', got {type(thinking).__name__}")
    if thinking < MIN_THINKING_BUDGET:
        raise ValueError(f"thinking budget must be at least {MIN_THINKING_BUDGET} tokens, got {thinking}")
    if max_tokens is not None and thinking >= max_tokens:
        raise ValueError(f"thinking budget ({thinking}) must be below max_tokens ({max_tokens})")


def _check_extra_body(_instance: Any, _attribute: Any, value: Any) -> None:
    if value is not None and not isinstance(value, dict):
        raise TypeError(f"extra_body must be a dict or None, got {type(value).__name__}")


def _check_output(_instance: Any, _attribute: Any, value: Any) -> None:
    if value is not None and type(value).__name__ != "OutputSchema":
        raise TypeError(f"MessageRequest.output must be an OutputSchema or None, got {type(value).__name__}")


@attrs.frozen
@value_methods
class MessageRequest:
    """One request to a provider.

    ``model=None`` means the provider's own ``model``. The request controls
    (keyword-only) carry :class:`~agcore_sync.loop.config.CycleConfig`'s
    fields of the same names; a provider that cannot honour one ignores it.

    Args:
        model: the model name, or None.
        messages: the conversation.
        system: the system prompt.
        tools: the tools offered.
        tool_choice: ``"auto"``, ``"none"``, ``"required"`` or ``ToolChoice.tool(name)``.
        max_tokens: the completion limit.
        temperature: sampling temperature.
        stop: stop sequences.
        output: the native structured-output schema (an
            :class:`~agcore_sync.llm.output.OutputSchema`): OpenAI
            ``response_format``, Anthropic ``output_config.format``. The
            loops set it for ``output_mode="native"`` only.
        prompt_cache: Anthropic cache breakpoints on the tools, the system
            prompt and the last messages.
        thinking: Anthropic extended thinking, a token budget (at least
            1024, below ``max_tokens``) or ``"adaptive"``.
        reasoning_effort: OpenAI ``reasoning_effort``, Anthropic
            ``output_config.effort`` (any value the API accepts).
        extra_body: merged last into the request body, replacing top-level keys.

    Raises:
        ValueError: a thinking budget under 1024 or not below ``max_tokens``.

    .. versionchanged:: 0.1.0
       ``output``, ``prompt_cache``, ``thinking``, ``reasoning_effort`` and ``extra_body``.
    """

    model: Optional[str]
    messages: Tuple[Message, ...] = attrs.field(converter=as_tuple)
    system: Optional[str] = None
    tools: Tuple[ToolDef, ...] = attrs.field(converter=as_tuple, default=())
    tool_choice: Union[str, ToolChoice] = attrs.field(default="auto", validator=_check_tool_choice)
    max_tokens: Optional[int] = None
    temperature: Optional[float] = None
    stop: Optional[Tuple[str, ...]] = attrs.field(converter=_optional_tuple, default=None)
    output: Optional[OutputSchema] = attrs.field(default=None, kw_only=True, validator=_check_output)
    prompt_cache: bool = attrs.field(default=False, kw_only=True, converter=bool)
    thinking: Union[None, int, str] = attrs.field(default=None, kw_only=True)
    reasoning_effort: Optional[str] = attrs.field(default=None, kw_only=True)
    extra_body: Optional[Dict[str, Any]] = attrs.field(default=None, kw_only=True, validator=_check_extra_body)

    def __attrs_post_init__(self) -> None:
        check_thinking(self.thinking, self.max_tokens)

    def to_dict(self) -> Dict[str, Any]:
        """Return a JSON-ready dict.

        The request controls appear only when set (``output`` as its name
        and JSON Schema), so a request without them has the keys it always had.
        """
        choice = self.tool_choice.to_dict() if isinstance(self.tool_choice, ToolChoice) else self.tool_choice
        data: Dict[str, Any] = {
            "model": self.model,
            "messages": [m.to_dict() for m in self.messages],
            "system": self.system,
            "tools": [t.to_dict() for t in self.tools],
            "tool_choice": choice,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "stop": list(self.stop) if self.stop is not None else None,
        }
        if self.output is not None:
            data["output"] = {"name": self.output.name, "schema": self.output.json_schema}
        if self.prompt_cache:
            data["prompt_cache"] = True
        for key in ("thinking", "reasoning_effort", "extra_body"):
            if getattr(self, key) is not None:
                data[key] = getattr(self, key)
        return data

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> MessageRequest:
        """Build a request from ``to_dict()`` output (``output`` comes back as a dict schema)."""
        choice = data.get("tool_choice", "auto")
        if isinstance(choice, dict):
            choice = ToolChoice.from_dict(choice)
        output = data.get("output")
        if output is not None:
            from agcore_sync.llm._output_schema import OutputSchema  # loaded on first use: jsonschema and friends

            output = OutputSchema(output["schema"], name=output.get("name"))
        return cls(
            model=data.get("model"),
            messages=tuple(Message.from_dict(m) for m in data["messages"]),
            system=data.get("system"),
            tools=tuple(ToolDef.from_dict(t) for t in data.get("tools", ())),
            tool_choice=choice,
            max_tokens=data.get("max_tokens"),
            temperature=data.get("temperature"),
            stop=data.get("stop"),
            output=output,
            prompt_cache=data.get("prompt_cache", False),
            thinking=data.get("thinking"),
            reasoning_effort=data.get("reasoning_effort"),
            extra_body=data.get("extra_body"),
        )


@attrs.frozen
@value_methods
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
@value_methods
class MessageResponse:
    """A provider's complete answer; ``id`` is the provider's own response id.

    ``output`` (keyword-only) is the validated, converted answer when the
    call asked for structured output (``output=``), else None. ``to_dict``
    writes it as plain JSON (:meth:`~agcore_sync.llm.output.OutputSchema.dump`),
    and ``from_dict`` gives that JSON back (the class is not recorded).

    .. versionchanged:: 0.1.0
       ``output``.
    """

    id: str
    model: str
    message: Message
    stop_reason: StopReason = attrs.field(converter=StopReason)
    usage: Usage = attrs.field(factory=Usage)
    output: Any = attrs.field(default=None, kw_only=True)

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
            **({} if self.output is None else {"output": _json_output(self.output)}),
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
            output=data.get("output"),
        )


def _json_output(value: Any) -> Any:
    from agcore_sync.llm._output_schema import dump_json  # loaded on first use

    return dump_json(value)
