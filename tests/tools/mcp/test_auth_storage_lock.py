"""FileTokenStorage loses no update when many processes or objects write one file (issue 21, item 4).

Each writer stores its own keys; without the lock each read-modify-write
can overwrite what another wrote between its read and its rename. The
processes are real ones (``sys.executable``), released together by one
byte on their stdin once all have started; the threads meet at a barrier.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from typing import List

from agcore_sync import FileTokenStorage, OAuthToken
from agcore_sync.mcp.auth.storage import LOCK_SUFFIX

PROCESSES = 4
WRITES = 50
#: Seconds a writer process may take in all (50 small file rewrites).
PROCESS_TIMEOUT = 120.0
#: Seconds a writer thread may take in all.
THREAD_TIMEOUT = 60.0

_WRITER = """
import sys
from agcore_sync import FileTokenStorage, OAuthToken
path, name, writes = sys.argv[1], sys.argv[2], int(sys.argv[3])
storage = FileTokenStorage(path)
print("ready", flush=True)
sys.stdin.read(1)  # wait until every writer has started
for i in range(writes):
    storage.set_tokens(f"https://mcp.example.com/{name}/{i}", OAuthToken(access_token=f"{name}-{i}"))
    if i % 10 == 0:
        storage.set_client(f"https://auth.example.com/{name}", None)
"""


def _token_keys(path: str) -> List[str]:
    import json

    with open(path, encoding="utf-8") as handle:
        return sorted(json.load(handle)["tokens"])


def test_four_processes_writing_one_token_file_lose_no_entry(tmp_path):
    path = str(tmp_path / "tokens.json")
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, path, f"p{n}", str(WRITES)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for n in range(PROCESSES)]
    try:
        for proc in procs:
            assert proc.stdout.readline().strip() == "ready"
        for proc in procs:
            proc.stdin.write("g")
            proc.stdin.close()
        for proc in procs:
            assert proc.wait(PROCESS_TIMEOUT) == 0
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(PROCESS_TIMEOUT)
            proc.stdout.close()
    expected = sorted(f"https://mcp.example.com/p{n}/{i}" for n in range(PROCESSES) for i in range(WRITES))
    assert _token_keys(path) == expected
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path + LOCK_SUFFIX).st_mode) == 0o600


def test_two_objects_on_one_file_written_from_threads_lose_no_entry(tmp_path):
    path = str(tmp_path / "tokens.json")
    stores = [FileTokenStorage(path), FileTokenStorage(path)]
    writers_per_store = 2
    barrier = threading.Barrier(len(stores) * writers_per_store)
    failures: List[BaseException] = []

    def write(store: FileTokenStorage, name: str) -> None:
        try:
            barrier.wait(THREAD_TIMEOUT)
            for i in range(WRITES):
                store.set_tokens(f"https://mcp.example.com/{name}/{i}", OAuthToken(access_token=f"{name}-{i}"))
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            failures.append(exc)

    threads = [threading.Thread(target=write, args=(store, f"s{n}t{t}"), name=f"test-token-writer-{n}-{t}")
               for n, store in enumerate(stores) for t in range(writers_per_store)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(THREAD_TIMEOUT)
        assert not thread.is_alive()
    assert failures == []
    names = [f"s{n}t{t}" for n in range(len(stores)) for t in range(writers_per_store)]
    assert _token_keys(path) == sorted(f"https://mcp.example.com/{name}/{i}" for name in names for i in range(WRITES))
    assert stores[1].get_tokens("https://mcp.example.com/s0t0/7").access_token == "s0t0-7"
