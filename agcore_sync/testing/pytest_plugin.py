"""The pytest plugin: the ``agcore_cassette`` fixture and the ``--agcore-record`` option.

Installed with agcore_sync (entry point ``pytest11``, name ``agcore_sync``),
so every pytest run in the environment loads it. It registers the option
and the fixture, nothing else: no hook runs per test, and the testing kit
itself is imported only when a test asks for the fixture.

In a test::

    def test_the_agent_answers(agcore_cassette):
        provider = agcore_cassette(OpenAIProvider(model="gpt-4o-mini"))
        ...  # the code under test uses provider

``agcore_cassette(inner)`` returns a provider that replays
``<test folder>/cassettes/<module>/<test>.jsonl``, or records it through
``inner``, as ``--agcore-record`` says:

- ``none`` (the default): replay; a missing cassette fails the test,
  naming the option to record it. Nothing reaches ``inner``.
- ``new``: replay the cassettes that exist, record the missing ones.
- ``all``: record every cassette again.

An MCP transport instead of a provider gives a recording or replaying
transport on the same terms. The rules for names, xdist workers and drift
are in ``agcore_sync/testing/_fixture.py`` and ``docs/howto/testing.rst``.

.. versionadded:: 0.2
"""

from __future__ import annotations

import os
import sys
from typing import Any, Iterator

import pytest

__all__ = ["RECORD_MODES", "agcore_cassette", "pytest_addoption"]

#: The values of ``--agcore-record``.
RECORD_MODES = ("none", "new", "all")


def pytest_addoption(parser: Any) -> None:
    """Add ``--agcore-record=none|new|all``."""
    group = parser.getgroup("agcore_sync", "agcore_sync cassettes")
    group.addoption(
        "--agcore-record", action="store", dest="agcore_record", default="none", choices=RECORD_MODES,
        help="agcore_cassette: 'none' replays and fails on a missing cassette (default), 'new' records "
             "missing cassettes, 'all' records every cassette again",
    )


@pytest.fixture
def agcore_cassette(request: Any) -> Iterator[Any]:
    """Return ``cassette(inner, *, name=None)``: a provider (or MCP transport) on this test's cassette.

    After the test, recorded cassettes are moved into place and a drift the
    code under test swallowed (a :class:`~agcore_sync.testing.CassetteMismatchError`
    turned into an error event or a tool error) fails the test.
    """
    from agcore_sync.testing._fixture import Cassettes  # the kit loads only for tests that use it

    cassettes = Cassettes(
        mode=request.config.getoption("agcore_record"),
        folder=os.path.join(os.path.dirname(str(request.node.path)), "cassettes",
                            request.module.__name__.rpartition(".")[2]),
        test_name=request.node.name,
        worker=os.environ.get("PYTEST_XDIST_WORKER", "main"),
    )
    try:
        yield cassettes
    finally:
        # pytest keeps the exception a failed test raised in sys.last_value (for post-mortem debugging).
        failure = getattr(sys, "last_value", None)
        cassettes.finish(failure if isinstance(failure, BaseException) else None)
