#!/usr/bin/env bash
# Install redis-server (Debian's package), the real peer of tests/contrib/ (RedisSessionStore,
# RedisEventRelay). The tests start their own server on a free port of 127.0.0.1 and stop it;
# this script only installs the binary. Safe to run again (a no-op when it is installed).
# Without apt-get (not Debian, not root) it says so and the Redis tests skip, naming this script.
set -euo pipefail

if command -v redis-server >/dev/null 2>&1; then
    echo "tests/redis: $(redis-server --version | cut -d' ' -f1-3) is installed"
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" != "0" ]; then
    echo "tests/redis/install.sh: cannot install redis-server (needs apt-get as root); the Redis tests will skip" >&2
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# --no-install-recommends: the server binary only, no redis-tools or init scripts we do not use.
apt-get install -y -qq --no-install-recommends redis-server >/dev/null
# The package may start a system service; the tests never use it (they start their own server).
echo "tests/redis: installed $(redis-server --version | cut -d' ' -f1-3)"
