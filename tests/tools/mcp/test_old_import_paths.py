"""``agcore_sync.tools.mcp``, the old place of the MCP package, still imports every name and module it offered."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

import agcore_sync.mcp

#: Every name the old package exported (its ``__all__`` before the move).
OLD_NAMES = [
    "McpClient", "McpToolResult", "McpTool", "McpToolCaller", "Transport", "StdioTransport", "HttpTransport",
    "RestartPolicy", "ServerFeatures", "McpResource", "McpResourceTemplate", "McpResourceContents", "McpPrompt",
    "McpPromptArgument", "McpPromptResult", "sampling_handler_for", "McpResourceTool",
]

#: The old submodules the docs named, with a public name of each and the module that now holds it.
OLD_MODULES = [
    ("client", "McpClient", "agcore_sync.mcp.client.session"),
    ("client", "RECONNECT_ADVICE", "agcore_sync.mcp.client.session"),
    ("restart", "RestartPolicy", "agcore_sync.mcp.client.restart"),
    ("sampling", "sampling_handler_for", "agcore_sync.mcp.client.sampling"),
    ("_features", "ServerFeatures", "agcore_sync.mcp.client.features"),
    ("transport", "Transport", "agcore_sync.mcp.transports.base"),
    ("stdio", "StdioTransport", "agcore_sync.mcp.transports.stdio"),
    ("http", "HttpTransport", "agcore_sync.mcp.transports.http"),
    ("jsonrpc", "parse_line", "agcore_sync.mcp.shared.jsonrpc"),
    ("protocol", "KNOWN_VERSIONS", "agcore_sync.mcp.shared.protocol"),
    ("content", "mcp_blocks", "agcore_sync.mcp.shared.content"),
    ("resources", "McpResource", "agcore_sync.mcp.shared.resources"),
    ("prompts", "McpPrompt", "agcore_sync.mcp.shared.prompts"),
    ("adapter", "McpTool", "agcore_sync.mcp.tools"),
    ("adapter", "content_blocks", "agcore_sync.mcp.tools"),
    ("resource_tool", "McpResourceTool", "agcore_sync.mcp.tools"),
    ("auth", "McpOAuth", "agcore_sync.mcp.auth"),
    ("auth.oauth", "headless_authorize", "agcore_sync.mcp.auth.oauth"),
    ("auth.storage", "FileTokenStorage", "agcore_sync.mcp.auth.storage"),
    ("auth.discovery", "ServerMetadata", "agcore_sync.mcp.auth.discovery"),
    ("auth.flows", "TOKEN_TIMEOUT", "agcore_sync.mcp.auth.flows"),
    ("auth.registration", "register_client", "agcore_sync.mcp.auth.registration"),
    ("auth.jwt_assertion", "private_key_signer", "agcore_sync.mcp.auth.jwt_assertion"),
]


@pytest.mark.parametrize("name", OLD_NAMES)
def test_each_old_name_imports_from_the_old_path_as_the_same_object(name):
    old = importlib.import_module("agcore_sync.tools.mcp")
    assert getattr(old, name) is getattr(agcore_sync.mcp, name)
    assert name in old.__all__


def test_the_old_package_exports_exactly_its_old_names():
    import agcore_sync.tools.mcp as old

    assert sorted(old.__all__) == sorted(OLD_NAMES)
    assert set(OLD_NAMES) <= set(agcore_sync.mcp.__all__)


@pytest.mark.parametrize(("old", "name", "new"), OLD_MODULES, ids=[f"{o}.{n}" for o, n, _ in OLD_MODULES])
def test_each_old_submodule_path_imports_the_new_module(old, name, new):
    module = importlib.import_module(f"agcore_sync.tools.mcp.{old}")
    assert module is importlib.import_module(new)
    exec(f"from agcore_sync.tools.mcp.{old} import {name} as found", namespace := {})
    assert namespace["found"] is getattr(importlib.import_module(new), name)


def test_old_paths_work_in_a_fresh_interpreter_in_every_import_form():
    code = (
        "import agcore_sync.tools.mcp.client\n"
        "from agcore_sync.tools.mcp.stdio import StdioTransport\n"
        "from agcore_sync.tools.mcp import jsonrpc, McpClient\n"
        "import agcore_sync.tools.mcp.auth.storage as storage\n"
        "import agcore_sync.mcp.client.session as session\n"
        "assert agcore_sync.tools.mcp.client is session and McpClient is session.McpClient\n"
        "assert StdioTransport.__module__ == 'agcore_sync.mcp.transports.stdio'\n"
        "assert jsonrpc.__name__ == 'agcore_sync.mcp.shared.jsonrpc'\n"
        "assert storage.__name__ == 'agcore_sync.mcp.auth.storage'\n"
        "import json; print(json.dumps('ok'))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == "ok"


def test_importing_the_package_imports_neither_mcp_path():
    code = "import agcore_sync, json, sys; print(json.dumps(sorted(m for m in sys.modules if 'mcp' in m)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout.splitlines()[-1]) == []


def test_a_top_level_name_resolves_from_the_new_package():
    import agcore_sync

    assert agcore_sync.McpClient is agcore_sync.mcp.McpClient
    assert agcore_sync.McpOAuth is agcore_sync.mcp.auth.McpOAuth
    assert agcore_sync.McpClient.__module__.startswith("agcore_sync.mcp.")
