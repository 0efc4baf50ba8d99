"""Every script in docs/examples runs as the docs show it.

Each script runs in this process (``runpy``); the MCP scripts also run the
way docs/mcp.rst and docs/howto/mcp_servers.rst tell a reader to, ``python
docs/examples/<name>.py`` in a fresh interpreter that can import agcore_sync
and nothing else of the repository, so a script that borrows from tests/
fails here.
"""

from __future__ import annotations

import contextlib
import os
import runpy
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import agcore_sync
from tests.support.redis_server import SKIP_REASON, RedisServer, redis_server_path

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
# Modules that define an app for a server rather than run as scripts; tested elsewhere.
NOT_SCRIPTS = {"flask_app.py", "mcp_oauth_flask.py", "ag_ui_flask.py"}
# Scripts that need an optional test dependency: file name -> the module they need.
NEEDS = {
    "mcp_stdio.py": "mcp",  # they start tests/mcp_servers/sdk_server.py (the MCP Python SDK, Python >= 3.10)
    "mcp_http.py": "mcp",
    "observability.py": "opentelemetry.sdk",  # the otel extra and the SDK (both test dependencies)
    "background_turn.py": "redis",
    "background_runner.py": "redis",
}
# Scripts that need a file the suite installs apart: file name -> that file.
NEEDS_FILES = {
    "mcp_everything.py": Path(__file__).resolve().parents[1] / "node" / "node_modules" / "@modelcontextprotocol"
    / "server-everything" / "dist" / "index.js",  # tests/node/install.sh
}
# Scripts that need a Redis server: the test starts one on a free port and passes it as REDIS_URL.
NEEDS_REDIS_SERVER = {"background_turn.py", "background_runner.py"}
# Scripts run from a folder where what they start is installed: file name -> that folder.
# (npx then finds the npm server tests/node/install.sh installed there; nothing is downloaded.)
RUN_IN = {"mcp_everything.py": Path(__file__).resolve().parents[1] / "node"}
# The MCP scripts run as the docs say, in a fresh interpreter (see the module docstring).
MCP_SCRIPTS = ["mcp_stdio.py", "mcp_http.py", "mcp_oauth_script.py", "mcp_everything.py"]
#: Seconds one MCP script may take as a subprocess.
SCRIPT_TIMEOUT = 120.0


def _skip_unless_runnable(name: str) -> None:
    if name in NEEDS:
        pytest.importorskip(NEEDS[name], reason=f"{name} needs the `{NEEDS[name]}` package")
    if name in NEEDS_FILES and not NEEDS_FILES[name].exists():
        pytest.skip(f"{name} needs {NEEDS_FILES[name].name}: run tests/node/install.sh")
    if name in RUN_IN and shutil.which("npx") is None:
        pytest.skip(f"{name} needs node/npx")


@pytest.mark.parametrize("path", sorted(p for p in EXAMPLES.glob("*.py") if p.name not in NOT_SCRIPTS),
                         ids=lambda p: p.name)
def test_the_example_runs(path, capsys, monkeypatch):
    _skip_unless_runnable(path.name)
    if path.name in RUN_IN:
        monkeypatch.chdir(RUN_IN[path.name])
    with contextlib.ExitStack() as stack:
        if path.name in NEEDS_REDIS_SERVER:
            if redis_server_path() is None:
                pytest.skip(SKIP_REASON)
            monkeypatch.setenv("REDIS_URL", stack.enter_context(RedisServer()).url)
        runpy.run_path(str(path), run_name="__main__")
    assert capsys.readouterr().out.strip()


def test_background_turn_without_redis_says_so_in_one_line_and_exits_non_zero():
    pytest.importorskip("redis", reason="background_turn.py needs the `redis` package")
    with socket.socket() as sock:  # a port where nothing listens
        sock.bind(("127.0.0.1", 0))
        url = f"redis://127.0.0.1:{sock.getsockname()[1]}/0"
    done = subprocess.run([sys.executable, str(EXAMPLES / "background_turn.py")], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "REDIS_URL": url})
    assert done.returncode != 0 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and "needs a Redis server" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("folder", ["flask_worker", "django_worker"])
def test_the_redis_snapshot_the_worker_readmes_leave_behind_is_ignored_by_git(folder):
    if not (EXAMPLES.parents[1] / ".git").exists():
        pytest.skip("not a git checkout")
    snapshot = EXAMPLES / folder / "dump.rdb"  # where `redis-server --port 6379` of the README writes it
    done = subprocess.run(["git", "check-ignore", "-q", str(snapshot)], cwd=EXAMPLES, capture_output=True)
    assert done.returncode == 0, f"{snapshot} is not ignored"


@pytest.mark.parametrize("name", MCP_SCRIPTS)
def test_the_mcp_script_runs_as_python_path_with_only_agcore_sync_importable(name, tmp_path):
    source = (EXAMPLES / name).read_text("utf-8")
    assert '"tests"' not in source and "from tests" not in source and "import tests" not in source
    _skip_unless_runnable(name)
    # A folder holding agcore_sync only (the copy under test), so the repository's tests/ is not importable.
    importable = tmp_path / "site"
    importable.mkdir()
    (importable / "agcore_sync").symlink_to(Path(agcore_sync.__file__).resolve().parent)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(importable)
    root = EXAMPLES.parents[1]
    done = subprocess.run([sys.executable, str(EXAMPLES / name)], cwd=RUN_IN.get(name, root), env=env,
                          capture_output=True, text=True, timeout=SCRIPT_TIMEOUT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip()
