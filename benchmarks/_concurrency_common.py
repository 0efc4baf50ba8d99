"""What both clients of bench_concurrency.py share: the tool, the sampler, the result.

A client runs in its own process (a *worker*) so that its memory, threads
and CPU are its own: ``resource.getrusage(RUSAGE_SELF)`` then counts every
thread of the client and nothing of the server, which is another process.
"""

from __future__ import annotations

import os
import resource
import statistics
import threading
import time
from typing import Callable, Dict, List, Optional, Sequence

#: How often the sampler reads RSS and the thread count (seconds).
SAMPLE_EVERY = 0.005

#: Bound on joining the sampler thread (seconds).
SAMPLER_JOIN_TIMEOUT = 5.0

#: The JSON Schema of the ``add`` tool, as both clients declare it.
ADD_PARAMETERS = {
    "type": "object",
    "properties": {"a": {"type": "integer", "description": "the first addend"},
                   "b": {"type": "integer", "description": "the second addend"}},
    "required": ["a", "b"],
}

_PAGE = os.sysconf("SC_PAGE_SIZE")


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first addend.
        b: the second addend.
    """
    return a + b


def rss_bytes() -> int:
    """Resident set size of this process now (not the peak)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE


def thread_count() -> int:
    """Threads of this process, the interpreter's own and any a C library started."""
    return len(os.listdir("/proc/self/task"))


def cpu_seconds() -> float:
    """User + system CPU time of every thread of this process so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def percentiles(values: Sequence[float]) -> List[Optional[float]]:
    """Return [p50, p99] of ``values`` (None for an empty list)."""
    if not values:
        return [None, None]
    ordered = sorted(values)
    return [statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]]


class Sampler:
    """A thread that reads RSS, threads and open turns every SAMPLE_EVERY s until stopped.

    ``baseline()`` is read before the workload creates anything; the peak
    sample is the first one that sees the most open turns, and ``max_rss``
    the largest RSS of the run. The sampler's own thread is not counted.
    """

    def __init__(self, open_turns: Callable[[], int]) -> None:
        self._open_turns = open_turns
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-sampler", daemon=True)
        self.base_rss = rss_bytes()
        self.base_threads = thread_count()
        self.max_rss = self.base_rss
        self.peak_open = 0
        self.peak_threads = self.base_threads
        self.peak_rss = self.base_rss
        self.agcore_threads = 0

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_EVERY):
            self.sample()

    def sample(self) -> None:
        open_now = self._open_turns()
        rss = rss_bytes()
        self.max_rss = max(self.max_rss, rss)
        if open_now > self.peak_open:
            self.peak_open = open_now
            self.peak_threads = thread_count() - 1  # not the sampler
            self.peak_rss = rss
            self.agcore_threads = sum(1 for t in threading.enumerate() if t.name.startswith("agcore-"))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(SAMPLER_JOIN_TIMEOUT)
        if self._thread.is_alive():
            raise RuntimeError("the sampler thread did not stop")

    def result(self) -> Dict[str, float]:
        n = max(1, self.peak_open)
        return {
            "peak_open_turns": self.peak_open,
            "rss_per_turn_kib": (self.max_rss - self.base_rss) / n / 1024,
            "threads_per_turn": (self.peak_threads - self.base_threads) / n,
            "agcore_threads_per_turn": self.agcore_threads / n,
        }


class OpenTurns:
    """A counter of open turns, safe from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.value = 0

    def add(self, delta: int) -> None:
        with self._lock:
            self.value += delta

    def __call__(self) -> int:
        return self.value


def latency_us(text: str, now_ns: int, into: List[float]) -> None:
    """Append the write-to-consumer latency of a stamped text delta, in microseconds."""
    stamp = text.strip()
    if stamp.isdigit():
        into.append((now_ns - int(stamp)) / 1e3)


def clock() -> float:
    """The wall clock of the benchmark."""
    return time.perf_counter()
