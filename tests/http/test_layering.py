"""``agcore_sync._http`` sits above ``llm/`` and ``tools/``: it imports neither (nor anything below them)."""

from __future__ import annotations

import ast
from pathlib import Path

import agcore_sync._http

HTTP_PACKAGE = Path(agcore_sync._http.__file__).parent
#: What the shared HTTP layer may import from the package: only itself.
ALLOWED_PREFIX = "agcore_sync._http"


def _imported_modules(path: Path) -> set:
    tree = ast.parse(path.read_text("utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_the_http_layer_imports_nothing_of_the_package_but_itself():
    modules = sorted(HTTP_PACKAGE.glob("*.py"))
    assert {p.name for p in modules} >= {"sse.py", "body.py", "connection.py", "masking.py"}
    for path in modules:
        ours = {name for name in _imported_modules(path) if name.split(".")[0] == "agcore_sync"}
        assert all(name.startswith(ALLOWED_PREFIX) for name in ours), (path.name, ours)
