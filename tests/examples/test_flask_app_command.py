"""docs/examples/flask_app.py started the two ways its docstring shows: as a script and through `flask run`."""

from __future__ import annotations

import os
import pathlib
import queue
import socket
import subprocess
import sys
import threading

import pytest
import requests

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "examples" / "flask_app.py"
#: Bound on every wait for the server.
WAIT = 30.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve(command, env=None):
    """Start ``command``, wait for Flask's "Running on" line, return (process, drain thread)."""
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {}), "PYTHONUNBUFFERED": "1"})
    lines: queue.Queue[str | None] = queue.Queue()

    def drain():
        for line in proc.stderr:
            lines.put(line)
        lines.put(None)

    thread = threading.Thread(target=drain, name="test-flask-stderr")
    thread.start()
    seen = []
    while True:
        try:
            line = lines.get(timeout=WAIT)
        except queue.Empty:
            stop(proc, thread)
            pytest.fail(f"the server did not start: {''.join(seen)}")
        if line is None:
            stop(proc, thread)
            pytest.fail(f"the server exited: {''.join(seen)}")
        seen.append(line)
        if "Running on" in line:
            return proc, thread


def stop(proc, thread):
    proc.terminate()
    proc.wait(WAIT)
    thread.join(WAIT)
    proc.stderr.close()


def ask(port):
    body = requests.post(f"http://127.0.0.1:{port}/chat/demo", json={"message": "What is 17 * 23?"},
                         timeout=WAIT).text
    assert '"tool_name": "multiply"' in body
    assert "391" in body


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_the_script_takes_its_port_from_the_command_line_or_the_environment(how):
    port = free_port()
    if how == "argument":
        proc, thread = serve([sys.executable, str(EXAMPLE), "--port", str(port)])
    else:
        proc, thread = serve([sys.executable, str(EXAMPLE)], env={"PORT": str(port)})
    try:
        ask(port)
    finally:
        stop(proc, thread)


def test_flask_run_finds_the_factory():
    port = free_port()
    proc, thread = serve([sys.executable, "-m", "flask", "--app", str(EXAMPLE), "run", "--port", str(port)])
    try:
        ask(port)
    finally:
        stop(proc, thread)


def test_without_flask_the_example_names_the_extra_to_install():
    code = ("import runpy, sys\n"
            "sys.modules['flask'] = None  # as if Flask were not installed\n"
            f"runpy.run_path({str(EXAMPLE)!r}, run_name='__main__')\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=WAIT)

    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last == ('ImportError: docs/examples/flask_app.py needs Flask, the optional `flask` extra: '
                    'pip install -e ".[flask]"')
