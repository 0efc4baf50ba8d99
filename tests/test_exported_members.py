"""The top-level public API: every name listed, importable and documented."""

from __future__ import annotations

import agcore_sync

EXPORTED = {
    "AgcoreError", "AgentError", "AgentSession", "AnthropicProvider", "AuthenticationError", "BaseTool",
    "CompactConfig", "ContentBlock", "ContentBlockEnd", "ContentBlockStart", "ContextOverflowError", "CostUpdate",
    "CycleConfig", "Deny", "Error", "FunctionTool", "HookContext", "HookError", "HookEvent", "Hooks",
    "HttpTransport", "InvalidArgumentsError", "LlmConnectionError", "LlmCycle", "LlmError", "LlmProvider",
    "LlmTimeoutError", "MaxToolTurnsExceeded", "McpClient", "McpConnectionError", "McpError",
    "McpNotInitializedError", "McpTimeoutError", "McpTool", "McpToolResult", "Message", "MessageComplete",
    "MessageRequest", "MessageResponse", "MessageStart", "MockProvider", "MockStream", "OpenAIProvider",
    "PartialMessageResponse",
    "Permission", "PermissionChecker", "PermissionConfig", "PermissionDeniedError", "Pricing", "PromptBuilder",
    "PromptBundle", "PromptError", "PromptTemplate", "ProviderError", "RateLimitError", "ResponseParseError",
    "RestartPolicy", "RetryConfig", "RetryProvider", "Role", "ServerError", "SlotNotFoundError", "SlotReadonlyError",
    "StdioTransport", "StopReason", "StreamEvent", "TextBlock", "TextDelta", "ThinkingBlock", "ThinkingDelta",
    "ToolCallArgumentsDelta", "ToolCallEnd", "ToolChoice", "ToolDef", "ToolError", "ToolExecutionCompleted",
    "ToolExecutionError", "ToolExecutionStarted", "ToolInvocation", "ToolLoopStream", "ToolNotFoundError",
    "ToolRegistry", "ToolResultBlock", "ToolTimeoutError", "ToolUseBlock", "TurnStream", "Usage", "__version__",
    "tool",
}
# Round 4 (DESIGN.md), one set per capability so each branch adds its own line.
EXPORTED |= {"McpToolCaller"}
EXPORTED |= {"McpAuthError", "McpOAuth", "TokenStorage", "InMemoryTokenStorage", "FileTokenStorage", "OAuthToken",
             "OAuthClientInfo", "console_authorize", "headless_authorize"}
EXPORTED |= {"OutputSchema", "OutputValidationError", "OutputRefusedError", "anthropic_output_format",
             "openai_response_format", "output_tool", "prompted_instructions", "responses_text_format",
             "retry_instructions"}
EXPORTED |= {"ImageBlock", "DocumentBlock"}
EXPORTED |= {"UsageLimits", "UsageLimitExceeded", "RunUsage"}  # limits; instrument() is in agcore_sync.telemetry
EXPORTED |= {"OpenAIResponsesProvider"}
EXPORTED |= {"GeminiProvider"}
EXPORTED |= {"McpResource", "McpResourceTemplate", "McpResourceContents", "McpPrompt", "McpPromptArgument",
             "McpPromptResult", "sampling_handler_for", "McpResourceTool"}
EXPORTED |= {"Approve", "Defer", "ApprovalRequired", "ToolApprovalRequest", "PausedTurn", "TurnPausedError",
             "TurnNotPausedError", "ApprovalDecisionError"}
EXPORTED |= {"SessionStore", "StoredSession", "SessionLease", "LeaseBackend", "SqliteSessionStore",
             "SessionNotFoundError", "SessionConflictError", "SessionBusyError", "SessionStoreError"}
EXPORTED |= {"BedrockProvider"}
EXPORTED |= {"FallbackProvider", "CircuitBreaker", "RateLimit", "RateLimitedProvider", "RateLimitWaitExceeded",
             "AllProvidersFailedError", "CircuitOpenError"}  # resilience; RedisRateLimitStore is in contrib.redis
EXPORTED |= {"agent_tool", "SubagentEvent", "handoff"}  # agents composition (issue 27)
EXPORTED |= {"ToolCall"}  # one shape of a tool call (issue 22 layout)


def test_every_name_in_all_is_importable_from_the_package():
    missing = [name for name in agcore_sync.__all__ if not hasattr(agcore_sync, name)]
    assert not missing


def test_all_has_no_duplicates():
    assert len(agcore_sync.__all__) == len(set(agcore_sync.__all__))


def test_every_public_name_has_a_docstring():
    undocumented = [name for name in agcore_sync.__all__
                    if name != "__version__" and not (getattr(agcore_sync, name).__doc__ or "").strip()]
    assert not undocumented


def test_all_is_exactly_the_public_api():
    # Equality, not a subset (httpx pins its list the same way): adding, removing or renaming a public
    # name is a decision, and this list is where it is made.
    assert set(agcore_sync.__all__) == EXPORTED


def test_dir_lists_every_exported_name():
    assert EXPORTED <= set(dir(agcore_sync))


def test_importing_the_package_does_not_import_jsonschema():
    import subprocess
    import sys

    code = "import sys, agcore_sync; print('jsonschema' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
