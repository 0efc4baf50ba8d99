"""``--fallback PROVIDER:MODEL``, ``--rpm`` and ``--tpm``: what the command line builds from them."""

from __future__ import annotations

import contextlib

import pytest

from agcore_sync import AnthropicProvider, FallbackProvider, OpenAIProvider, RateLimit, RateLimitedProvider
from agcore_sync.cli.command import _parse
from agcore_sync.cli.setup import CliError, build

BASE = ["demo", "--provider", "openai", "--model", "gpt-4o-mini", "--base-url", "http://127.0.0.1:9/v1",
        "--no-demo-tools"]


def built(argv, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    stack = contextlib.ExitStack()
    with stack:
        setup = build(_parse(argv), stack)
        return setup, setup.provider


def test_fallbacks_and_limits_wrap_the_provider_rate_limit_outside_the_fallback_list(monkeypatch):
    setup, provider = built([*BASE, "--fallback", "anthropic:claude-haiku-4-5", "--rpm", "60", "--tpm", "100000"],
                            monkeypatch)
    assert isinstance(provider, RateLimitedProvider)
    assert provider.limit == RateLimit(requests_per_minute=60, tokens_per_minute=100_000)
    fallback = provider.inner
    assert isinstance(fallback, FallbackProvider)
    assert [type(p) for p in fallback.providers] == [OpenAIProvider, AnthropicProvider]
    assert [p.model for p in fallback.providers] == ["gpt-4o-mini", "claude-haiku-4-5"]
    assert "falling back to anthropic:claude-haiku-4-5" in setup.description


def test_without_the_flags_the_provider_is_the_plain_one(monkeypatch):
    _, provider = built(BASE, monkeypatch)
    assert isinstance(provider, OpenAIProvider)


def test_rpm_alone_limits_requests_only(monkeypatch):
    _, provider = built([*BASE, "--rpm", "30"], monkeypatch)
    assert provider.limit == RateLimit(requests_per_minute=30) and isinstance(provider.inner, OpenAIProvider)


@pytest.mark.parametrize("spec", ["anthropic", "mistral:large", "openai:"])
def test_a_fallback_that_is_not_provider_colon_model_is_one_line(monkeypatch, spec):
    with pytest.raises(CliError, match="PROVIDER:MODEL"):
        built([*BASE, "--fallback", spec], monkeypatch)


@pytest.mark.parametrize("value", ["0", "-5", "many", "inf"])
def test_a_limit_that_is_not_a_positive_number_is_a_usage_error(value, capsys):
    with pytest.raises(SystemExit) as caught:
        _parse([*BASE, "--rpm", value])
    assert caught.value.code == 2 and "--rpm" in capsys.readouterr().err


def test_the_demo_falls_back_to_the_next_provider_when_the_first_answers_503(stream_server, monkeypatch):
    import json

    from tests.cli.helpers import run_cli
    from tests.support.wire import openai_error_body
    from tests.support.wire import openai_text_stream as text_response

    stream_server.add_response([json.dumps(openai_error_body("no healthy upstream", "server_error")).encode()],
                               status=503, headers={"Content-Type": "application/json"})
    stream_server.add_response(text_response("chatcmpl-2", ["Hello from ", "the fallback."], usage=(20, 5)))
    monkeypatch.setenv("OPENAI_BASE_URL", f"{stream_server.url}/v1")  # where the fallback's URL comes from
    result = run_cli(["demo", "--provider", "openai", "--model", "gpt-4o-mini", "--base-url",
                      f"{stream_server.url}/v1", "--retries", "0", "--no-demo-tools", "--question", "hi",
                      "--fallback", "openai:gpt-4o", "--rpm", "60", "--tpm", "100000"])
    assert result.returncode == 0, result.stderr
    assert "Hello from the fallback." in result.stdout
    assert [request.json["model"] for request in stream_server.requests] == ["gpt-4o-mini", "gpt-4o"]
