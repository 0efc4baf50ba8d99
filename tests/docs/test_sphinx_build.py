"""The documentation builds with Sphinx, warnings treated as errors.

Runs exactly the documented command,
``python -m sphinx -W --keep-going -b html docs docs/_build/html``, but into
a temporary directory so the tree stays clean.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: A full build takes a few seconds; this bounds a hung one.
BUILD_TIMEOUT = 600


def test_the_docs_build_with_warnings_as_errors(tmp_path):
    pytest.importorskip("sphinx", reason="Sphinx is not installed (pip install -e '.[docs]')")
    out = tmp_path / "html"
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", "docs", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=BUILD_TIMEOUT,
    )
    assert result.returncode == 0, f"sphinx failed:\n{result.stderr[-5000:]}"
    for page in ("index", "quickstart", "concepts", "api/llm", "howto/web_streaming", "performance"):
        assert (out / f"{page}.html").is_file(), f"{page}.html was not built"
    # autodoc really ran: the API page documents the classes, not just headings.
    assert 'id="agcore_sync.agent.session.AgentSession"' in (out / "api" / "agent.html").read_text("utf-8")
