"""into_tools: MCP tools as BaseTools in a ToolRegistry, and a model calling one end to end."""

from __future__ import annotations

import json

import pytest

from agcore_sync.llm.mock import MockProvider
from agcore_sync.llm.types import Role
from agcore_sync.loop.cycle import CycleConfig, LlmCycle
from agcore_sync.mcp import McpTool
from agcore_sync.tools.base import BaseTool
from agcore_sync.tools.error import McpConnectionError, McpError, ToolExecutionError
from agcore_sync.tools.permission import Permission, PermissionChecker, PermissionConfig
from agcore_sync.tools.registry import ToolRegistry


def test_into_tools_keeps_the_server_names_and_schemas(open_client, sdk_server):
    with open_client(sdk_server) as client:
        tools = client.into_tools()
        definitions = {d.name: d for d in client.list_tools()}
    assert all(isinstance(tool, McpTool) and isinstance(tool, BaseTool) for tool in tools)
    assert {tool.name for tool in tools} == set(definitions)
    add = next(tool for tool in tools if tool.name == "add")
    assert add.definition() == definitions["add"]
    assert add.required_permissions == ()


def test_a_prefix_is_prepended_verbatim_and_calls_use_the_server_name(open_client, sdk_server):
    with open_client(sdk_server) as client:
        tools = {tool.name: tool for tool in client.into_tools(prefix="calc.")}
        assert "calc.add" in tools and "add" not in tools
        assert tools["calc.add"].execute({"a": 1, "b": 2}) == "3"
        assert client.transport.requests("tools/call")[-1]["params"]["name"] == "add"


def test_mcp_tools_declare_exactly_the_permissions_given(open_client, sdk_server):
    with open_client(sdk_server) as client:
        tools = client.into_tools(permissions=[Permission.NETWORK])
    assert {tool.required_permissions for tool in tools} == {(Permission.NETWORK,)}


def test_execute_returns_text_then_structured_content_then_blocks(open_client, sdk_server):
    with open_client(sdk_server) as client:
        tools = {tool.name: tool for tool in client.into_tools()}
        assert tools["echo"].execute({"text": "plain"}) == "plain"
        assert tools["nbytes"].execute({"n": 0}) == {"result": ""}, "no text: the structured content"


def test_an_is_error_result_raises_a_recoverable_tool_execution_error_with_the_server_text(open_client, sdk_server):
    with open_client(sdk_server) as client:
        (fail,) = [tool for tool in client.into_tools() if tool.name == "fail"]
        with pytest.raises(ToolExecutionError) as caught:
            fail.execute({"message": "quota exceeded"})
    assert caught.value.recoverable is True
    assert caught.value.tool_name == "fail"
    assert str(caught.value) == "Error executing tool fail: quota exceeded"


def test_the_registry_runs_mcp_tools_and_keeps_failures_apart(open_client, sdk_server):
    with open_client(sdk_server) as client, ToolRegistry() as registry:
        registry.register_all(client.into_tools(prefix="srv_"))
        ok, failed, refused, invalid = registry.invoke_all(
            [
                ("c1", "srv_add", {"a": 40, "b": 2}),
                ("c2", "srv_fail", {"message": "nope"}),
                ("c3", "srv_rpc_error", {"code": -32602}),
                ("c4", "srv_add", {"a": "not a number"}),
            ]
        )
    assert ok.ok and ok.output == "42" and ok.content() == "42"
    assert isinstance(failed.error, ToolExecutionError) and failed.error.recoverable
    assert type(refused.error) is McpError and refused.error.code == -32602 and refused.error.recoverable
    assert invalid.error is not None and invalid.error.recoverable, "the schema from tools/list is enforced"


def test_a_permission_checker_stops_an_mcp_tool_before_it_reaches_the_server(open_client, sdk_server):
    checker = PermissionChecker(PermissionConfig(allowed=(), denied=(Permission.SHELL,)))
    with open_client(sdk_server) as client, ToolRegistry(checker) as registry:
        registry.register_all(client.into_tools(permissions=[Permission.SHELL]))
        from agcore_sync.tools.error import PermissionDeniedError

        with pytest.raises(PermissionDeniedError):
            registry.invoke("echo", {"text": "x"})
        assert client.transport.requests("tools/call") == []


def test_a_lost_server_is_an_unrecoverable_failure(open_client, raw_server):
    with open_client(raw_server) as client, ToolRegistry() as registry:
        registry.register_all(client.into_tools())
        invocation = registry.invoke("crash", {"code": 2, "lines": ["bye"]})
    assert isinstance(invocation.error, McpConnectionError)
    assert invocation.error.recoverable is False


def test_a_model_calls_an_mcp_tool_and_the_answer_flows_back(open_client, sdk_server):
    provider = MockProvider(
        [
            MockProvider.tool_calls(("call_1", "math_add", {"a": 17, "b": 25})),
            lambda request: MockProvider.text(f"The sum is {request.messages[-1].content[0].content}."),
        ]
    )
    with open_client(sdk_server) as client, ToolRegistry() as registry:
        registry.register_all(client.into_tools(prefix="math_"))
        cycle = LlmCycle(provider, CycleConfig(model="mock-model"))
        response = cycle.submit_with_tools("What is 17 + 25?", registry)
        assert client.transport.requests("tools/call")[-1]["params"] == {"name": "add", "arguments": {"a": 17, "b": 25}}
    assert response.message.text == "The sum is 42."
    first_request = provider.requests[0]
    assert "math_add" in [tool.name for tool in first_request.tools]
    tool_message = cycle.messages()[2]
    assert tool_message.role == Role.TOOL
    assert tool_message.content[0].tool_use_id == "call_1"
    assert tool_message.content[0].content == "42"
    assert tool_message.content[0].is_error is False


def test_a_failing_mcp_tool_is_reported_to_the_model_as_an_error_result(open_client, sdk_server):
    provider = MockProvider(
        [
            MockProvider.tool_calls(("call_9", "fail", {"message": "no such city"})),
            MockProvider.text("Sorry, that failed."),
        ]
    )
    with open_client(sdk_server) as client, ToolRegistry() as registry:
        registry.register_all(client.into_tools())
        cycle = LlmCycle(provider, CycleConfig(model="mock-model"))
        cycle.submit_with_tools("Weather?", registry)
    result = cycle.messages()[2].content[0]
    assert result.is_error is True
    assert "no such city" in result.content
    assert json.dumps(result.content)  # plain text the model can read
