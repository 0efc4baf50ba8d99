"""The README's test command is what CI runs, and the multi-Python script it ends with stays current."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "pythons" / "run.sh"


def readme_test_command() -> str:
    readme = (ROOT / "README.rst").read_text("utf-8")
    start = 'python -m pip install -e ".[test]"'
    commands = [line.strip() for line in readme.splitlines() if line.strip().startswith(start)]
    assert len(commands) == 1, commands
    return commands[0]


def test_ci_runs_exactly_the_readme_s_test_command():
    ci = (ROOT / ".ci" / "run").read_text("utf-8").strip().splitlines()

    assert ci[-1] == readme_test_command()


def test_the_readme_and_the_quickstart_give_the_same_test_command_ending_with_the_other_pythons():
    command = readme_test_command()
    assert command.endswith("&& python -m pytest && bash tests/pythons/run.sh")
    assert f"    {command}" in (ROOT / "docs" / "quickstart.rst").read_text("utf-8").splitlines()


def test_the_other_pythons_run_paths_that_exist_and_keep_their_venvs_out_of_git():
    text = SCRIPT.read_text("utf-8")
    tests = shlex.split(re.search(r"^tests=\((.*)\)$", text, re.MULTILINE).group(1))
    ignored = re.findall(r"--(?:ignore|deselect)=([\w/.]+)", text)
    assert tests and ignored
    for path in tests + ignored:
        assert (ROOT / path).exists(), path
    for path in ignored:
        assert any(path.startswith(test + "/") for test in tests), path
    assert "tests/pythons/venvs/" in (ROOT / ".gitignore").read_text("utf-8").splitlines()
    assert 'AGCORE_PYTHONS:-3.10 3.13' in text
