"""An McpServer the interop tests serve over stdio (run as a script) and over HTTP (imported).

Run as ``python tests/mcp/server/demo_server.py`` it serves stdin/stdout;
``make_server()`` builds a fresh one for an in-process WSGI server.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any, Dict, List

if __name__ == "__main__":  # run as a script: import this checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from agcore_sync.mcp.server import McpServer, request_context  # noqa: E402

#: Set by the ``hang`` tool's caller never: a wait that only a cancellation ends.
_never = threading.Event()


def make_server(**options: Any) -> McpServer:
    """Return a server with one tool, resource and prompt of each kind the interop tests use."""
    server = McpServer("demo", "1.2.3", instructions="Adds numbers.", **options)

    @server.tool(annotations={"readOnlyHint": True})
    def add(a: int, b: int) -> int:
        """Add two numbers.

        Args:
            a: the first.
            b: the second.
        """
        return a + b

    @server.tool
    def profile(name: str) -> Dict[str, Any]:
        """Return a profile."""
        return {"name": name, "length": len(name)}

    @server.tool
    def shout(text: str) -> str:
        """Upper-case text, logging and reporting progress on the way."""
        context = request_context()
        context.log("info", f"shouting {text}")
        context.progress(1, 2, "half")
        context.progress(2, 2)
        return text.upper()

    @server.tool
    def fail() -> str:
        """Raise."""
        raise ValueError("the disk is full")

    @server.tool
    def not_json() -> Any:
        """Return something JSON cannot carry."""
        return object()

    @server.tool
    def hang() -> str:
        """Wait until the client cancels."""
        context = request_context()
        while not context.cancelled:
            _never.wait(0.01)
        return "cancelled"

    @server.tool
    def ask_model(question: str) -> str:
        """Ask the client's model."""
        return request_context().sample(question, max_tokens=20).message.text

    @server.tool
    def ask_twice(question: str) -> str:
        """Ask the client's model twice."""
        context = request_context()
        first = context.sample(question, max_tokens=20).message.text
        second = context.sample(f"again: {question}", max_tokens=20).message.text
        return f"{first} / {second}"

    @server.tool
    def ask_user(question: str) -> str:
        """Ask the client's user."""
        answer = request_context().elicit(question, {
            "type": "object",
            "properties": {"color": {"type": "string", "enum": ["red", "blue"]},
                           "size": {"type": "integer", "default": 3}},
            "required": ["color"]})
        return f"{answer.action}:{answer.content}"

    @server.resource("demo://readme", description="The readme", mime_type="text/plain")
    def readme() -> str:
        return "read me"

    @server.resource("demo://logo", mime_type="image/png")
    def logo() -> bytes:
        return b"\x89PNG"

    @server.resource("demo://users/{user}/name")
    def user_name(user: str) -> str:
        return f"name of {user}"

    notes = {"todo": "buy milk"}

    @server.resource("demo://notes/{key}")
    def note(key: str) -> str:
        return notes[key]  # KeyError for an unknown note: the client gets -32002

    @server.prompt()
    def greet(who: str, tone: str = "warm") -> str:
        """Greet someone.

        Args:
            who: whom to greet.
            tone: how.
        """
        return f"Say hello to {who}, {tone}ly."

    @server.completion
    def complete(ref: Dict[str, Any], argument: str, value: str, context: Any) -> List[str]:
        return [w for w in ("warm", "wry", "cold") if w.startswith(value)]

    return server


#: The server ``agcore-sync mcp-serve demo_server:served`` serves.
served = make_server()

if __name__ == "__main__":
    with served:
        served.run_stdio()
