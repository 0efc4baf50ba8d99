"""The layering of DESIGN.md ("Layout"), checked by import-linter with the contracts in setup.cfg.

Imports run one way, down the list errors, _http, llm, tools, mcp, hooks, loop,
agent, prompt, telemetry, contrib, cli (upper may import lower); inside
loop/ and the registry's modules one way too; sibling modules never import
each other both ways; the console printer does not import the demo; inside
mcp/, the shared protocol code imports neither the client nor the transports,
and the tool adapter does not import the client. The linter reads the source, so
imports inside functions and under ``TYPE_CHECKING`` count: a cycle hidden
that way is still a cycle.

Each check runs the linter in a child process: it finds the package through
the import system, and a copy of the package in a temporary folder must not
be shadowed by the ``agcore_sync`` this process already imported.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Tuple

import pytest

from tests.support import module_size

ROOT = Path(__file__).resolve().parents[1]

#: Bound on one linter run (it takes well under a second).
LINT_TIMEOUT = 120.0

_LINT = (
    "import sys\n"
    "from importlinter.cli import lint_imports\n"
    "sys.exit(lint_imports(config_filename='setup.cfg', limit_to_contracts=tuple(sys.argv[1:]),\n"
    "                      no_cache=True, no_logo=True))\n"
)

#: Contracts still broken on this branch, with the imports that break them
#: (other branches are removing them; the test then passes and can lose its mark).
def lint(where: Path, *contracts: str) -> Tuple[bool, str]:
    """Run the contracts of ``where/setup.cfg`` (all, or those named) on the package in ``where``.

    Returns:
        (every contract kept, the linter's report).
    """
    done = subprocess.run([sys.executable, "-c", _LINT, *contracts], cwd=where, capture_output=True, text=True,
                          timeout=LINT_TIMEOUT, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(where)})
    return done.returncode == 0, done.stdout + done.stderr


@pytest.fixture
def copy(tmp_path):
    """A copy of the package and its setup.cfg, to break on purpose."""
    shutil.copytree(ROOT / "agcore_sync", tmp_path / "agcore_sync", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "setup.cfg", tmp_path / "setup.cfg")
    return tmp_path


def add_line(path: Path, line: str) -> None:
    path.write_text(path.read_text() + f"\n{line}\n")


@pytest.mark.parametrize("contract", ["layers", "loop", "registry", "acyclic", "console", "mcp-adapter", "mcp-shared"])
def test_the_package_keeps_its_import_contract(contract):
    kept, report = lint(ROOT, contract)
    assert "Contracts:" in report, report  # the linter ran and read the contract
    assert kept, report


def test_a_back_arrow_from_llm_to_agent_breaks_the_layers_contract(copy):
    add_line(copy / "agcore_sync" / "llm" / "types.py", "import agcore_sync.agent.session  # noqa")
    kept, report = lint(copy)
    assert not kept
    assert "agcore_sync.llm is not allowed to import agcore_sync.agent" in report, report
    assert "agcore_sync.llm.types -> agcore_sync.agent.session" in report, report


def test_a_back_arrow_hidden_in_a_function_still_breaks_the_layers_contract(copy):
    add_line(copy / "agcore_sync" / "errors.py",
             "def _late():\n    from agcore_sync.llm import openai  # noqa\n    return openai")
    kept, report = lint(copy)
    assert not kept
    assert "agcore_sync.errors is not allowed to import agcore_sync.llm" in report, report


def test_two_sibling_modules_importing_each_other_break_the_acyclic_contract(copy):
    # llm.mock imports llm.types; the reverse closes a cycle.
    add_line(copy / "agcore_sync" / "llm" / "types.py",
             "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from agcore_sync.llm import mock  # noqa")
    kept, report = lint(copy)
    assert not kept
    assert "No cycles are allowed in agcore_sync.llm" in report, report


def test_the_console_printer_importing_the_demo_breaks_its_contract(copy):
    add_line(copy / "agcore_sync" / "cli" / "console.py", "from agcore_sync.cli import demo  # noqa")
    kept, report = lint(copy, "console")
    assert not kept
    assert "agcore_sync.cli.console is not allowed to import agcore_sync.cli.demo" in report, report


def test_loop_config_importing_the_cycle_breaks_the_loop_contract(copy):
    add_line(copy / "agcore_sync" / "loop" / "config.py",
             "def _late():\n    from agcore_sync.loop import cycle  # noqa\n    return cycle")
    kept, report = lint(copy, "loop")
    assert not kept
    assert "agcore_sync.loop.config is not allowed to import agcore_sync.loop.cycle" in report, report


def test_the_tool_layer_importing_mcp_breaks_the_layers_contract(copy):
    add_line(copy / "agcore_sync" / "tools" / "registry.py",
             "def _late():\n    from agcore_sync.mcp.client import session  # noqa\n    return session")
    kept, report = lint(copy, "layers")
    assert not kept
    assert "agcore_sync.tools is not allowed to import agcore_sync.mcp" in report, report


def test_mcp_importing_the_loop_breaks_the_layers_contract(copy):
    add_line(copy / "agcore_sync" / "mcp" / "tools.py", "import agcore_sync.loop.config  # noqa")
    kept, report = lint(copy, "layers")
    assert not kept
    assert "agcore_sync.mcp is not allowed to import agcore_sync.loop" in report, report


@pytest.mark.parametrize("target", ["agcore_sync.mcp.client.session", "agcore_sync.mcp.transports.stdio"])
def test_shared_mcp_code_importing_the_client_or_a_transport_breaks_its_contract(copy, target):
    add_line(copy / "agcore_sync" / "mcp" / "shared" / "jsonrpc.py",
             f"from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import {target}  # noqa")
    kept, report = lint(copy, "mcp-shared")
    assert not kept
    assert f"agcore_sync.mcp.shared is not allowed to import {target.rsplit('.', 1)[0]}" in report, report
    assert f"agcore_sync.mcp.shared.jsonrpc -> {target}" in report, report


def test_the_mcp_adapter_importing_the_client_breaks_its_contract(copy):
    add_line(copy / "agcore_sync" / "mcp" / "tools.py", "from agcore_sync.mcp.client import _pending  # noqa")
    kept, report = lint(copy, "mcp-adapter")
    assert not kept
    assert "agcore_sync.mcp.tools is not allowed to import agcore_sync.mcp.client" in report, report


def test_a_module_over_the_size_hint_is_printed_as_a_warning_and_fails_nothing(pytester):
    package = pytester.mkpydir("pkg")
    (package / "long.py").write_text("x = 1\n" * 501)
    (package / "at_the_hint.py").write_text("x = 1\n" * 500)
    pytester.makeconftest(
        "import sys\n"
        "from pathlib import Path\n"
        f"sys.path.insert(0, {str(ROOT)!r})  # the repository, whose tests/ package the hint lives in\n"
        "from tests.support.module_size import warn_long_modules\n"
        "def pytest_terminal_summary(terminalreporter):\n"
        "    warn_long_modules(terminalreporter, Path(__file__).parent / 'pkg')\n"
    )
    pytester.makepyfile(test_one="def test_one():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == 0
    warnings = [line for line in result.outlines if line.startswith("WARNING: ")]
    assert warnings == [
        "WARNING: pkg/long.py has 501 lines (over 500): look for a second idea, or say in its docstring why it has none"
    ]


def test_the_suite_warns_about_the_modules_of_the_package_in_its_summary(monkeypatch):
    import tests.conftest as suite

    calls = []
    monkeypatch.setattr(module_size, "warn_long_modules", lambda reporter, package: calls.append((reporter, package)))
    reporter = object()
    suite.pytest_terminal_summary(reporter)
    assert calls == [(reporter, ROOT / "agcore_sync")]
