"""Fixtures of the UI protocol tests: a local server of both protocols."""

from __future__ import annotations

from typing import Callable, Iterator, List

import pytest

from agcore_sync import AgentSession
from tests.support.ui_peers import UiServer


@pytest.fixture
def ui_server() -> Iterator[Callable[[Callable[[], AgentSession]], UiServer]]:
    """Start a :class:`UiServer` for a session factory; stopped after the test."""
    servers: List[UiServer] = []

    def start(make_session: Callable[[], AgentSession]) -> UiServer:
        servers.append(UiServer(make_session))
        return servers[-1]

    yield start
    for server in servers:
        server.close()
