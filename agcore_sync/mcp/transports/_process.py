"""A server's process group: spawn it, stop it in the specification's order, reap it.

:class:`~agcore_sync.mcp.transports.stdio.StdioTransport` owns the processes;
this module holds the steps it takes on them, which touch no pipe or thread
of the transport:

1. :func:`spawn` starts the server in its own process group
   (``start_new_session=True``) with the environment :func:`child_environment`
   built from an allow-list.
2. :func:`stop` stops it as the MCP specification says: the caller's
   ``close_stdin`` step, wait :data:`PROCESS_TERMINATION_TIMEOUT`, SIGTERM the
   group, wait :data:`FORCE_KILL_TIMEOUT`, SIGKILL the group, reap. Every wait
   is bounded by a named constant, so it returns even for a server that
   ignores stdin EOF and SIGTERM, and no process of the group (a server
   behind ``npx`` or a shell wrapper) survives it. Group members that became
   our children (when this process is a child subreaper, as a container init
   is) are reaped too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from typing import Callable, Dict, Mapping, Optional, Sequence

from agcore_sync import _instrument

__all__ = [
    "SAFE_ENV_VARS",
    "PROCESS_TERMINATION_TIMEOUT",
    "FORCE_KILL_TIMEOUT",
    "KILL_REAP_TIMEOUT",
    "GROUP_POLL_INTERVAL",
    "child_environment",
    "spawn",
    "stop",
]

logger = _instrument.get_logger("agcore_sync.mcp")

#: The parent's variables a server sees with ``inherit_env="safe"``: enough to
#: find programs and a home directory, never API keys or tokens.
SAFE_ENV_VARS = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG")

#: Grace period for the server to exit on its own once its stdin is closed
#: (the MCP specification's first shutdown step).
PROCESS_TERMINATION_TIMEOUT = 2.0
#: Time the process group gets to exit after SIGTERM before SIGKILL.
FORCE_KILL_TIMEOUT = 2.0
#: Time to reap the server after SIGKILL; only an unkillable process uses it up.
KILL_REAP_TIMEOUT = 2.0
#: Interval between probes of the process group while it is being stopped.
GROUP_POLL_INTERVAL = 0.01
# Buffer of the stdout pipe reader; lines longer than this still arrive whole.
_STDOUT_BUFFER = 1 << 16

# Never set: waiting on it is a bounded pause between probes of the group.
_pause = threading.Event()


def child_environment(inherit_env: str, env: Optional[Mapping[str, str]]) -> Dict[str, str]:
    """Return the server's environment: ``"all"``, :data:`SAFE_ENV_VARS` or nothing of ours, plus ``env``."""
    if inherit_env == "all":
        child = dict(os.environ)
    elif inherit_env == "safe":
        child = {name: os.environ[name] for name in SAFE_ENV_VARS if name in os.environ}
    else:
        child = {}
    if env:
        child.update(env)
    return child


def spawn(
    command: str, args: Sequence[str], env: Dict[str, str], cwd: Optional[str]
) -> subprocess.Popen[bytes]:
    """Start ``command`` with piped stdin, stdout and stderr, leader of a new process group.

    Raises:
        OSError, ValueError, subprocess.SubprocessError: as ``Popen`` does
            (the caller turns them into its own error).
    """
    return subprocess.Popen(
        [command, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
        start_new_session=True,
        bufsize=_STDOUT_BUFFER,
    )


def stop(proc: subprocess.Popen[bytes], close_stdin: Callable[[], None], name: str) -> None:
    """Stop ``proc`` and its process group in the specification's order; bounded.

    Args:
        proc: the group's leader, started by :func:`spawn`.
        close_stdin: closes the server's stdin (the caller serialises it
            with its writers); the first step.
        name: the server's name for logs.
    """
    close_stdin()
    try:
        proc.wait(PROCESS_TERMINATION_TIMEOUT)
    except subprocess.TimeoutExpired:
        logger.debug("MCP server %r (pid %d) did not exit on stdin EOF; terminating it", name, proc.pid)
    _stop_group(proc, name)
    try:
        proc.wait(KILL_REAP_TIMEOUT)
    except subprocess.TimeoutExpired:
        logger.warning("MCP server %r (pid %d) survived SIGKILL; abandoning it", name, proc.pid)


def _stop_group(proc: subprocess.Popen[bytes], name: str) -> None:
    """SIGTERM the group, wait, SIGKILL what is left; reap members that are our children."""
    pgid = proc.pid  # the leader's pid is the group id (start_new_session)
    if not _group_alive(proc, pgid):
        return
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    except PermissionError:
        logger.warning("no permission to signal process group %d of MCP server %r", pgid, name)
    if not _wait_group_gone(proc, pgid, FORCE_KILL_TIMEOUT):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            return
        _wait_group_gone(proc, pgid, KILL_REAP_TIMEOUT)


def _wait_group_gone(proc: subprocess.Popen[bytes], pgid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while _group_alive(proc, pgid):
        if time.monotonic() >= deadline:
            return False
        _pause.wait(GROUP_POLL_INTERVAL)
    return True


def _group_alive(proc: subprocess.Popen[bytes], pgid: int) -> bool:
    # Reap the leader through Popen first, so its returncode is kept; only
    # then reap other members that are our children (a subreaper's orphans),
    # which would otherwise stay zombies and keep the group in existence.
    if proc.poll() is not None:
        _reap_group_children(pgid)
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # unsignalable members or zombies: EPERM does not prove the group gone
    # Zombies answer signal 0 too. Where /proc shows every member is one,
    # nothing is left to stop: reap those that are ours; the others are
    # for their parent (init) to reap.
    if _has_live_member(pgid):
        return True
    if proc.poll() is not None:
        _reap_group_children(pgid)
    return False


def _reap_group_children(pgid: int) -> None:
    """Reap exited children of ours in group ``pgid`` (never blocks)."""
    while True:
        try:
            pid, _ = os.waitpid(-pgid, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _has_live_member(pgid: int) -> bool:
    """Return False only if /proc shows that every process of group ``pgid`` is a zombie."""
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return True  # no /proc: trust signal 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # exited meanwhile
        # After the command name: state, ppid, pgrp, ...
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False
