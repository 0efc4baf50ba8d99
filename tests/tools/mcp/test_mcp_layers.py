"""Inside tools/mcp imports run one way, and every module stays under ~500 lines.

Every import counts, as import-linter counts them: at the top, inside a
function, or under ``if TYPE_CHECKING:``.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, Set

import agcore_sync.tools.mcp

PACKAGE = "agcore_sync.tools.mcp"
ROOT = Path(agcore_sync.tools.mcp.__file__).resolve().parent
MAX_LINES = 500


def _modules() -> Dict[str, Path]:
    return {path.stem: path for path in sorted(ROOT.glob("*.py"))}


def _imports(path: Path, modules: Set[str]) -> Set[str]:
    """The sibling modules ``path`` imports, wherever the import statement is."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # ``from pkg import sub`` imports the submodule (as import-linter counts it), else a name of pkg.
            names = [
                f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}".startswith(PACKAGE + ".")
                and alias.name in modules else node.module
                for alias in node.names
            ]
        else:
            continue
        for name in names:
            if name == PACKAGE:
                found.add("__init__")
            elif name.startswith(PACKAGE + "."):
                first = name[len(PACKAGE) + 1:].split(".")[0]
                if first in modules:
                    found.add(first)
    return found


def _graph() -> Dict[str, Set[str]]:
    modules = _modules()
    return {name: _imports(path, set(modules)) - {name} for name, path in modules.items()}


def test_no_module_of_the_package_imports_the_package_itself_except_through_its_siblings():
    graph = _graph()
    offenders = sorted(name for name, deps in graph.items() if name != "__init__" and "__init__" in deps)
    assert offenders == []


def test_imports_inside_tools_mcp_have_no_cycle():
    graph = _graph()
    done: Set[str] = set()

    def visit(name: str, path: tuple) -> None:
        if name in path:
            raise AssertionError(" -> ".join(path[path.index(name):] + (name,)))
        if name in done:
            return
        for dep in sorted(graph[name]):
            visit(dep, path + (name,))
        done.add(name)

    for name in sorted(graph):
        visit(name, ())


def test_the_adapter_depends_on_a_tool_caller_not_on_the_client():
    graph = _graph()
    assert "client" not in graph["adapter"]
    assert "adapter" in graph["client"]  # into_tools builds the adapters


def test_the_client_composes_its_parts_instead_of_inheriting_them():
    from agcore_sync.tools.mcp.client import McpClient

    assert McpClient.__bases__ == (object,)


def test_every_module_of_tools_mcp_is_under_500_lines():
    long = {name: n for name, path in _modules().items() if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert long == {}
