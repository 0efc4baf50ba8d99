"""Real job workers for the background-turn tests: ``rq worker`` and ``celery worker`` children.

Each worker is a child process in its own session, with an allow-listed
environment, its output in a temporary file (shown when a test fails, never
a pipe that could fill). ``stop()`` sends SIGTERM (a warm shutdown: the
running job ends first), waits :data:`STOP_TIMEOUT`, then SIGKILLs the
group; ``kill()`` SIGKILLs it at once. Both reap the child. RQ's work
horses call ``setsid()``, so a signal to the worker's group misses them:
they are found as the worker's children in ``/proc`` and killed first.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from typing import List, Optional

from tests.support.leaks import PROC

#: How long a stopping worker gets after SIGTERM before SIGKILL, and after SIGKILL.
STOP_TIMEOUT = 20.0

#: The repository root, the workers' import path (tests.contrib.jobs_app).
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: Variables a worker inherits; everything else is left out.
INHERITED = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")


def worker_env(redis_url: str, lease_ttl: float) -> dict:
    """The environment of a worker: allow-listed variables and the test app's settings."""
    env = {name: os.environ[name] for name in INHERITED if name in os.environ}
    env.update(PYTHONPATH=ROOT, PYTHONUNBUFFERED="1", AGCORE_JOBS_REDIS_URL=redis_url,
               AGCORE_JOBS_LEASE_TTL=str(lease_ttl))
    return env


def rq_command(redis_url: str, queue: str, name: str) -> List[str]:
    """``rq worker`` (the default forking Worker) on ``queue``."""
    return [sys.executable, "-m", "rq.cli", "worker", "--url", redis_url, "--name", name,
            "--path", ROOT, "--logging_level", "INFO", queue]


def celery_command(pool: str = "threads", concurrency: int = 1, name: str = "w1") -> List[str]:
    """``celery worker`` for tests.contrib.jobs_celery_app (broker from the environment)."""
    return [sys.executable, "-m", "celery", "-A", "tests.contrib.jobs_celery_app", "worker", "--pool", pool,
            "--concurrency", str(concurrency), "--hostname", f"{name}@%h", "--without-heartbeat",
            "--without-mingle", "--without-gossip", "--loglevel", "INFO"]


class WorkerProcess:
    """One worker child: ``start()``, ``stop()``, ``kill()``, ``log()``."""

    def __init__(self, command: List[str], env: dict) -> None:
        self.command = command
        self.env = env
        self.proc: Optional[subprocess.Popen] = None
        self._log = tempfile.TemporaryFile()

    def start(self) -> WorkerProcess:
        self.proc = subprocess.Popen(self.command, env=self.env, cwd=ROOT, stdin=subprocess.DEVNULL,
                                     stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)
        return self

    def log(self) -> str:
        """What the worker printed so far."""
        self._log.flush()
        self._log.seek(0)
        return self._log.read().decode(errors="replace")

    def _signal_group(self, sig: int) -> None:
        if sig == signal.SIGKILL:
            for pid in _children(self.proc.pid):  # RQ work horses, in sessions of their own
                try:
                    os.killpg(pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    def kill(self) -> None:
        """SIGKILL the worker and its children (RQ's work horse); reap it."""
        if self.proc is not None:
            self._signal_group(signal.SIGKILL)
            self.proc.wait(STOP_TIMEOUT)

    def stop(self) -> None:
        """Warm shutdown (SIGTERM), SIGKILL after STOP_TIMEOUT; reap; close the log."""
        if self.proc is not None and self.proc.poll() is None:
            self._signal_group(signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                pass
        if self.proc is not None:
            # Whatever is left of the group (a horse or pool thread stuck in a tool).
            self._signal_group(signal.SIGKILL)
            self.proc.wait(STOP_TIMEOUT)
        self._log.close()


def _children(parent: int) -> List[int]:
    """The pids whose parent is ``parent``."""
    found = []
    for entry in os.listdir(PROC):
        if not entry.isdigit():
            continue
        try:
            with open(f"{PROC}/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2:].split()[1]) == parent:
            found.append(int(entry))
    return found
