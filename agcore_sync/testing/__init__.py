"""The testing kit: cassettes for providers and MCP, TestModel, FunctionModel, and a pytest plugin.

Not imported by ``import agcore_sync``; import it in tests::

    from agcore_sync.testing import ReplayProvider, TestModel

Names load on first use (PEP 562, as the top-level package does), so the
pytest plugin (:mod:`agcore_sync.testing.pytest_plugin`, entry point
``agcore_sync``), which every pytest run in an environment with
agcore_sync loads, costs a test suite next to nothing until a test uses
the ``agcore_cassette`` fixture. See ``docs/howto/testing.rst``.

.. versionadded:: 0.2
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Dict, List

# Public name -> the module that defines it.
_EXPORTS: Dict[str, str] = {
    "RecordingProvider": "agcore_sync.testing.provider",
    "ReplayProvider": "agcore_sync.testing.provider",
    "CassetteError": "agcore_sync.testing.errors",
    "CassetteMismatchError": "agcore_sync.testing.errors",
    "RecordingTransport": "agcore_sync.testing.mcp",
    "ReplayTransport": "agcore_sync.testing.mcp",
    "TestModel": "agcore_sync.testing.models",
    "FunctionModel": "agcore_sync.testing.models",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agcore_sync.testing' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # pragma: no cover - what type checkers and IDEs see
    from agcore_sync.testing.errors import CassetteError, CassetteMismatchError  # noqa: F401
    from agcore_sync.testing.mcp import RecordingTransport, ReplayTransport  # noqa: F401
    from agcore_sync.testing.models import FunctionModel, TestModel  # noqa: F401
    from agcore_sync.testing.provider import RecordingProvider, ReplayProvider  # noqa: F401
