"""Fixtures of the testing kit's tests: a network that refuses every connection."""

from __future__ import annotations

import socket
from typing import Iterator, List

import pytest


class NoNetwork:
    """Makes ``socket.socket.connect`` (and ``connect_ex``) fail, and counts the attempts."""

    def __init__(self) -> None:
        self.attempts: List[object] = []

    def refuse(self, sock: socket.socket, address: object) -> None:
        self.attempts.append(address)
        raise OSError(f"the test forbids connections (to {address!r})")


@pytest.fixture
def no_network(monkeypatch) -> Iterator[NoNetwork]:
    """While the test runs after this fixture is requested, no socket may connect anywhere."""
    guard = NoNetwork()
    monkeypatch.setattr(socket.socket, "connect", guard.refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", guard.refuse)
    yield guard
