"""The documentation builds with Sphinx, warnings treated as errors.

Runs exactly the README's command,
``python -m sphinx -W --keep-going -b html docs docs/_build/html``, but into
a temporary directory so the tree stays clean, and as it runs after
``pip install -e ".[docs]"`` alone: the optional integrations' packages
(redis, rq, celery, opentelemetry) cannot be imported in the build.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: A full build takes a few seconds; this bounds a hung one.
BUILD_TIMEOUT = 600

#: The documented command, as the README gives it (after its install step).
SPHINX_ARGS = ["-m", "sphinx", "-W", "--keep-going", "-b", "html", "docs", "docs/_build/html"]

#: Packages the ``docs`` extra does not install: importing them fails in the build.
NOT_IN_DOCS_EXTRA = ("redis", "rq", "celery", "opentelemetry", "flask", "django", "mcp")

# Runs sphinx's main module with the packages above made unimportable, as in
# a virtual environment that has only the docs extra.
_RUNNER = """
import importlib.abc, runpy, sys
HIDDEN = {hidden!r}
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {{name!r}} (hidden by the test)", name=name)
        return None
for name in list(sys.modules):
    if name.split(".")[0] in HIDDEN:
        del sys.modules[name]
sys.meta_path.insert(0, Hide())
sys.argv = ["sphinx"] + sys.argv[1:]
runpy.run_module("sphinx", run_name="__main__", alter_sys=True)
"""


def test_the_readme_gives_the_docs_install_step_and_the_strict_build_command():
    readme = (ROOT / "README.rst").read_text("utf-8")
    command = 'python -m pip install -e ".[docs]" && python ' + " ".join(SPHINX_ARGS)
    assert command in re.sub(r"\s+", " ", readme)


def test_the_docs_build_with_warnings_as_errors_with_only_the_docs_extra(tmp_path):
    pytest.importorskip("sphinx", reason="Sphinx is not installed (pip install -e '.[docs]')")
    out = tmp_path / "html"
    args = SPHINX_ARGS[2:-1] + [str(out)]
    result = subprocess.run(
        [sys.executable, "-c", _RUNNER.format(hidden=NOT_IN_DOCS_EXTRA)] + args,
        cwd=ROOT, capture_output=True, text=True, timeout=BUILD_TIMEOUT,
    )
    assert result.returncode == 0, f"sphinx failed:\n{result.stderr[-5000:]}"
    assert "build succeeded" in result.stdout
    for page in ("index", "quickstart", "concepts", "api/llm", "howto/web_streaming", "performance"):
        assert (out / f"{page}.html").is_file(), f"{page}.html was not built"
    # autodoc really ran: the API pages document the classes, not just headings,
    # the optional integrations included.
    assert 'id="agcore_sync.agent.session.AgentSession"' in (out / "api" / "agent.html").read_text("utf-8")
    contrib = (out / "api" / "contrib.html").read_text("utf-8")
    for name in ("redis.RedisSessionStore", "jobs.TurnRunner", "rq.enqueue_turn", "celery.register_turn_task"):
        assert f'id="agcore_sync.contrib.{name}"' in contrib, name
