"""McpServer over a ToolRegistry: its permission checker applies, errors are masked on request, calls time out."""

from __future__ import annotations

import threading
from typing import Any, Dict

from mcp_server_helpers import Pipes

from agcore_sync import ToolRegistry, tool
from agcore_sync.mcp.server import McpServer
from agcore_sync.tools.permission import Permission, PermissionChecker, PermissionConfig

_never = threading.Event()


@tool(permissions=[Permission.SHELL])
def run_shell(command: str) -> str:
    """Run a shell command (refused by the default permissions)."""
    return "ran"


@tool
def secret_failure() -> str:
    """Fail with a message that must not reach the client."""
    raise RuntimeError("db password is hunter2")


@tool
def stall() -> str:
    """Take longer than the server allows."""
    _never.wait(5.0)
    return "late"


def _call(pipes: Pipes, name: str, request_id: int = 1) -> Dict[str, Any]:
    pipes.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": name, "arguments": {}}
                if name != "run_shell" else {"name": name, "arguments": {"command": "ls"}}})
    return pipes.read()["result"]


def test_a_registrys_permission_checker_refuses_a_call_as_an_is_error_result() -> None:
    registry = ToolRegistry(PermissionChecker(PermissionConfig()))
    registry.register(run_shell)
    pipes = Pipes(McpServer("shell", registry=registry))
    try:
        pipes.initialize()
        result = _call(pipes, "run_shell")
        assert result["isError"] and "shell" in result["content"][0]["text"].lower()
    finally:
        pipes.close()
        registry.close()


def test_mask_errors_hides_a_tools_message() -> None:
    server = McpServer("masked", mask_errors=True)
    server.registry.register(secret_failure)
    pipes = Pipes(server)
    try:
        pipes.initialize()
        result = _call(pipes, "secret_failure")
        assert result == {"content": [{"type": "text", "text": 'Error in tool "secret_failure"'}], "isError": True}
    finally:
        pipes.close()


def test_a_tool_past_tool_timeout_is_answered_with_an_is_error_result_and_the_server_goes_on() -> None:
    server = McpServer("slow", tool_timeout=0.2)
    server.registry.register(stall)

    @server.tool
    def quick() -> str:
        """Answer at once."""
        return "ok"

    pipes = Pipes(server)
    try:
        pipes.initialize()
        result = _call(pipes, "stall")
        assert result["isError"] and "stall" in result["content"][0]["text"]
        assert _call(pipes, "quick", 2)["content"] == [{"type": "text", "text": "ok"}]
    finally:
        _never.set()
        pipes.close()
