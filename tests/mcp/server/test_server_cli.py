"""``agcore-sync mcp-serve module:server`` over stdio (a real subprocess) with our own client, and its errors."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from agcore_sync.cli import main
from agcore_sync.mcp import HttpTransport, McpClient, StdioTransport

ROOT = Path(__file__).resolve().parents[3]


def test_mcp_serve_serves_a_module_attribute_over_stdio() -> None:
    argv = ["-c", f"import sys; sys.path[:0] = [{str(ROOT)!r}, {str(Path(__file__).parent)!r}]; "
                  "from agcore_sync.cli import main; sys.exit(main(['mcp-serve', 'demo_server:served']))"]
    client = McpClient("demo", StdioTransport(sys.executable, argv), timeout=30.0)
    with client.connect():
        assert client.call_tool("add", {"a": 3, "b": 4}).structured_content == {"result": 7}


def test_mcp_serve_names_a_target_that_is_not_a_server(capsys) -> None:
    assert main(["mcp-serve", "json:dumps"]) == 2
    assert "not an McpServer" in capsys.readouterr().err
    assert main(["mcp-serve", "nocolon"]) == 2


def test_mcp_serve_http_serves_streamable_http_until_interrupted() -> None:
    code = (f"import sys; sys.path[:0] = [{str(ROOT)!r}, {str(Path(__file__).parent)!r}]; "
            "from agcore_sync.cli import main; sys.exit(main(['mcp-serve', 'demo_server:served', '--http', "
            "'--port', '0']))")
    proc = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        assert line.startswith("serving demo on http://127.0.0.1:"), line
        url = line.split()[-1]
        client = McpClient("demo", HttpTransport(url), timeout=30.0)
        with client.connect():
            assert client.read_resource("demo://users/ada/name")[0].text == "name of ada"
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 130
        proc.stderr.close()
