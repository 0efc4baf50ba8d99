"""The server's environment: secrets of the parent stay in the parent."""

from __future__ import annotations

import json

import pytest

from agcore_sync.mcp import StdioTransport


def server_env_keys(open_client, sdk_server, **kwargs):
    with open_client(sdk_server, **kwargs) as client:
        return set(json.loads(client.call_tool("env_keys").text))


def test_the_default_safe_environment_hides_api_keys_from_the_server(open_client, sdk_server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-parent-secret")
    monkeypatch.setenv("AGCORE_TEST_SECRET_TOKEN", "also-secret")
    keys = server_env_keys(open_client, sdk_server)
    assert "OPENAI_API_KEY" not in keys
    assert "AGCORE_TEST_SECRET_TOKEN" not in keys
    assert "PATH" in keys


def test_safe_passes_only_the_allow_list_plus_what_env_adds(open_client, sdk_server, monkeypatch):
    monkeypatch.setenv("HOME", "/home/someone")
    keys = server_env_keys(open_client, sdk_server, env={"SERVER_SETTING": "1"})
    assert "SERVER_SETTING" in keys and "HOME" in keys
    # Python itself may add locale variables at start-up (PEP 538); nothing else appears.
    allowed = {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "SERVER_SETTING", "LC_CTYPE"}
    assert keys <= allowed


def test_all_passes_the_whole_environment(open_client, sdk_server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-parent-secret")
    assert "OPENAI_API_KEY" in server_env_keys(open_client, sdk_server, inherit_env="all")


def test_none_passes_nothing_but_env(open_client, sdk_server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-parent-secret")
    keys = server_env_keys(open_client, sdk_server, inherit_env="none", env={"ONLY_THIS": "1"})
    assert "ONLY_THIS" in keys
    assert "OPENAI_API_KEY" not in keys and "PATH" not in keys


def test_an_unknown_inherit_env_mode_is_refused():
    with pytest.raises(ValueError, match="inherit_env"):
        StdioTransport("server", inherit_env="some")
