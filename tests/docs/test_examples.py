"""Every script in docs/examples runs as the docs show it."""

from __future__ import annotations

import contextlib
import os
import runpy
import socket
import subprocess
import sys
from pathlib import Path

import pytest

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


@pytest.mark.parametrize("path", sorted(p for p in EXAMPLES.glob("*.py") if p.name not in NOT_SCRIPTS),
                         ids=lambda p: p.name)
def test_the_example_runs(path, capsys, monkeypatch):
    if path.name in NEEDS:
        pytest.importorskip(NEEDS[path.name], reason=f"{path.name} needs the `{NEEDS[path.name]}` package")
    if path.name in NEEDS_FILES and not NEEDS_FILES[path.name].exists():
        pytest.skip(f"{path.name} needs {NEEDS_FILES[path.name].name}: run tests/node/install.sh")
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
