"""Fixtures for MCP tests against real server processes started by the tests.

- ``sdk_server``: argv for ``tests/mcp_servers/sdk_server.py`` (the official
  MCP Python SDK); skips with a reason where ``mcp`` is not importable.
- ``raw_server``: argv for ``tests/mcp_servers/raw_server.py`` (stdlib,
  misbehaves on request).
- ``open_client``: builds McpClients over a :class:`RecordingTransport` and
  closes every one at teardown.
- ``subreaper``: makes this process a child subreaper (Linux), as a
  container init would be, so orphaned grandchildren of a server become our
  children and can be reaped; without it, on a machine whose PID 1 never
  reaps, a killed orphan stays a zombie and its process group never vanishes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
from pathlib import Path
from typing import Any, Dict, List

import pytest

from agcore_sync.mcp import McpClient, StdioTransport

SERVERS = Path(__file__).resolve().parents[2] / "mcp_servers"
SDK_SERVER = str(SERVERS / "sdk_server.py")
RAW_SERVER = str(SERVERS / "raw_server.py")

# prctl option: make the calling process a child subreaper.
_PR_SET_CHILD_SUBREAPER = 36


class RecordingTransport(StdioTransport):
    """A StdioTransport that keeps a copy of every message the client sends."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sent: List[Dict[str, Any]] = []
        self._sent_lock = threading.Lock()

    def send(self, message: Dict[str, Any], *, timeout: Any = None) -> None:
        with self._sent_lock:
            self.sent.append(message)
        super().send(message, timeout=timeout)

    def sent_methods(self) -> List[str]:
        with self._sent_lock:
            return [m.get("method", "<response>") for m in self.sent]

    def requests(self, method: str) -> List[Dict[str, Any]]:
        with self._sent_lock:
            return [m for m in self.sent if m.get("method") == method]


@pytest.fixture
def sdk_server() -> List[str]:
    """The command line of the MCP Python SDK test server (skips without ``mcp``)."""
    pytest.importorskip("mcp", reason="the official MCP Python SDK (test extra, Python >= 3.10) is not installed")
    return [sys.executable, SDK_SERVER]


@pytest.fixture
def raw_server() -> List[str]:
    """The command line of the stdlib misbehaving test server."""
    return [sys.executable, RAW_SERVER]


@pytest.fixture
def open_client():
    """Return ``make(argv, **client_kwargs) -> McpClient`` (unconnected); every client is closed at teardown."""
    made: List[McpClient] = []

    def make(argv: List[str], *, name: str = "test", inherit_env: str = "safe", env: Any = None, **kwargs: Any):
        transport = RecordingTransport(argv[0], argv[1:], env=env, inherit_env=inherit_env)
        client = McpClient(name, transport, **kwargs)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


@pytest.fixture
def subreaper():
    """Make this process a child subreaper for the test (Linux only)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("child subreapers are a Linux feature")
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        pytest.skip(f"prctl(PR_SET_CHILD_SUBREAPER) failed: {os.strerror(ctypes.get_errno())}")
    yield
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)

