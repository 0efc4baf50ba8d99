"""The rq and celery extras: never imported by ``import agcore_sync``; a missing one is named."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("module, package", [("rq", "rq"), ("celery", "celery")])
def test_importing_the_package_never_imports_the_job_system_and_a_missing_one_names_the_extra(module, package):
    code = ("import sys, agcore_sync, agcore_sync.contrib\n"
            "from agcore_sync import AgentSession, SqliteSessionStore\n"
            f"assert {package!r} not in sys.modules, '{package} was imported'\n"
            f"sys.modules[{package!r}] = None  # as if it were not installed\n"
            "try:\n"
            f"    import agcore_sync.contrib.{module}\n"
            "except ImportError as exc:\n"
            "    print(exc)\n"
            "import agcore_sync.contrib.jobs  # needs redis only\n"
            f"assert {package!r} not in [m for m in sys.modules if sys.modules[m] is not None]\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == (f"agcore_sync.contrib.{module} needs the optional `{package}` package; install the "
                           f"extra: pip install 'agcore_sync[{module}]'")


def test_jobs_without_redis_names_the_redis_extra():
    code = ("import sys\n"
            "sys.modules['redis'] = None\n"
            "try:\n"
            "    import agcore_sync.contrib.jobs\n"
            "except ImportError as exc:\n"
            "    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "pip install 'agcore_sync[redis]'" in out
