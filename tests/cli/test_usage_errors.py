"""Usage mistakes on the command line: one line (or the subcommand's usage), exit 2, the fix named."""

from __future__ import annotations

import pytest

from agcore_sync import Message, MessageRequest
from agcore_sync.cli.command import main
from agcore_sync.cli.demo import DemoProvider
from agcore_sync.cli.providers import PROVIDERS, provider_options
from tests.cli.helpers import run_cli


def one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("agcore-sync: error: ")
    assert "unexpected" not in lines[0] and "Traceback" not in captured.err
    return lines[0]


@pytest.mark.parametrize("provider", ["openai", "openai-responses"])
def test_a_base_url_without_a_scheme_is_a_usage_error_whose_hint_ends_in_v1(provider, capsys):
    status = main(["demo", "--provider", provider, "--model", "llama3.2", "--base-url", "localhost:11434"])

    line = one_error_line(capsys)
    assert status == 2
    assert "'localhost:11434' has no http:// or https:// scheme" in line
    assert "--base-url http://localhost:11434/v1" in line
    assert "OpenAI-compatible servers" in line and "/v1" in line


def test_a_base_url_without_a_scheme_in_the_environment_names_the_variable(monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_BASE_URL", "127.0.0.1:8000/v1")

    status = main(["demo", "--provider", "openai", "--model", "m"])

    line = one_error_line(capsys)
    assert status == 2
    assert "OPENAI_BASE_URL='127.0.0.1:8000/v1' has no http:// or https:// scheme" in line
    assert "OPENAI_BASE_URL=http://127.0.0.1:8000/v1 " in line


def test_an_anthropic_base_url_without_a_scheme_is_not_told_to_add_v1(capsys):
    status = main(["demo", "--provider", "anthropic", "--model", "m", "--base-url", "localhost:8080"])

    line = one_error_line(capsys)
    assert status == 2
    assert line.endswith("e.g. --base-url http://localhost:8080")


def test_a_base_url_with_another_scheme_is_a_usage_error(capsys):
    assert main(["chat", "--provider", "openai", "--model", "m", "--base-url", "ftp://host/v1"]) == 2
    assert "must be an http:// or https:// URL" in one_error_line(capsys)


@pytest.mark.parametrize("command", ["demo", "chat"])
def test_an_unknown_option_of_a_subcommand_prints_that_subcommand_s_usage(command):
    result = run_cli([command, "--bogus"])

    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith(f"usage: agcore-sync {command} [-h]")
    assert "[--provider {openai," in result.stderr  # the subcommand's own usage, with the model options
    assert result.stderr.rstrip().endswith(f"agcore-sync {command}: error: unrecognized arguments: --bogus")


def test_model_without_provider_names_every_provider_choice(capsys):
    assert main(["demo", "--model", "gpt-4o-mini"]) == 2

    line = one_error_line(capsys)
    assert line.endswith(f"--model and --base-url need {provider_options()}")
    for name in PROVIDERS:
        assert f"--provider {name}" in line
    assert "--provider openai-responses" in line


def test_the_provider_choices_are_the_one_list_the_messages_use(capsys):
    with pytest.raises(SystemExit):
        main(["demo", "--help"])

    assert "{" + ",".join(PROVIDERS) + "}" in capsys.readouterr().out


def test_the_demo_model_s_help_text_names_every_provider_choice():
    request = MessageRequest(model="agcore-demo", messages=[Message.user("tell me a story")])

    text = DemoProvider().chat(request).message.text

    assert text.endswith(f"Connect a real model with {provider_options()}.")
    for name in PROVIDERS:
        assert f"--provider {name}" in text


def test_the_provider_options_read_as_a_list():
    assert provider_options(("a",)) == "--provider a"
    assert provider_options(("a", "b")) == "--provider a or --provider b"
    assert provider_options(("a", "b", "c")) == "--provider a, --provider b or --provider c"
