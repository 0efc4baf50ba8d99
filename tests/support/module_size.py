"""The module-size hint of STYLE.md, printed by the suite as a warning (never a failure).

Near 500 lines a module is a place to look for a second idea; without one it
may grow (its docstring says why). The suite's terminal summary lists the
modules of the package over the hint, so they are seen without a module being
squeezed under a limit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict

#: Lines past which a module is listed in the warning.
MAX_MODULE_LINES = 500


def long_modules(package: Path, limit: int = MAX_MODULE_LINES) -> Dict[str, int]:
    """Return ``{path relative to the package's parent: lines}`` for each module of ``package`` over ``limit``."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        lines = len(path.read_text("utf-8").splitlines())
        if lines > limit:
            found[path.relative_to(package.parent).as_posix()] = lines
    return found


def warn_long_modules(terminalreporter: Any, package: Path, limit: int = MAX_MODULE_LINES) -> None:
    """Write one warning line per module of ``package`` over ``limit`` to pytest's terminal summary."""
    long = long_modules(package, limit)
    if not long:
        return
    terminalreporter.section("module size (a hint, not a failure)", sep="-", yellow=True)
    for path, lines in long.items():
        terminalreporter.write_line(
            f"WARNING: {path} has {lines} lines (over {limit}): look for a second idea, "
            "or say in its docstring why it has none", yellow=True,
        )
