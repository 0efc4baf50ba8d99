"""Tools and registries the loop, agent and session tests share.

``add`` is the tool most scripted answers call; the ``registry`` fixture (a
``ToolRegistry`` holding it, closed after the test) is registered for the
whole suite through ``pytest_plugins`` in ``tests/conftest.py``. A module
that needs other tools defines its own ``registry`` fixture, which wins.
"""

from __future__ import annotations

from typing import Iterator

import pytest

from agcore_sync.tools.function import tool
from agcore_sync.tools.registry import ToolRegistry

__all__ = ["add", "registry"]


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.fixture
def registry() -> Iterator[ToolRegistry]:
    """Yield a ToolRegistry holding ``add``; close it after the test."""
    reg = ToolRegistry()
    reg.register(add)
    yield reg
    reg.close()
