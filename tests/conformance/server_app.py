"""The conformance suite's test server, built only on McpServer: the tools, resources and prompts it names.

Served by gunicorn (``gunicorn -k gthread --threads 32 tests.conformance.server_app:app``)
from tests/conformance/run_server.sh. The scenarios' delays (50 ms between
logs and progress notifications) are behaviour they check, so they are waits
here, on an Event nobody sets.
"""

from __future__ import annotations

import base64
import json
import threading
from typing import Any, Dict, List, Optional

from agcore_sync.llm.media import ImageBlock
from agcore_sync.llm.types import Message
from agcore_sync.mcp.server import McpServer, ToolResult, request_context
from agcore_sync.tools.base import BaseTool

# A 1x1 red PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")
PNG_B64 = base64.b64encode(PNG).decode("ascii")
# A 44-byte WAV header with no samples.
WAV_B64 = base64.b64encode(b"RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00D\xac\x00\x00\x88X\x01\x00"
                           b"\x02\x00\x10\x00data\x00\x00\x00\x00").decode("ascii")

server = McpServer("agcore-conformance-server", "1.0.0")
_pause = threading.Event()


def _wait(seconds: float) -> None:
    _pause.wait(seconds)


@server.tool
def test_simple_text() -> str:
    """Return simple text."""
    return "This is a simple text response for testing."


@server.tool
def test_image_content() -> ImageBlock:
    """Return an image."""
    return ImageBlock(media_type="image/png", data=PNG_B64)


@server.tool
def test_audio_content() -> ToolResult:
    """Return audio."""
    return ToolResult(content=[{"type": "audio", "data": WAV_B64, "mimeType": "audio/wav"}])


@server.tool
def test_embedded_resource() -> ToolResult:
    """Return an embedded resource."""
    return ToolResult(content=[{"type": "resource", "resource": {
        "uri": "test://embedded-resource", "mimeType": "text/plain", "text": "This is an embedded resource content."}}])


@server.tool
def test_multiple_content_types() -> ToolResult:
    """Return text, an image and a resource."""
    return ToolResult(content=[
        {"type": "text", "text": "Multiple content types test:"},
        {"type": "image", "data": PNG_B64, "mimeType": "image/png"},
        {"type": "resource", "resource": {"uri": "test://mixed-content-resource", "mimeType": "application/json",
                                          "text": json.dumps({"test": "data", "value": 123})}},
    ])


@server.tool
def test_tool_with_logging() -> str:
    """Send three log messages."""
    context = request_context()
    context.log("info", "Tool execution started")
    _wait(0.05)
    context.log("info", "Tool processing data")
    _wait(0.05)
    context.log("info", "Tool execution completed")
    return "Tool with logging executed successfully"


@server.tool
def test_error_handling() -> str:
    """Fail, always."""
    raise RuntimeError("This tool intentionally returns an error for testing")


@server.tool
def test_tool_with_progress() -> str:
    """Report progress 0, 50, 100 of 100."""
    context = request_context()
    for step in (0, 50, 100):
        context.progress(step, 100)
        if step < 100:
            _wait(0.05)
    return "Tool with progress executed successfully"


@server.tool
def test_sampling(prompt: str) -> str:
    """Ask the client's model.

    Args:
        prompt: the prompt to send to the LLM.
    """
    answer = request_context().sample(prompt, max_tokens=100)
    return f"LLM response: {answer.message.text}"


@server.tool
def test_elicitation(message: str) -> str:
    """Ask the user.

    Args:
        message: the message to show the user.
    """
    result = request_context().elicit(message, {
        "type": "object",
        "properties": {"username": {"type": "string", "description": "User's response"},
                       "email": {"type": "string", "description": "User's email address"}},
        "required": ["username", "email"],
    })
    return f"User response: action={result.action}, content={json.dumps(result.content)}"


