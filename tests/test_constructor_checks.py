"""Public constructors refuse what a user can get wrong, at once, in one line naming the argument."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest
import requests

from agcore_sync import (
    AgentSession,
    AnthropicProvider,
    CycleConfig,
    Hooks,
    HttpTransport,
    LlmCycle,
    McpClient,
    MockProvider,
    OpenAIProvider,
    OpenAIResponsesProvider,
    RetryConfig,
    RetryProvider,
    StdioTransport,
    ToolRegistry,
)

PROVIDERS = [OpenAIProvider, OpenAIResponsesProvider, AnthropicProvider]


def refused(exc_type, call, *names):
    with pytest.raises(exc_type) as caught:
        call()
    message = str(caught.value)
    assert "\n" not in message
    for name in names:
        assert name in message, message
    return message


@pytest.mark.parametrize("provider", PROVIDERS, ids=lambda p: p.__name__)
@pytest.mark.parametrize("kwargs, exc_type, named", [
    ({"base_url": 123}, TypeError, "base_url"),
    ({"base_url": "localhost:8000/v1"}, ValueError, "base_url"),
    ({"base_url": "ftp://example.com"}, ValueError, "base_url"),
    ({"timeout": "30"}, TypeError, "timeout"),
    ({"timeout": 0}, ValueError, "timeout"),
    ({"timeout": -1.5}, ValueError, "timeout"),
    ({"timeout": (5, "x")}, TypeError, "timeout"),
    ({"model": 4}, TypeError, "model"),
    ({"api_key": 12345}, TypeError, "api_key"),
    ({"session": "not a session"}, TypeError, "session"),
    ({"extra_headers": {"X-Id": 7}}, TypeError, "extra_headers"),
    ({"extra_headers": ["a"]}, TypeError, "extra_headers"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_providers_check_each_argument(provider, kwargs, exc_type, named):
    refused(exc_type, lambda: provider(**kwargs), named, provider.__name__)


@pytest.mark.parametrize("kwargs, exc_type, named", [
    ({"store": "yes"}, TypeError, "store"),
    ({"encrypted_reasoning": "auto"}, TypeError, "encrypted_reasoning"),
    ({"reasoning_summary": "verbose"}, ValueError, "reasoning_summary"),
    ({"azure": 1}, TypeError, "azure"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_the_responses_provider_checks_its_own_arguments(kwargs, exc_type, named):
    refused(exc_type, lambda: OpenAIResponsesProvider(**kwargs), named, "OpenAIResponsesProvider")


def test_a_base_url_without_a_scheme_is_explained():
    message = refused(ValueError, lambda: OpenAIProvider(base_url="localhost:11434/v1"), "base_url")
    assert "http://localhost:11434/v1" in message


@pytest.mark.parametrize("provider", PROVIDERS, ids=lambda p: p.__name__)
def test_providers_accept_what_requests_accepts(provider):
    with requests.Session() as session:
        made = provider(base_url="http://127.0.0.1:9/v1", timeout=(3.05, 27), session=session,
                        extra_headers={"X-Trace": "1"})
        assert made.timeout == (3.05, 27)
    assert provider(timeout=None).timeout is None


@pytest.mark.parametrize("make, named", [
    (lambda: AgentSession("gpt-4o-mini"), "provider"),
    (lambda: AgentSession(MockProvider([]), "gpt-4o-mini"), "config"),
    (lambda: AgentSession(MockProvider([]), registry=[]), "registry"),
    (lambda: AgentSession(MockProvider([]), hooks={}), "hooks"),
], ids=["provider", "config", "registry", "hooks"])
def test_a_session_checks_its_parts(make, named):
    message = refused(TypeError, make, "AgentSession", named)
    if named == "provider":
        assert "LlmProvider" in message and "'gpt-4o-mini'" in message


@pytest.mark.parametrize("make, named", [
    (lambda: LlmCycle(None), "provider"),
    (lambda: LlmCycle(MockProvider([]), {"model": "x"}), "config"),
    (lambda: LlmCycle(MockProvider([]), hooks=print), "hooks"),
], ids=["provider", "config", "hooks"])
def test_a_cycle_checks_its_parts(make, named):
    refused(TypeError, make, "LlmCycle", named)


@pytest.mark.parametrize("kwargs, exc_type, named", [
    ({"model": 3}, TypeError, "model"),
    ({"max_tokens": "100"}, TypeError, "max_tokens"),
    ({"max_tokens": 0}, ValueError, "max_tokens"),
    ({"temperature": "hot"}, TypeError, "temperature"),
    ({"temperature": -0.1}, ValueError, "temperature"),
    ({"max_turns": 0}, ValueError, "max_turns"),
    ({"max_tool_turns": 2.5}, TypeError, "max_tool_turns"),
    ({"tool_timeout_secs": "30"}, TypeError, "tool_timeout_secs"),
    ({"tool_timeout_secs": 0}, ValueError, "tool_timeout_secs"),
    ({"max_tool_result_bytes": -1}, ValueError, "max_tool_result_bytes"),
    ({"max_repeated_tool_calls": True}, TypeError, "max_repeated_tool_calls"),
    ({"retry": 3}, TypeError, "retry"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_cycle_config_checks_each_field(kwargs, exc_type, named):
    refused(exc_type, lambda: CycleConfig(**kwargs), "CycleConfig", named)


def test_a_number_of_seconds_may_be_any_real_number_but_not_a_decimal():
    # int and float are checked without the numbers module; a Fraction loads it, and is a real number.
    assert CycleConfig(tool_timeout_secs=Fraction(3, 2)).tool_timeout_secs == Fraction(3, 2)
    assert OpenAIProvider(timeout=Fraction(1, 2)).timeout == Fraction(1, 2)
    refused(TypeError, lambda: CycleConfig(tool_timeout_secs=Decimal("1.5")), "CycleConfig", "tool_timeout_secs")


def test_cycle_config_still_takes_none_and_its_defaults():
    config = CycleConfig(model=None, max_tokens=None, temperature=0, tool_timeout_secs=None,
                         max_tool_result_bytes=None, max_repeated_tool_calls=None, retry=None)
    assert config.temperature == 0


@pytest.mark.parametrize("make, exc_type, named", [
    (lambda: RetryProvider("openai"), TypeError, "inner"),
    (lambda: RetryProvider(MockProvider([]), {"max_retries": 2}), TypeError, "config"),
    (lambda: RetryProvider(MockProvider([]), RetryConfig(), sleep=5), TypeError, "sleep"),
    (lambda: ToolRegistry(permission_checker=object()), TypeError, "permission_checker"),
    (lambda: ToolRegistry(max_workers=0), ValueError, "max_workers"),
    (lambda: ToolRegistry(max_workers="4"), TypeError, "max_workers"),
    (lambda: StdioTransport("npx -y server"[:0]), TypeError, "command"),
    (lambda: StdioTransport("npx", "-y server"), TypeError, "args"),
    (lambda: StdioTransport("npx", [1]), TypeError, "args"),
    (lambda: StdioTransport("npx", env={"A": 1}), TypeError, "env"),
    (lambda: StdioTransport("npx", cwd=3), TypeError, "cwd"),
    (lambda: HttpTransport("localhost:3000/mcp"), ValueError, "url"),
    (lambda: HttpTransport(b"http://x"), TypeError, "url"),
    (lambda: HttpTransport("http://127.0.0.1:9/mcp", headers={"k": 1}), TypeError, "headers"),
    (lambda: HttpTransport("http://127.0.0.1:9/mcp", timeout="5"), TypeError, "timeout"),
    (lambda: McpClient("", StdioTransport("npx")), TypeError, "server_name"),
    (lambda: McpClient("s", "npx -y server"), TypeError, "transport"),
    (lambda: McpClient("s", StdioTransport("npx"), timeout=-1), ValueError, "timeout"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_other_constructors_check_each_argument(make, exc_type, named):
    refused(exc_type, make, named)


def test_a_lone_string_for_args_says_how_to_write_one_item():
    message = refused(TypeError, lambda: StdioTransport("npx", "-y"), "args")
    assert "['-y']" in message


def test_hooks_and_sessions_still_accept_what_they_did():
    with ToolRegistry() as registry:
        session = AgentSession(MockProvider([MockProvider.text("ok")]), CycleConfig(), registry, hooks=Hooks())
        assert session.submit_turn("hi").message.text == "ok"
