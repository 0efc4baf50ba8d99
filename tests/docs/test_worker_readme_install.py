"""The Django worker README's install line, run in a new virtual environment, gives the worker all it imports.

A newcomer follows ``docs/examples/django_worker/README.rst``: ``pip
install`` its line from that folder, then start ``celery -A turns worker``
and gunicorn. The suite's own environment has every test dependency, which
hid a missing one (kombu's Redis transport needs ``packaging``, which only
``celery[redis]`` brings). So this test makes a new venv (``python -m
venv``, without the system's site packages), runs the README's line in it
exactly, and imports what the worker and the web processes import: the
Celery app and its Redis transport, and the Django WSGI application.

It installs from the package index (about half a minute here); the venv is
made once per run and removed after it.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "docs" / "examples" / "django_worker"

#: Bound on the install (the index can be slow on a loaded machine).
INSTALL_TIMEOUT = 900
#: Bound on the imports.
IMPORT_TIMEOUT = 120

#: What ``celery -A turns worker`` and ``gunicorn site_app.wsgi:application`` import before serving.
WORKER_IMPORTS = """
import turns
transport = turns.app.connection_for_write().transport  # the broker's transport: kombu.transport.redis
assert type(transport).__module__ == "kombu.transport.redis", type(transport)
import celery.bin.celery, gunicorn.app.wsgiapp
import site_app.wsgi
print("worker and web imports: ok")
"""


def readme_install_line() -> list:
    text = (APP / "README.rst").read_text("utf-8")
    lines = [line.strip() for line in text.splitlines() if re.match(r"\s+pip install ", line)]
    assert len(lines) == 1, lines
    return shlex.split(lines[0], comments=True)


def test_the_readme_installs_with_pip_install_e_from_the_clone():
    argv = readme_install_line()
    assert argv[:3] == ["pip", "install", "-e"]
    assert argv[3].startswith("../../..[") and "celery" in argv[3]
    assert (APP / "../../.." / "setup.cfg").resolve() == ROOT / "setup.cfg"


def test_the_readme_install_line_in_a_new_venv_gives_the_worker_every_import(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=IMPORT_TIMEOUT)
    assert "include-system-site-packages = false" in (venv / "pyvenv.cfg").read_text()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    argv = readme_install_line()
    pip = [str(venv / "bin" / "python"), "-m", "pip"] + argv[1:]  # the venv's pip, the README's arguments

    install = subprocess.run(pip + ["-q"], cwd=APP, env=env, capture_output=True, text=True,
                             timeout=INSTALL_TIMEOUT)
    assert install.returncode == 0, install.stderr[-3000:]
    imports = subprocess.run([str(venv / "bin" / "python"), "-c", WORKER_IMPORTS], cwd=APP,
                             env={**env, "DJANGO_SECRET_KEY": "test-only", "REDIS_URL": "redis://127.0.0.1:9/0"},
                             capture_output=True, text=True, timeout=IMPORT_TIMEOUT)

    assert imports.returncode == 0, imports.stderr[-3000:]
    assert imports.stdout.strip() == "worker and web imports: ok"
