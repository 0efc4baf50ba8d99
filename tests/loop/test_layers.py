"""The package imports one way: layers down DESIGN.md's list, and loop/ inside itself.

Every import counts, lazy ones inside functions and ``TYPE_CHECKING`` ones
included (import-linter counts them too).
"""

from __future__ import annotations

import ast
import pathlib
from typing import Iterator, Tuple

import agcore_sync

PACKAGE = pathlib.Path(agcore_sync.__file__).parent

#: The layers, top (imported by everything below) first.
LAYERS = ["errors", "_instrument", "_http", "llm", "tools", "hooks", "loop", "agent", "prompt", "telemetry",
          "contrib", "cli"]

#: loop/ inside itself: a module imports only modules before it.
LOOP_ORDER = ["limits", "config", "_conversation", "tool_loop", "tool_stream", "cycle"]

#: The registry's modules: the invocation value, batch settling, the pool, then the registry.
TOOLS_ORDER = ["invocation", "_batch", "_pool", "registry"]


def module_name(path: pathlib.Path) -> str:
    parts = ("agcore_sync", *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: pathlib.Path) -> Iterator[str]:
    """Every absolute ``agcore_sync`` module the file imports, wherever the import is."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: relative import"
            names = [node.module or ""]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        yield from (name for name in names if name.startswith("agcore_sync."))


def edges() -> Iterator[Tuple[str, str]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "__init__.py":
            continue  # the package's lazy exports name every layer
        for imported in imports(path):
            yield module_name(path), imported


def layer(module: str) -> str:
    return module.split(".")[1]


def test_no_module_imports_a_layer_below_its_own():
    upward = [(a, b) for a, b in edges()
              if layer(a) in LAYERS and layer(b) in LAYERS and LAYERS.index(layer(b)) > LAYERS.index(layer(a))]
    assert upward == []


def test_the_llm_layer_knows_nothing_about_tools_running_or_loops():
    assert [(a, b) for a, b in edges() if layer(a) == "llm" and layer(b) in ("tools", "hooks", "loop", "agent")] == []


def test_loop_modules_import_each_other_one_way_with_the_cycle_on_top():
    found = {path.stem for path in (PACKAGE / "loop").glob("*.py")} - {"__init__"}
    assert found == set(LOOP_ORDER), "a new loop module must take its place in LOOP_ORDER"
    backwards = []
    for a, b in edges():
        if a.startswith("agcore_sync.loop.") and b.startswith("agcore_sync.loop."):
            mine, theirs = a.rsplit(".", 1)[1], b.rsplit(".", 1)[1]
            if LOOP_ORDER.index(theirs) >= LOOP_ORDER.index(mine):
                backwards.append((a, b))
    assert backwards == []


def test_the_registry_sits_on_top_of_its_invocation_value_and_batch_settling():
    for a, b in edges():
        mine, theirs = a.rsplit(".", 1)[1], b.rsplit(".", 1)[1]
        if a.startswith("agcore_sync.tools.") and b.startswith("agcore_sync.tools.") and mine in TOOLS_ORDER \
                and theirs in TOOLS_ORDER:
            assert TOOLS_ORDER.index(theirs) < TOOLS_ORDER.index(mine), (a, b)


def test_the_layer_check_sees_lazy_and_type_checking_imports(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from agcore_sync.loop.cycle import X\n"
                      "def f():\n    import agcore_sync.agent.session\n")
    assert list(imports(source)) == ["agcore_sync.loop.cycle", "agcore_sync.agent.session"]


def test_the_modules_this_split_made_stay_small():
    for relative in ("loop/cycle.py", "loop/_conversation.py", "loop/tool_loop.py", "loop/tool_stream.py",
                     "tools/registry.py", "tools/invocation.py", "tools/_batch.py", "agent/session.py"):
        assert len((PACKAGE / relative).read_text(encoding="utf-8").splitlines()) < 500, relative
