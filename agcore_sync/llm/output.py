"""Structured output: the schema an answer must follow, and its parsing.

What ``output=`` accepts becomes an :class:`OutputSchema`:

* a JSON Schema ``dict`` (the answer is returned as the decoded JSON);
* a dataclass, a ``TypedDict`` or an attrs class: the schema is built from
  the type hints as ``@tool`` builds its parameters (the class docstring's
  summary describes the object, its ``Args:``/``Attributes:`` entries the
  fields), and the answer is converted into an instance (a dict for a
  TypedDict), nested classes, enums, lists, sets, tuples and optionals
  included;
* a pydantic model class (or pydantic dataclass), when pydantic is
  installed: the schema is pydantic's, the answer goes through
  ``model_validate_json``. pydantic is never imported here: a class can only
  be a pydantic model if pydantic is already loaded, so it is looked up in
  ``sys.modules``.

Every answer is checked with ``jsonschema`` first, and every problem is
reported with its JSON path (:class:`~agcore_sync.llm.errors.OutputValidationError`).

The wire fragments are pure functions of an :class:`OutputSchema`, for the
providers and loops to call: :func:`openai_response_format` (Chat
Completions), :func:`responses_text_format` (Responses API),
:func:`anthropic_output_format` (``output_config.format``),
:func:`output_tool` (the ``"tool"`` mode) and :func:`prompted_instructions`
(the ``"prompted"`` mode). For a pydantic model the OpenAI and Anthropic
fragments equal, key order included, what the official SDKs send for
``chat.completions.parse(response_format=Model)``,
``responses.parse(text_format=Model)`` and
``messages.parse(output_format=Model)``.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Tuple

from agcore_sync.llm._output_schema import (  # noqa: F401 - the constants and dump_json are re-exported
    OUTPUT_TOOL_NAME,
    WRAPPED_KEY,
    OutputSchema,
    dump_json,
)
from agcore_sync.llm.errors import OutputValidationError
from agcore_sync.llm.types import ToolChoice, ToolDef

__all__ = [
    "OutputSchema",
    "openai_response_format",
    "responses_text_format",
    "anthropic_output_format",
    "output_tool",
    "prompted_instructions",
    "retry_instructions",
]

# Defined in _output_schema (below types.py); documented and pickled as a name of this module.
OutputSchema.__module__ = __name__
#: The most error lines :func:`retry_instructions` sends back to the model.
_MAX_RETRY_ERRORS = 20


def openai_response_format(schema: OutputSchema) -> Dict[str, Any]:
    """Return the Chat Completions ``response_format`` for ``schema``.

    ``{"type": "json_schema", "json_schema": {"schema": ..., "name": ...,
    "strict": ...}}``; the schema is the strict rewrite when
    :attr:`OutputSchema.strict`, else the schema as given.
    """
    return {
        "type": "json_schema",
        "json_schema": {"schema": schema._openai_schema, "name": schema.name, "strict": schema.strict},
    }


def responses_text_format(schema: OutputSchema) -> Dict[str, Any]:
    """Return the Responses API ``text.format`` for ``schema``.

    ``{"type": "json_schema", "strict": ..., "name": ..., "schema": ...}``,
    the same schema as :func:`openai_response_format`.
    """
    return {"type": "json_schema", "strict": schema.strict, "name": schema.name, "schema": schema._openai_schema}


def anthropic_output_format(schema: OutputSchema) -> Dict[str, Any]:
    """Return Anthropic's ``output_config.format`` for ``schema``.

    ``{"schema": ..., "type": "json_schema"}`` (the SDK's key order), the schema rewritten as the
    ``anthropic`` SDK rewrites it (unsupported keywords become description
    text; validation still checks them). The provider merges it into
    ``output_config`` next to ``effort``.
    """
    return {"schema": schema._anthropic_schema, "type": "json_schema"}


def output_tool(schema: OutputSchema, *, name: str = OUTPUT_TOOL_NAME) -> Tuple[ToolDef, ToolChoice]:
    """Return the ``"tool"`` mode's output tool and the choice forcing it.

    The tool's parameters are the schema (a non-object root wrapped as
    ``{"response": ...}``, since tool arguments are objects); read the call's
    arguments back with :meth:`OutputSchema.parse_tool_input`. A loop that
    also offers other tools sends ``tool_choice="required"`` instead and ends
    when this tool is called.
    """
    parameters = schema.json_schema
    if schema.wraps_tool_input:
        inner = {k: v for k, v in parameters.items() if k != "$defs"}
        parameters = {
            "type": "object",
            "properties": {WRAPPED_KEY: inner},
            "required": [WRAPPED_KEY],
            "additionalProperties": False,
        }
        if "$defs" in schema.json_schema:
            parameters["$defs"] = schema.json_schema["$defs"]
    summary = f"Give the final answer ({schema.name})"
    if schema.description:
        summary += f": {schema.description}"
    description = f"{summary}. Call this tool exactly once, with the whole answer as its arguments."
    return ToolDef(name, description, parameters), ToolChoice.tool(name)


def prompted_instructions(schema: OutputSchema) -> str:
    """Return the ``"prompted"`` mode's system-prompt text: the schema and how to answer."""
    about = f" ({schema.description})" if schema.description else ""
    return (
        f"Answer with a single JSON value for {schema.name}{about} that matches this JSON Schema, "
        "and nothing else: no text before or after it, no code fence.\n\n"
        + json.dumps(schema.json_schema, indent=2, ensure_ascii=False)
    )


def retry_instructions(error: OutputValidationError) -> str:
    """Return the message that sends an invalid answer's problems back to the model.

    At most 20 problems are listed (the count of the others is given).
    """
    lines = [f"- {line}" for line in error.errors[:_MAX_RETRY_ERRORS]]
    if len(error.errors) > _MAX_RETRY_ERRORS:
        lines.append(f"- and {len(error.errors) - _MAX_RETRY_ERRORS} more")
    return (
        "Your answer does not match the required JSON Schema:\n"
        + "\n".join(lines)
        + "\nAnswer again with JSON that matches the schema."
    )
