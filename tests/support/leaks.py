"""What a test may leave behind (threads, child processes, file descriptors), and a port nobody holds.

Used by the autouse fixture in ``tests/conftest.py`` and by tests that
check for leaks themselves; Linux reads ``/proc``, elsewhere the process
and descriptor checks are skipped.
"""

from __future__ import annotations

import gc
import os
import socket
from typing import Dict, Set

PROC = "/proc"


def children() -> Set[int]:
    """Return the pids whose parent is this process (zombies included)."""
    me = os.getpid()
    found = set()
    try:
        entries = os.listdir(PROC)
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"{PROC}/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # Fields after "(comm)": state, ppid, ... (comm may hold spaces and parentheses)
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == me:
            found.add(int(entry))
    return found


def open_fds() -> Dict[int, str]:
    """Return this process's open descriptors and what each points at."""
    fds = {}
    try:
        entries = os.listdir(f"{PROC}/self/fd")
    except OSError:
        return fds
    for entry in entries:
        try:
            fds[int(entry)] = os.readlink(f"{PROC}/self/fd/{entry}")
        except OSError:
            continue  # the descriptor listdir itself used, now closed
    return fds


def new_fds(before: Dict[int, str]) -> Dict[int, str]:
    """Return descriptors opened since ``before`` and still open after a GC pass.

    Objects that close their socket when collected (a dropped
    ``requests.Session``) get one collection before they count as leaks.
    """
    def fresh() -> Dict[int, str]:
        return {fd: target for fd, target in open_fds().items() if before.get(fd) != target}

    leaked = fresh()
    if leaked:
        gc.collect()
        leaked = fresh()
    return leaked


def closed_port() -> int:
    """Return a port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
