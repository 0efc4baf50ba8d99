"""What the command line says when an MCP server dies: what the user can do, and its stderr once."""

from __future__ import annotations

from agcore_sync import CycleConfig, McpConnectionError, MockProvider, ToolRegistry
from agcore_sync.cli.command import _describe
from agcore_sync.cli.interrupt import TurnInterrupt
from agcore_sync.cli.setup import Setup
from agcore_sync.mcp.client.session import RECONNECT_ADVICE  # the words the library really uses

GONE = (f"MCP server 'files' is gone: exited with code 1; {RECONNECT_ADVICE} "
        "(server stderr: ModuleNotFoundError: No module named 'mcp')")


def test_a_dead_server_is_explained_in_terms_of_the_command_not_the_library():
    with ToolRegistry() as registry:
        setup = Setup(MockProvider([]), registry, CycleConfig(), None, TurnInterrupt(), "demo", None)
        text = setup.explain(GONE, McpConnectionError(GONE, exit_code=1))
    assert "McpClient" not in text
    assert "until agcore-sync is started again" in text


def test_the_server_stderr_is_shown_once_even_when_the_message_already_has_it():
    error = McpConnectionError(GONE, exit_code=1, stderr_tail="ModuleNotFoundError: No module named 'mcp'")
    text = _describe(error)
    assert text.count("No module named 'mcp'") == 1
    assert "McpClient" not in text
    bare = McpConnectionError("MCP server 'x' is gone", exit_code=1, stderr_tail="boom: bad flag")
    assert _describe(bare).endswith("(server stderr: boom: bad flag)")
