#!/usr/bin/env bash
# Bundle chat.jsx (React, @ai-sdk/react's useChat, ai's DefaultChatTransport) into dist/chat.js,
# the one script the AI SDK example apps serve. The versions are pinned in package.json and
# package-lock.json; node_modules is git-ignored. Needs Node.js 18+ and npm.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
npm ci --no-audit --no-fund
./node_modules/.bin/esbuild chat.jsx --bundle --minify --format=iife --target=es2020 \
    --define:process.env.NODE_ENV='"production"' --jsx=automatic --outfile=dist/chat.js --log-level=warning
echo "docs/examples/ai_sdk_frontend: built dist/chat.js ($(wc -c < dist/chat.js) bytes)"
