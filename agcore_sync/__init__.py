"""agcore_sync: a synchronous, thread-based core for LLM agents.

Every public name is importable from here. Submodules load on first use
(PEP 562), so ``import agcore_sync`` stays cheap and a script that needs
only a provider does not pay for sessions and MCP.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any, Dict, List

from agcore_sync._version import __version__

# A library logs; the application decides where it goes. Without this, a
# script that never configured logging would see WARNING records on stderr
# through logging's last-resort handler.
logging.getLogger("agcore_sync").addHandler(logging.NullHandler())

# Public name -> the module that defines it.
_EXPORTS: Dict[str, str] = {
    "CompactConfig": "agcore_sync.agent.compact",
    "AgentError": "agcore_sync.agent.errors",
    "ApprovalDecisionError": "agcore_sync.agent.errors",
    "TurnNotPausedError": "agcore_sync.agent.errors",
    "TurnPausedError": "agcore_sync.agent.errors",
    "SlotNotFoundError": "agcore_sync.agent.errors",
    "SlotReadonlyError": "agcore_sync.agent.errors",
    "SessionBusyError": "agcore_sync.agent.errors",
    "SessionConflictError": "agcore_sync.agent.errors",
    "SessionNotFoundError": "agcore_sync.agent.errors",
    "SessionStoreError": "agcore_sync.agent.errors",
    "LeaseBackend": "agcore_sync.agent.store",
    "SessionLease": "agcore_sync.agent.store",
    "SessionStore": "agcore_sync.agent.store",
    "StoredSession": "agcore_sync.agent.store",
    "SqliteSessionStore": "agcore_sync.agent.sqlite_store",
    "AgentSession": "agcore_sync.agent.session",
    "TurnStream": "agcore_sync.agent.turn_stream",
    "agent_tool": "agcore_sync.agent.subagents",
    "handoff": "agcore_sync.agent.handoff",
    "SubagentEvent": "agcore_sync.llm.events",
    "AgcoreError": "agcore_sync.errors",
    "ContextOverflowError": "agcore_sync.errors",
    "Approve": "agcore_sync.hooks",
    "Defer": "agcore_sync.hooks",
    "Deny": "agcore_sync.hooks",
    "HookContext": "agcore_sync.hooks",
    "HookError": "agcore_sync.hooks",
    "HookEvent": "agcore_sync.hooks",
    "Hooks": "agcore_sync.hooks",
    "AnthropicProvider": "agcore_sync.llm.anthropic",
    "BedrockProvider": "agcore_sync.llm.bedrock",
    "Pricing": "agcore_sync.llm.cost",
    "PromptTemplate": "agcore_sync.prompt.template",
    "PromptBuilder": "agcore_sync.prompt.builder",
    "PromptBundle": "agcore_sync.prompt.bundle",
    "PromptError": "agcore_sync.prompt.errors",
    "CycleConfig": "agcore_sync.loop.config",
    "LlmCycle": "agcore_sync.loop.cycle",
    "RunUsage": "agcore_sync.loop.limits",
    "UsageLimitExceeded": "agcore_sync.loop.limits",
    "UsageLimits": "agcore_sync.loop.limits",
    "PausedTurn": "agcore_sync.loop.pause",
    "ApprovalRequired": "agcore_sync.llm.events",
    "ToolApprovalRequest": "agcore_sync.llm.events",
    "ContentBlockEnd": "agcore_sync.llm.events",
    "ContentBlockStart": "agcore_sync.llm.events",
    "CostUpdate": "agcore_sync.llm.events",
    "Error": "agcore_sync.llm.events",
    "MessageComplete": "agcore_sync.llm.events",
    "MessageStart": "agcore_sync.llm.events",
    "PartialMessageResponse": "agcore_sync.llm.partial",
    "StreamEvent": "agcore_sync.llm.events",
    "TextDelta": "agcore_sync.llm.events",
    "ThinkingDelta": "agcore_sync.llm.events",
    "ToolCallArgumentsDelta": "agcore_sync.llm.events",
    "ToolCallEnd": "agcore_sync.llm.events",
    "ToolExecutionCompleted": "agcore_sync.llm.events",
    "ToolExecutionStarted": "agcore_sync.llm.events",
    "MockProvider": "agcore_sync.llm.mock",
    "MockStream": "agcore_sync.llm.mock",
    "OpenAIProvider": "agcore_sync.llm.openai",
    "OpenAIResponsesProvider": "agcore_sync.llm.responses",
    "GeminiProvider": "agcore_sync.llm.gemini",
    "AuthenticationError": "agcore_sync.llm.errors",
    "LlmConnectionError": "agcore_sync.llm.errors",
    "LlmError": "agcore_sync.llm.errors",
    "LlmProvider": "agcore_sync.llm.provider",
    "LlmTimeoutError": "agcore_sync.llm.errors",
    "MaxToolTurnsExceeded": "agcore_sync.llm.errors",
    "ProviderError": "agcore_sync.llm.errors",
    "RateLimitError": "agcore_sync.llm.errors",
    "ResponseParseError": "agcore_sync.llm.errors",
    "ServerError": "agcore_sync.llm.errors",
    "OutputRefusedError": "agcore_sync.llm.errors",
    "OutputValidationError": "agcore_sync.llm.errors",
    "DocumentBlock": "agcore_sync.llm.media",
    "ImageBlock": "agcore_sync.llm.media",
    "OutputSchema": "agcore_sync.llm.output",
    "anthropic_output_format": "agcore_sync.llm.output",
    "openai_response_format": "agcore_sync.llm.output",
    "output_tool": "agcore_sync.llm.output",
    "prompted_instructions": "agcore_sync.llm.output",
    "responses_text_format": "agcore_sync.llm.output",
    "retry_instructions": "agcore_sync.llm.output",
    "RetryConfig": "agcore_sync.llm.retry",
    "RetryProvider": "agcore_sync.llm.retry",
    "ToolLoopStream": "agcore_sync.loop.tool_stream",
    "ContentBlock": "agcore_sync.llm.content",
    "Message": "agcore_sync.llm.types",
    "MessageRequest": "agcore_sync.llm.types",
    "MessageResponse": "agcore_sync.llm.types",
    "Role": "agcore_sync.llm.types",
    "StopReason": "agcore_sync.llm.types",
    "TextBlock": "agcore_sync.llm.types",
    "ThinkingBlock": "agcore_sync.llm.types",
    "ToolChoice": "agcore_sync.llm.types",
    "ToolDef": "agcore_sync.llm.types",
    "ToolResultBlock": "agcore_sync.llm.types",
    "ToolUseBlock": "agcore_sync.llm.types",
    "Usage": "agcore_sync.llm.types",
    "BaseTool": "agcore_sync.tools.base",
    "InvalidArgumentsError": "agcore_sync.tools.error",
    "McpAuthError": "agcore_sync.tools.error",
    "McpConnectionError": "agcore_sync.tools.error",
    "McpError": "agcore_sync.tools.error",
    "McpNotInitializedError": "agcore_sync.tools.error",
    "McpTimeoutError": "agcore_sync.tools.error",
    "PermissionDeniedError": "agcore_sync.tools.error",
    "ToolError": "agcore_sync.tools.error",
    "ToolExecutionError": "agcore_sync.tools.error",
    "ToolNotFoundError": "agcore_sync.tools.error",
    "ToolTimeoutError": "agcore_sync.tools.error",
    "FunctionTool": "agcore_sync.tools.function",
    "tool": "agcore_sync.tools.function",
    "Permission": "agcore_sync.tools.permission",
    "PermissionChecker": "agcore_sync.tools.permission",
    "PermissionConfig": "agcore_sync.tools.permission",
    "ToolInvocation": "agcore_sync.tools.invocation",
    "ToolCall": "agcore_sync.tools.invocation",
    "ToolRegistry": "agcore_sync.tools.registry",
    "McpClient": "agcore_sync.mcp.client.session",
    "McpToolResult": "agcore_sync.mcp.client.session",
    "McpTool": "agcore_sync.mcp.tools",
    "McpToolCaller": "agcore_sync.mcp.tools",
    "StdioTransport": "agcore_sync.mcp.transports.stdio",
    "HttpTransport": "agcore_sync.mcp.transports.http",
    "RestartPolicy": "agcore_sync.mcp.client.restart",
    "McpResource": "agcore_sync.mcp.shared.resources",
    "McpResourceTemplate": "agcore_sync.mcp.shared.resources",
    "McpResourceContents": "agcore_sync.mcp.shared.resources",
    "McpPrompt": "agcore_sync.mcp.shared.prompts",
    "McpPromptArgument": "agcore_sync.mcp.shared.prompts",
    "McpPromptResult": "agcore_sync.mcp.shared.prompts",
    "sampling_handler_for": "agcore_sync.mcp.client.sampling",
    "McpResourceTool": "agcore_sync.mcp.tools",
    "McpOAuth": "agcore_sync.mcp.auth.oauth",
    "headless_authorize": "agcore_sync.mcp.auth.oauth",
    "console_authorize": "agcore_sync.mcp.auth.oauth",
    "TokenStorage": "agcore_sync.mcp.auth.storage",
    "InMemoryTokenStorage": "agcore_sync.mcp.auth.storage",
    "FileTokenStorage": "agcore_sync.mcp.auth.storage",
    "OAuthToken": "agcore_sync.mcp.auth.storage",
    "OAuthClientInfo": "agcore_sync.mcp.auth.storage",
    # Resilience (Round 5)
    "FallbackProvider": "agcore_sync.llm.fallback",
    "CircuitBreaker": "agcore_sync.llm.circuit",
    "RateLimit": "agcore_sync.llm.ratelimit",
    "RateLimitedProvider": "agcore_sync.llm.ratelimit",
    "RateLimitWaitExceeded": "agcore_sync.llm.errors",
    "AllProvidersFailedError": "agcore_sync.llm.errors",
    "CircuitOpenError": "agcore_sync.llm.errors",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agcore_sync' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # pragma: no cover - what type checkers and IDEs see
    from agcore_sync.agent.compact import CompactConfig  # noqa: F401
    from agcore_sync.agent.errors import (  # noqa: F401
        AgentError,
        ApprovalDecisionError,
        SessionBusyError,
        SessionConflictError,
        SessionNotFoundError,
        SessionStoreError,
        SlotNotFoundError,
        SlotReadonlyError,
        TurnNotPausedError,
        TurnPausedError,
    )
    from agcore_sync.agent.handoff import handoff  # noqa: F401
    from agcore_sync.agent.session import AgentSession  # noqa: F401
    from agcore_sync.agent.sqlite_store import SqliteSessionStore  # noqa: F401
    from agcore_sync.agent.store import LeaseBackend, SessionLease, SessionStore, StoredSession  # noqa: F401
    from agcore_sync.agent.subagents import agent_tool  # noqa: F401
    from agcore_sync.agent.turn_stream import TurnStream  # noqa: F401
    from agcore_sync.errors import AgcoreError, ContextOverflowError  # noqa: F401
    from agcore_sync.hooks import Approve, Defer, Deny, HookContext, HookError, HookEvent, Hooks  # noqa: F401
    from agcore_sync.llm.anthropic import AnthropicProvider  # noqa: F401
    from agcore_sync.llm.bedrock import BedrockProvider  # noqa: F401
    from agcore_sync.llm.circuit import CircuitBreaker  # noqa: F401
    from agcore_sync.llm.content import ContentBlock  # noqa: F401
    from agcore_sync.llm.cost import Pricing  # noqa: F401
    from agcore_sync.llm.errors import (  # noqa: F401
        AllProvidersFailedError,
        AuthenticationError,
        CircuitOpenError,
        LlmConnectionError,
        LlmError,
        LlmTimeoutError,
        MaxToolTurnsExceeded,
        OutputRefusedError,
        OutputValidationError,
        ProviderError,
        RateLimitError,
        RateLimitWaitExceeded,
        ResponseParseError,
        ServerError,
    )
    from agcore_sync.llm.events import (  # noqa: F401
        ApprovalRequired,
        ContentBlockEnd,
        ContentBlockStart,
        CostUpdate,
        Error,
        MessageComplete,
        MessageStart,
        StreamEvent,
        SubagentEvent,  # noqa: F401
        TextDelta,
        ThinkingDelta,
        ToolApprovalRequest,
        ToolCallArgumentsDelta,
        ToolCallEnd,
        ToolExecutionCompleted,
        ToolExecutionStarted,
    )
    from agcore_sync.llm.fallback import FallbackProvider  # noqa: F401
    from agcore_sync.llm.gemini import GeminiProvider  # noqa: F401
    from agcore_sync.llm.media import DocumentBlock, ImageBlock  # noqa: F401
    from agcore_sync.llm.mock import MockProvider, MockStream  # noqa: F401
    from agcore_sync.llm.openai import OpenAIProvider  # noqa: F401
    from agcore_sync.llm.output import (  # noqa: F401
        OutputSchema,
        anthropic_output_format,
        openai_response_format,
        output_tool,
        prompted_instructions,
        responses_text_format,
        retry_instructions,
    )
    from agcore_sync.llm.partial import PartialMessageResponse  # noqa: F401
    from agcore_sync.llm.provider import LlmProvider  # noqa: F401
    from agcore_sync.llm.ratelimit import RateLimit, RateLimitedProvider  # noqa: F401
    from agcore_sync.llm.responses import OpenAIResponsesProvider  # noqa: F401
    from agcore_sync.llm.retry import RetryConfig, RetryProvider  # noqa: F401
    from agcore_sync.llm.types import (  # noqa: F401
        Message,
        MessageRequest,
        MessageResponse,
        Role,
        StopReason,
        TextBlock,
        ThinkingBlock,
        ToolChoice,
        ToolDef,
        ToolResultBlock,
        ToolUseBlock,
        Usage,
    )
    from agcore_sync.loop.config import CycleConfig  # noqa: F401
    from agcore_sync.loop.cycle import LlmCycle  # noqa: F401
    from agcore_sync.loop.limits import RunUsage, UsageLimitExceeded, UsageLimits  # noqa: F401
    from agcore_sync.loop.pause import PausedTurn  # noqa: F401
    from agcore_sync.loop.tool_stream import ToolLoopStream  # noqa: F401
    from agcore_sync.mcp.auth.oauth import McpOAuth, console_authorize, headless_authorize  # noqa: F401
    from agcore_sync.mcp.auth.storage import (  # noqa: F401
        FileTokenStorage,
        InMemoryTokenStorage,
        OAuthClientInfo,
        OAuthToken,
        TokenStorage,
    )
    from agcore_sync.mcp.client.restart import RestartPolicy  # noqa: F401
    from agcore_sync.mcp.client.sampling import sampling_handler_for  # noqa: F401
    from agcore_sync.mcp.client.session import McpClient, McpToolResult  # noqa: F401
    from agcore_sync.mcp.shared.prompts import McpPrompt, McpPromptArgument, McpPromptResult  # noqa: F401
    from agcore_sync.mcp.shared.resources import McpResource, McpResourceContents, McpResourceTemplate  # noqa: F401
    from agcore_sync.mcp.tools import McpResourceTool, McpTool, McpToolCaller  # noqa: F401
    from agcore_sync.mcp.transports.http import HttpTransport  # noqa: F401
    from agcore_sync.mcp.transports.stdio import StdioTransport  # noqa: F401
    from agcore_sync.prompt.builder import PromptBuilder  # noqa: F401
    from agcore_sync.prompt.bundle import PromptBundle  # noqa: F401
    from agcore_sync.prompt.errors import PromptError  # noqa: F401
    from agcore_sync.prompt.template import PromptTemplate  # noqa: F401
    from agcore_sync.tools.base import BaseTool  # noqa: F401
    from agcore_sync.tools.error import (  # noqa: F401
        InvalidArgumentsError,
        McpAuthError,
        McpConnectionError,
        McpError,
        McpNotInitializedError,
        McpTimeoutError,
        PermissionDeniedError,
        ToolError,
        ToolExecutionError,
        ToolNotFoundError,
        ToolTimeoutError,
    )
    from agcore_sync.tools.function import FunctionTool, tool  # noqa: F401
    from agcore_sync.tools.invocation import ToolCall, ToolInvocation  # noqa: F401
    from agcore_sync.tools.permission import Permission, PermissionChecker, PermissionConfig  # noqa: F401
    from agcore_sync.tools.registry import ToolRegistry  # noqa: F401
