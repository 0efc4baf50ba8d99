#!/usr/bin/env bash
# The service-free part of the suite on the other supported Pythons (3.10 and 3.13;
# the main run covers the default python). Part of the README's test command, so
# .ci/run runs it too.
#
# Each interpreter gets its own virtual environment under tests/pythons/venvs/
# (git-ignored; kept between runs, so a second run only checks the install), with
# `pip install -e ".[test]"`, then runs the tests that need no service: no Redis, no
# Node.js, no browser (the lists below). Prints how long each install and each test
# run took.
#
# Interpreters: `pythonX.Y` on PATH, else pyenv's ($PYENV_ROOT/versions/X.Y.*).
# One that is missing is skipped with a message, except under CI (CI set), where it
# is an error. AGCORE_PYTHONS="3.10 3.13" picks the versions; AGCORE_PYTHONS=none
# runs none.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

versions="${AGCORE_PYTHONS:-3.10 3.13}"
[ "$versions" = none ] && { echo "tests/pythons: AGCORE_PYTHONS=none, nothing to run"; exit 0; }

# The service-free tests, and the few among them that need Node.js (the npm MCP servers).
tests=(tests/llm tests/tools tests/loop tests/agent tests/prompt)
needs_service=(
    --ignore=tests/tools/mcp/test_reference_servers.py
    --ignore=tests/tools/mcp/test_server_everything.py
    --deselect=tests/tools/mcp/test_mcp_shutdown.py::test_a_server_behind_npx_leaves_no_process_behind
)

find_python() {  # prints the path of a working pythonX.Y, or nothing
    local version="$1" candidate
    for candidate in "$(command -v "python$version" 2>/dev/null || true)" \
                     "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$version".*/bin/python"$version"; do
        if [ -n "$candidate" ] && [ -x "$candidate" ] && "$candidate" -c "" >/dev/null 2>&1; then
            echo "$candidate"
            return
        fi
    done
}

for version in $versions; do
    python="$(find_python "$version")"
    if [ -z "$python" ]; then
        if [ -n "${CI:-}" ]; then
            echo "tests/pythons: error: no python$version (on PATH or under pyenv)" >&2
            exit 1
        fi
        echo "tests/pythons: skipped: no python$version (on PATH or under pyenv)"
        continue
    fi
    venv="tests/pythons/venvs/$version"
    start=$SECONDS
    [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install -q -e ".[test]"
    installed=$SECONDS
    echo "tests/pythons: $("$venv/bin/python" --version) installed in $((installed - start)) s; testing"
    # -n 2 (pytest-xdist, in the test extra): these tests need no shared service, so the two
    # cores split them. -p no:cacheprovider: the main run owns .pytest_cache. Exit status 5 (no test
    # collected) cannot happen with these paths; any non-zero status fails the run.
    "$venv/bin/python" -m pytest -q -p no:cacheprovider -n 2 "${needs_service[@]}" "${tests[@]}"
    echo "tests/pythons: $("$venv/bin/python" --version): tests took $((SECONDS - installed)) s"
done
