"""Tool results, prompt messages and resource contents in their MCP wire shape.

Structured output follows FastMCP's convention: a tool whose return
annotation is an object (a dict, TypedDict, dataclass, attrs or pydantic
class) declares that object's schema as ``outputSchema`` and sends the value
as ``structuredContent``; any other annotated return type is wrapped as
``{"result": value}``. ``content`` holds a str unchanged and any other value
as its JSON text. Pure: no I/O.
"""

from __future__ import annotations

import base64
import json
import typing
from typing import Any, Dict, List, Optional, Sequence, Tuple

import attrs

from agcore_sync.llm._schema_from_type import SchemaBuilder
from agcore_sync.llm.types import ContentBlock, Message, Role, TextBlock
from agcore_sync.tools.base import BaseTool
from agcore_sync.tools.result_json import _plain, result_text

__all__ = ["ToolResult", "OutputPlan", "output_plan", "call_result", "error_result", "prompt_messages",
           "resource_contents"]


@attrs.frozen(kw_only=True)
class ToolResult:
    """A tool's answer given in MCP's own terms, for content the library's blocks cannot say.

    Return it from a tool served by :class:`McpServer` to send audio, embedded
    resources or resource links, or to mark a result as an error yourself.

    Attributes:
        content: MCP content blocks as dicts (``{"type": "audio", "data":
            ..., "mimeType": ...}``, ``{"type": "resource", "resource": {...}}``, ...).
        structured_content: the ``structuredContent`` object, if any.
        is_error: send the result with ``isError: true``.

    .. versionadded:: 0.1.0
    """

    content: Tuple[Dict[str, Any], ...] = attrs.field(converter=tuple, factory=tuple)
    structured_content: Optional[Dict[str, Any]] = None
    is_error: bool = False


@attrs.frozen
class OutputPlan:
    """How a tool's return value becomes structured output: its schema, and whether it is wrapped."""

    schema: Optional[Dict[str, Any]]
    wrap: bool


_NO_OUTPUT = OutputPlan(None, False)


def output_plan(tool: BaseTool) -> OutputPlan:
    """Read the return annotation of a function tool (FastMCP's convention; see the module docstring)."""
    func = getattr(tool, "func", None)
    if func is None:
        return _NO_OUTPUT
    try:
        hints = typing.get_type_hints(func, include_extras=True)
    except Exception:  # noqa: BLE001 - an unresolved annotation only loses the output schema
        return _NO_OUTPUT
    if "return" not in hints:
        return _NO_OUTPUT
    hint = hints["return"]
    if hint is type(None) or hint is Any or _is_result(hint):
        return _NO_OUTPUT
    try:
        schema, _ = SchemaBuilder(owner="McpServer", recursive=True).root(hint, f"the return type of {tool.name}")
    except TypeError:
        return _NO_OUTPUT
    origin = typing.get_origin(hint) or hint
    is_object = schema.get("type") == "object" and (origin is dict or isinstance(origin, type))
    if is_object:
        return OutputPlan(schema, False)
    return OutputPlan({"type": "object", "properties": {"result": schema}, "required": ["result"]}, True)


def _is_result(hint: Any) -> bool:
    return isinstance(hint, type) and (issubclass(hint, (ToolResult, ContentBlock)))


def call_result(output: Any, plan: OutputPlan) -> Dict[str, Any]:
    """Return the ``tools/call`` result for a tool's ``output``."""
    if isinstance(output, ToolResult):
        result: Dict[str, Any] = {"content": list(output.content), "isError": output.is_error}
        if output.structured_content is not None:
            result["structuredContent"] = output.structured_content
        return result
    blocks = _blocks(output)
    if blocks is not None:
        return {"content": blocks, "isError": False}
    text = output if isinstance(output, str) else result_text(output)
    result = {"content": [{"type": "text", "text": text}], "isError": False}
    if plan.schema is not None:
        value = _plain(output)
        result["structuredContent"] = {"result": value} if plan.wrap or not isinstance(value, dict) else value
    return result


def error_result(text: str) -> Dict[str, Any]:
    """Return an ``isError`` result with ``text``."""
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _blocks(output: Any) -> Optional[List[Dict[str, Any]]]:
    items = output if isinstance(output, (list, tuple)) else (output,)
    if not items or not all(isinstance(item, ContentBlock) for item in items):
        return None
    wire = [_block(item) for item in items]
    return None if any(b is None for b in wire) else wire  # type: ignore[return-value]


def _block(block: Any) -> Optional[Dict[str, Any]]:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if getattr(block, "type", None) == "image" and getattr(block, "data", None):
        return {"type": "image", "data": block.data, "mimeType": block.media_type}
    if getattr(block, "type", None) == "image":
        return {"type": "text", "text": f"[image: {block.url}]"}
    return None


# -- prompts -------------------------------------------------------------------------


def prompt_messages(value: Any) -> List[Dict[str, Any]]:
    """Turn what a prompt function returned into ``prompts/get`` messages.

    A str is one user message; a :class:`Message` its role and blocks (one
    message per block); a dict is taken as a wire message; a list any of these.

    Raises:
        TypeError: the value is none of these.
    """
    items: Sequence[Any] = value if isinstance(value, (list, tuple)) else (value,)
    out: List[Dict[str, Any]] = []
    for item in items:
        if isinstance(item, str):
            out.append({"role": "user", "content": {"type": "text", "text": item}})
        elif isinstance(item, Message):
            role = "assistant" if item.role is Role.ASSISTANT else "user"
            for block in item.content:
                wire = _block(block)
                if wire is not None:
                    out.append({"role": role, "content": wire})
        elif isinstance(item, dict) and "role" in item and "content" in item:
            out.append(item)
        else:
            raise TypeError(f"a prompt returned {type(item).__name__}; return a str, a Message, "
                            "a {'role', 'content'} dict, or a list of them")
    return out


# -- resources -----------------------------------------------------------------------


def resource_contents(uri: str, value: Any, mime_type: Optional[str]) -> List[Dict[str, Any]]:
    """Turn what a resource function returned (str, bytes, or a list of them) into ``contents``.

    Raises:
        TypeError: the value is neither.
    """
    items = value if isinstance(value, list) else [value]
    out: List[Dict[str, Any]] = []
    for item in items:
        if isinstance(item, dict) and "uri" in item:
            out.append(item)
        elif isinstance(item, str):
            out.append({"uri": uri, "mimeType": mime_type or "text/plain", "text": item})
        elif isinstance(item, (bytes, bytearray, memoryview)):
            out.append({"uri": uri, "mimeType": mime_type or "application/octet-stream",
                        "blob": base64.b64encode(bytes(item)).decode("ascii")})
        else:
            try:
                text = json.dumps(_plain(item), ensure_ascii=False)
            except Exception as exc:  # noqa: BLE001 - said in the TypeError
                raise TypeError(f"resource {uri!r} returned {type(item).__name__}, which has no JSON form") from exc
            out.append({"uri": uri, "mimeType": mime_type or "application/json", "text": text})
    return out


