"""Helpers for the command-line tests: a child process read up to markers.

:class:`Child` runs ``python -m agcore_sync ...`` on a pseudo-terminal (so
the child sees a terminal: readline, the spinner) or on pipes, and reads its
output with ``select`` until an expected marker appears, within a deadline:
no sleeps. The wire bodies a scripted server answers with are in
:mod:`tests.support.wire`. Import from the repository root::

    from tests.cli.helpers import Child, run_cli
"""

from __future__ import annotations

import codecs
import os
import select
import signal
import subprocess
import sys
import time
from typing import Dict, Optional, Sequence, Tuple

#: How long one expect() may wait for its marker.
EXPECT_TIMEOUT = 30.0

#: How long a child may take to exit once it was told to.
EXIT_TIMEOUT = 30.0

# -- a child process read up to markers -------------------------------------------


def child_env() -> Dict[str, str]:
    """Return the environment for a child: ours (keys already removed by conftest), a dumb terminal."""
    env = dict(os.environ)
    env["TERM"] = "dumb"
    env.pop("PYTHONSTARTUP", None)
    return env


class Child:
    """A ``python -m agcore_sync`` process whose output is read until markers appear.

    Args:
        args: the arguments after ``python -m agcore_sync``.
        use_pty: run on a pseudo-terminal (stdin, stdout and stderr), else
            on pipes (stderr kept apart, read at :meth:`finish`).
        cwd: the working directory.
    """

    def __init__(self, args: Sequence[str], *, use_pty: bool, cwd: Optional[str] = None) -> None:
        argv = [sys.executable, "-m", "agcore_sync", *args]
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.output = ""
        self._pos = 0
        self._eof = False
        if use_pty:
            master, slave = os.openpty()
            try:
                self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=child_env(),
                                             cwd=cwd, start_new_session=True)
            finally:
                os.close(slave)
            self._read_fd = self._write_fd = master
            self._master: Optional[int] = master
        else:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, env=child_env(), cwd=cwd, start_new_session=True)
            self._read_fd = self.proc.stdout.fileno()
            self._write_fd = self.proc.stdin.fileno()
            self._master = None

    def _read_some(self, deadline: float) -> bool:
        """Read what is available before ``deadline``; False at end of output or when time is up."""
        remaining = deadline - time.monotonic()
        if self._eof or remaining <= 0:
            return False
        ready, _, _ = select.select([self._read_fd], [], [], remaining)
        if not ready:
            return False
        try:
            data = os.read(self._read_fd, 65536)
        except OSError:  # EIO: the pty's other side closed (the child exited)
            data = b""
        if not data:
            self._eof = True
            self.output += self._decoder.decode(b"", final=True)
            return False
        self.output += self._decoder.decode(data)
        return True

    def expect(self, marker: str, timeout: float = EXPECT_TIMEOUT) -> str:
        """Read until ``marker`` appears after the previous marker; return the text up to its end.

        Raises:
            AssertionError: the marker did not appear within ``timeout`` or before the output ended.
        """
        deadline = time.monotonic() + timeout
        while True:
            index = self.output.find(marker, self._pos)
            if index >= 0:
                end = index + len(marker)
                seen, self._pos = self.output[self._pos:end], end
                return seen
            if not self._read_some(deadline):
                if self._eof or time.monotonic() >= deadline:
                    raise AssertionError(f"{marker!r} did not appear (eof={self._eof}); "
                                         f"output after the last marker:\n{self.output[self._pos:]!r}")

    def send_line(self, text: str) -> None:
        """Type ``text`` and Enter."""
        os.write(self._write_fd, text.encode("utf-8") + b"\n")

    def interrupt(self) -> None:
        """Send SIGINT, as Ctrl-C on its terminal would."""
        self.proc.send_signal(signal.SIGINT)

    def finish(self, timeout: float = EXIT_TIMEOUT) -> Tuple[int, str]:
        """Close stdin (pipes), read the rest of the output, wait for the exit; return (status, stderr)."""
        if self._master is None and self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        deadline = time.monotonic() + timeout
        while not self._eof and time.monotonic() < deadline:
            self._read_some(deadline)
        status = self.proc.wait(max(0.0, deadline - time.monotonic()))
        stderr = ""
        if self.proc.stderr is not None:
            stderr = self.proc.stderr.read().decode("utf-8", errors="replace")
        return status, stderr

    def close(self) -> None:
        """Kill the child if it still runs, reap it and close the descriptors."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(EXIT_TIMEOUT)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        if self._master is not None:
            os.close(self._master)
            self._master = None


def run_cli(args: Sequence[str], timeout: float = EXIT_TIMEOUT) -> subprocess.CompletedProcess:
    """Run ``python -m agcore_sync ARGS`` to its end on pipes, stdin empty."""
    return subprocess.run([sys.executable, "-m", "agcore_sync", *args], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, env=child_env(), timeout=timeout)
