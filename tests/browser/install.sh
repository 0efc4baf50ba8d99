#!/usr/bin/env bash
# Install Debian's chromium and chromium-driver, the real browser of tests/webapps/test_browser.py
# (selenium drives it headless against the Flask example under gunicorn). Safe to run again
# (a no-op when both are installed). Without apt-get (not Debian, not root) it says so and the
# browser tests skip, naming this script.
set -euo pipefail

if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    echo "tests/browser: $(chromium --version 2>/dev/null | head -n1) and chromedriver are installed"
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" != "0" ]; then
    echo "tests/browser/install.sh: cannot install chromium (needs apt-get as root); the browser tests will skip" >&2
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# --no-install-recommends: the browser and its driver only (no fonts packs, no desktop integration).
apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
echo "tests/browser: installed $(chromium --version 2>/dev/null | head -n1) and chromedriver"
