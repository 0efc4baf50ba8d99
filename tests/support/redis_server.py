"""A real redis-server for the tests: a child process on 127.0.0.1 and a free port.

Started once per test session by the ``redis_server`` fixture
(``tests/contrib/conftest.py``) and by the docs tests that run the Redis
examples. Readiness is the server's own "ready to accept connections" log
line, read from its stdout pipe with a bounded ``select``; no polling. After
that the pipe is closed: Redis ignores SIGPIPE, so later log lines are
simply dropped and can never fill a pipe nobody reads.

``bash tests/redis/install.sh`` installs the binary (Debian's package).
"""

from __future__ import annotations

import os
import select
import shutil
import socket
import subprocess
import tempfile
from typing import List, Optional

#: How long a starting server gets to log that it is ready.
READY_TIMEOUT = 20.0

#: How long a stopping server gets after SIGTERM before SIGKILL, and after SIGKILL.
STOP_TIMEOUT = 10.0

#: Ports tried before giving up (another program may take the free port first).
PORT_ATTEMPTS = 3

SKIP_REASON = "redis-server is not installed; run `bash tests/redis/install.sh` (Debian's redis-server package)"


def redis_server_path() -> Optional[str]:
    """Return the redis-server binary, or None if it is not installed."""
    return shutil.which("redis-server")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    """One redis-server child: ``start()``, ``url`` / ``port``, ``stop()`` (also a context manager)."""

    def __init__(self) -> None:
        self.port = 0
        self._proc: Optional[subprocess.Popen] = None
        self._dir: Optional[tempfile.TemporaryDirectory] = None

    @property
    def url(self) -> str:
        """The server's ``redis://`` URL."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        """Start the server; raise RuntimeError with its log if it does not get ready."""
        binary = redis_server_path()
        if binary is None:
            raise RuntimeError(SKIP_REASON)
        self._dir = tempfile.TemporaryDirectory(prefix="agcore-redis-")
        log = b""
        for _ in range(PORT_ATTEMPTS):
            self.port = _free_port()
            ready, log = self._spawn(binary)
            if ready:
                return self
        self.stop()
        raise RuntimeError(f"redis-server did not start on 127.0.0.1:{self.port}:\n{log.decode(errors='replace')}")

    def _spawn(self, binary: str) -> tuple[bool, bytes]:
        args: List[str] = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                           "--appendonly", "no", "--dir", self._dir.name, "--daemonize", "no", "--loglevel", "notice"]
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
        fd = proc.stdout.fileno()
        log = b""
        try:
            while b"ready to accept connections" not in log.lower():
                readable, _, _ = select.select([fd], [], [], READY_TIMEOUT)
                chunk = os.read(fd, 65536) if readable else b""
                if not chunk:  # timed out, or the server exited (port taken)
                    proc.kill()
                    proc.wait(STOP_TIMEOUT)
                    return False, log
                log += chunk
        finally:
            proc.stdout.close()
        self._proc = proc
        return True, log

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL) and reap it; remove its directory."""
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(STOP_TIMEOUT)
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