@server.tool
def test_elicitation_sep1034_defaults() -> str:
    """Ask with defaults for every primitive type."""
    result = request_context().elicit("Please review and update the form fields with defaults", {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"],
                       "default": "active"},
            "verified": {"type": "boolean", "description": "Verification status", "default": True},
        },
        "required": [],
    })
    return f"Elicitation completed: action={result.action}, content={json.dumps(result.content)}"


@server.tool
def test_elicitation_sep1330_enums() -> str:
    """Ask with every enum form."""
    result = request_context().elicit("Please select options from the enum fields", {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "description": "Select one option",
                               "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "description": "Select one option with titles", "oneOf": [
                {"const": "value1", "title": "First Option"}, {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"}]},
            "legacyEnum": {"type": "string", "description": "Select one option (legacy)",
                           "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]},
            "untitledMulti": {"type": "array", "description": "Select multiple options",
                              "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {"type": "array", "description": "Select multiple options with titles", "items": {"anyOf": [
                {"const": "value1", "title": "First Choice"}, {"const": "value2", "title": "Second Choice"},
                {"const": "value3", "title": "Third Choice"}]}},
        },
        "required": [],
    })
    return f"Elicitation completed: action={result.action}, content={json.dumps(result.content)}"


@server.tool
def test_reconnection() -> str:
    """Close the SSE answer mid-call; the result comes on the resumed stream."""
    request_context().close_stream()
    _wait(0.1)
    return "Reconnection test completed"


class JsonSchema202012Tool(BaseTool):
    """A tool whose input schema uses JSON Schema 2020-12 keywords."""

    name = "json_schema_2020_12_tool"
    description = "Tool with JSON Schema 2020-12 features"
    parameters: Dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"},
                                                                 "city": {"type": "string"}}}},
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
        "additionalProperties": False,
    }

    def execute(self, args: Dict[str, Any]) -> Any:
        """Echo the arguments."""
        return f"JSON Schema 2020-12 tool called with: {json.dumps(args)}"


server.registry.register(JsonSchema202012Tool())


@server.resource("test://static-text", name="static-text", description="A static text resource",
                 mime_type="text/plain")
def static_text() -> str:
    """A static text resource."""
    return "This is the content of the static text resource."


@server.resource("test://static-binary", name="static-binary", description="A static binary resource",
                 mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource."""
    return PNG


@server.resource("test://template/{id}/data", name="template-data", description="Data by id",
                 mime_type="application/json")
def template_data(id: str) -> str:  # noqa: A002 - the template's variable
    """Data for an id."""
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@server.resource("test://watched-resource", name="watched-resource", description="A resource to subscribe to",
                 mime_type="text/plain")
def watched() -> str:
    """A resource clients subscribe to."""
    return "Watched resource content"


@server.prompt()
def test_simple_prompt() -> str:
    """A simple prompt without arguments."""
    return "This is a simple prompt for testing."


@server.prompt()
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt with arguments.

    Args:
        arg1: First test argument.
        arg2: Second test argument.
    """
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt()
def test_prompt_with_embedded_resource(resourceUri: str) -> List[Dict[str, Any]]:  # noqa: N803 - the wire name
    """A prompt with an embedded resource.

    Args:
        resourceUri: URI of the resource to embed.
    """
    return [
        {"role": "user", "content": {"type": "resource", "resource": {
            "uri": resourceUri, "mimeType": "text/plain", "text": "Embedded resource content for testing."}}},
        "Please process the embedded resource above.",
    ]


@server.prompt()
def test_prompt_with_image() -> List[Any]:
    """A prompt with an image."""
    return [Message.user("", ImageBlock(media_type="image/png", data=PNG_B64)),
            "Please analyze the image above."]


@server.completion
def complete(ref: Dict[str, Any], argument: str, value: str, context: Optional[Dict[str, str]]) -> List[str]:
    """Offer words starting with what was typed."""
    words = ["paris", "park", "party", "python", "test", "testing"]
    return [word for word in words if word.startswith(value)]


#: The WSGI application gunicorn serves.
app = server.wsgi_app()
