"""The processes behind the example web apps' tests: gunicorn, RQ and Celery workers.

Each :class:`Service` is a child started in its own session (process
group), with its output in a log file of the test's temp directory (a file,
not a pipe: nobody has to drain it) and stopped by :meth:`Service.stop`:
SIGTERM to the group, a bounded wait, then SIGKILL and a reap. gunicorn
gets a listening socket the test bound on port 0 (``--bind fd://N``), so the
port is known before it starts and requests wait in the backlog until a
worker accepts them: no readiness polling.

:class:`SseClient` reads an event stream over HTTP (``requests``) with the
library's own SSE parser.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence

import requests

from agcore_sync._http.sse import SseEvent, SseParser

#: The repository's root (on the children's PYTHONPATH, so they import this checkout).
ROOT = Path(__file__).resolve().parents[2]

#: How long a stopping child gets after SIGTERM (RQ and Celery finish their job first), then after SIGKILL.
STOP_TIMEOUT = 20.0

#: Seconds a test's HTTP request may take (a worker may still be booting).
HTTP_TIMEOUT = 30.0


class Service:
    """One child process: ``args`` run in ``cwd`` with ``env``; output in ``log``."""

    def __init__(self, name: str, args: Sequence[str], *, cwd: Path, env: Dict[str, str], log_dir: Path,
                 pass_fds: Sequence[int] = ()) -> None:
        self.name = name
        self.log = log_dir / f"{name}.log"
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(list(args), cwd=str(cwd), env=env, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True, pass_fds=tuple(pass_fds))

    @property
    def pid(self) -> int:
        """The child's pid."""
        return self.proc.pid

    def output(self) -> str:
        """The child's output so far (for failure messages)."""
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        """SIGTERM the child's process group, wait, SIGKILL it if needed, and reap the child."""
        if self.proc.poll() is None:
            _signal_group(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                pass
        _signal_group(self.proc.pid, signal.SIGKILL)  # leftovers of the group (a work horse, a pool child)
        self.proc.wait(STOP_TIMEOUT)


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def child_env(redis_url: str, cwd: Path, **extra: str) -> Dict[str, str]:
    """An allow-listed environment for the children: no API keys, this checkout and ``cwd`` importable."""
    env = {name: os.environ[name] for name in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR") if name in os.environ}
    env.update(PYTHONPATH=os.pathsep.join([str(cwd), str(ROOT)]), REDIS_URL=redis_url, PYTHONUNBUFFERED="1")
    env.update(extra)
    return env


class Gunicorn(Service):
    """gunicorn serving ``app`` (``module:callable``) with ``workers`` sync worker processes on a free port."""

    def __init__(self, app: str, *, workers: int, cwd: Path, env: Dict[str, str], log_dir: Path) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        try:
            fd = listener.fileno()
            # --timeout: a sync worker streaming a long turn must not be taken for a hung one.
            super().__init__("gunicorn", [sys.executable, "-m", "gunicorn", "--workers", str(workers),
                                          "--bind", f"fd://{fd}", "--timeout", "120", "--graceful-timeout", "5",
                                          "--log-level", "info", app],
                             cwd=cwd, env=env, log_dir=log_dir, pass_fds=[fd])
        finally:
            listener.close()  # gunicorn holds its own copy

    @property
    def url(self) -> str:
        """The app's base URL."""
        return f"http://127.0.0.1:{self.port}"


class SseClient:
    """One event-stream request; iterate :meth:`events` (the ``retry``/comment frames are skipped)."""

    def __init__(self, http: requests.Session, url: str, last_event_id: Optional[str] = None) -> None:
        headers = {"Accept": "text/event-stream"}
        if last_event_id:
            headers["Last-Event-ID"] = last_event_id
        self.response = http.get(url, headers=headers, stream=True, timeout=HTTP_TIMEOUT)
        self.response.raise_for_status()
        self.pid = int(self.response.headers["X-Worker-Pid"])
        self._parser = SseParser()

    def events(self) -> Iterator[SseEvent]:
        """Yield the stream's events (``message`` and ``end``) as they come."""
        for chunk in self.response.raw.stream(1024, decode_content=True):
            for event in self._parser.feed(chunk):
                if event.data or event.event != "message":
                    yield event

    def close(self) -> None:
        """Drop the connection (as a browser that goes away)."""
        self.response.close()

    def __enter__(self) -> SseClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def read_until_end(client: SseClient) -> List[SseEvent]:
    """Return the stream's events up to (not including) the ``end`` frame; fail if it never comes."""
    events = []
    for event in client.events():
        if event.event == "end":
            return events
        events.append(event)
    raise AssertionError(f"the stream ended without an end frame after {len(events)} events")
