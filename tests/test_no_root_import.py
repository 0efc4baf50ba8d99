"""No module of the package imports the package's root (its ``__init__``), only its submodules.

The root re-exports every public name; a module that takes a name from it
(``from agcore_sync import __version__``) depends on the whole package and
reaches above its own layer. Names come from the module that defines them
(``from agcore_sync._version import __version__``); ``from agcore_sync
import _check`` names a submodule and is fine. Imports inside functions
count too.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import List

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "agcore_sync"


def is_submodule(name: str) -> bool:
    return (PACKAGE / f"{name}.py").is_file() or (PACKAGE / name / "__init__.py").is_file()


def root_imports(source: str, module: str) -> List[str]:
    """Return the imports in ``source`` (of the dotted ``module``) that take a name from the root package."""
    package = module.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if a.name == "agcore_sync"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolved against the module's package
                base = package[:len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target == "agcore_sync":
                found += [f"{node.lineno}: from agcore_sync import {a.name}" for a in node.names
                          if not is_submodule(a.name)]
    return found


def dotted(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts) + (".__init__" if parts[-1] == "__init__" else "")


def test_no_module_of_the_package_imports_a_name_from_the_root_package():
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "__init__.py":
            continue
        found = root_imports(path.read_text("utf-8"), dotted(path))
        if found:
            offenders[str(path.relative_to(ROOT))] = found
    assert offenders == {}


def test_the_check_sees_root_imports_in_functions_and_relative_ones_but_not_submodules():
    source = ("from agcore_sync import _check, _instrument\n"
              "def late():\n"
              "    from agcore_sync import __version__\n"
              "    from .. import AgentSession\n"
              "    from . import session\n"
              "    import agcore_sync\n")
    assert root_imports(source, "agcore_sync.agent.store") == [
        "3: from agcore_sync import __version__",
        "4: from agcore_sync import AgentSession",
        "6: import agcore_sync",
    ]
