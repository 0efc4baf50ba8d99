"""Background turns: a job worker's events through Redis to an SSE reader, against the in-process stream.

Run from the repository root (needs redis-server, ``rq`` and ``redis``)::

    python benchmarks/bench_relay.py [--events 2000] [--turns 60] [--repeats 3] [--redis-url URL]

Without ``--redis-url`` it starts a redis-server of its own on 127.0.0.1
(tests/support/redis_server.py) and stops it at the end.

1. Events/s and latency of one turn of ``--events`` text deltas. The
   provider stamps each delta with ``time.monotonic_ns()`` (CLOCK_MONOTONIC,
   shared by all processes of the machine) when it makes it:

   - in-process: ``session.submit_turn_stream`` read in the same process;
   - relayed: a real ``rq worker`` (SimpleWorker) runs the turn with
     ``TurnRunner`` and publishes every event; this process reads
     ``relay.sse(turn_id)`` and parses it with the SSE parser a browser-side
     client uses; latency is the parse time minus the stamp.

   events/s is the deltas over the time from the first delta made to the
   last one read; latency p50 / p99 is over all deltas of ``--repeats`` turns.
   A second run paces the deltas at ``--pace`` per second, as a model's
   tokens arrive, so the latency is the path's, not a queue's.

2. Turns/s: ``--turns`` short turns (20 deltas) enqueued at once on 1, 2
   and 4 ``rq worker`` processes, from the first enqueue to the last end
   mark read; against the same turns run one after another in this process.
   Both RQ worker classes: ``SimpleWorker`` (runs jobs in the worker) and
   the default ``Worker`` (forks a work horse per job), the latter also with
   the app imported by the worker's settings module (``-c``) before it forks.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from typing import List, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "benchmarks")]

import redis  # noqa: E402
import rq  # noqa: E402
from _common import table  # noqa: E402
from _relay_app import make_runner, stamped_provider  # noqa: E402

from agcore_sync import AgentSession, TextDelta  # noqa: E402
from agcore_sync._http.sse import SseParser  # noqa: E402
from agcore_sync.contrib.jobs import TurnJob  # noqa: E402
from agcore_sync.contrib.rq import enqueue_turn  # noqa: E402

#: Bound on waiting for a turn's next event, and for a worker to stop.
WAIT = 60.0

QUEUE = "bench-relay"
WORKER_CLASSES = {"SimpleWorker": ("rq.worker.SimpleWorker", []), "Worker": ("rq.worker.Worker", []),
                  "Worker, app preloaded (-c)": ("rq.worker.Worker", ["-c", "_relay_rq_settings"])}


def percentile(values: List[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


class Workers:
    """``rq worker`` children, started and stopped (SIGTERM, then SIGKILL) by the benchmark."""

    def __init__(self, url: str, count: int, worker_class: str, n_events: int, pace: float = 0.0) -> None:
        env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
        env.update(PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "benchmarks")]), BENCH_REDIS_URL=url,
                   BENCH_EVENTS=str(n_events), BENCH_PACE=str(pace))
        self._log = tempfile.TemporaryFile()
        dotted, extra = WORKER_CLASSES[worker_class]
        self.procs = [subprocess.Popen(
            [sys.executable, "-m", "rq.cli", "worker", "--url", url, "--path", os.path.join(ROOT, "benchmarks"),
             "--worker-class", dotted, *extra, "--name", f"bench-{uuid.uuid4().hex[:8]}", "-q", QUEUE],
            env=env, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
            start_new_session=True) for _ in range(count)]

    def stop(self) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(WAIT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(WAIT)
        self._log.close()


def read_sse(relay, turn_id: str) -> Tuple[List[int], List[int]]:
    """Read the turn as SSE; return (stamps, receive times) of its text deltas."""
    parser = SseParser()
    stamps, seen = [], []
    import json

    for chunk in relay.sse(turn_id, timeout=WAIT):
        for frame in parser.feed(chunk):
            now = time.monotonic_ns()
            if frame.event == "message":
                data = json.loads(frame.data)
                if data["type"] == "text_delta":
                    stamps.append(int(data["text"]))
                    seen.append(now)
    return stamps, seen


def in_process_turn(n_events: int, pace: float = 0.0) -> Tuple[List[int], List[int]]:
    stamps, seen = [], []
    with AgentSession(stamped_provider(n_events, pace)) as session:
        for event in session.submit_turn_stream("go"):
            now = time.monotonic_ns()
            if isinstance(event, TextDelta):
                stamps.append(int(event.text))
                seen.append(now)
    return stamps, seen


def rate_and_latency(stamps: List[int], seen: List[int]) -> Tuple[float, List[float]]:
    rate = len(seen) / ((seen[-1] - stamps[0]) / 1e9)
    return rate, [(s - t) / 1000 for t, s in zip(stamps, seen)]


def bench_events(url: str, client: redis.Redis, n_events: int, repeats: int, pace: float = 0.0) -> None:
    runner = make_runner(client, n_events)
    queue = rq.Queue(QUEUE, connection=client)
    workers = Workers(url, 1, "SimpleWorker", n_events, pace)
    try:
        rows = {"in-process stream": ([], []), "job worker -> Redis -> SSE": ([], [])}
        in_process_turn(n_events, pace)  # warm-up
        warm = TurnJob(session_id=uuid.uuid4().hex, turn_id=uuid.uuid4().hex, user_input="go")
        enqueue_turn(queue, "_relay_app.run_turn", warm)
        read_sse(runner.relay, warm.turn_id)
        for _ in range(repeats):
            rate, lat = rate_and_latency(*in_process_turn(n_events, pace))
            rows["in-process stream"][0].append(rate)
            rows["in-process stream"][1].extend(lat)
            job = TurnJob(session_id=uuid.uuid4().hex, turn_id=uuid.uuid4().hex, user_input="go")
            enqueue_turn(queue, "_relay_app.run_turn", job)
            rate, lat = rate_and_latency(*read_sse(runner.relay, job.turn_id))
            rows["job worker -> Redis -> SSE"][0].append(rate)
            rows["job worker -> Redis -> SSE"][1].extend(lat)
    finally:
        workers.stop()
    base_rate = statistics.median(rows["in-process stream"][0])
    out = []
    for name, (rates, lats) in rows.items():
        rate = statistics.median(rates)
        out.append([name, f"{rate:,.0f}", f"{rate / base_rate:.2f}", f"{percentile(lats, 0.5):,.0f}",
                    f"{percentile(lats, 0.99):,.0f}"])
    paced = f", paced at {pace:g} deltas/s" if pace else ", as fast as the provider makes them"
    print(f"\nOne turn of {n_events} text deltas{paced}; median of {repeats} turns (latency over all deltas):\n")
    print(table(["path", "events/s", "ratio", "latency p50 us", "latency p99 us"], out))


def run_turns_in_process(n: int, n_events: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        in_process_turn(n_events)
    return n / (time.perf_counter() - start)


def run_turns_on_workers(url: str, client: redis.Redis, worker_class: str, count: int, n: int,
                         n_events: int) -> float:
    runner = make_runner(client, n_events)
    queue = rq.Queue(QUEUE, connection=client)
    workers = Workers(url, count, worker_class, n_events)
    try:
        warm = [TurnJob(session_id=uuid.uuid4().hex, turn_id=uuid.uuid4().hex, user_input="go")
                for _ in range(2 * count)]
        for job in warm:
            enqueue_turn(queue, "_relay_app.run_turn", job)
        for job in warm:
            list(runner.relay.read(job.turn_id, timeout=WAIT))
        jobs = [TurnJob(session_id=uuid.uuid4().hex, turn_id=uuid.uuid4().hex, user_input="go") for _ in range(n)]
        start = time.perf_counter()
        with client.pipeline() as pipe:
            for job in jobs:
                queue.enqueue("_relay_app.run_turn", job.to_dict(), job_id=job.turn_id, pipeline=pipe)
            pipe.execute()
        for job in jobs:
            for _ in runner.relay.read(job.turn_id, timeout=WAIT):
                pass
        return n / (time.perf_counter() - start)
    finally:
        workers.stop()


def bench_turns(url: str, client: redis.Redis, n: int, n_events: int) -> None:
    base = run_turns_in_process(n, n_events)
    rows = [["in this process, one after another", "-", f"{base:,.1f}", "1.00"]]
    for worker_class in WORKER_CLASSES:
        for count in (1, 2, 4):
            rate = run_turns_on_workers(url, client, worker_class, count, n, n_events)
            rows.append([f"rq {worker_class}", count, f"{rate:,.1f}", f"{rate / base:.2f}"])
    print(f"\n{n} turns of {n_events} text deltas each, enqueued at once; until the last end mark is read:\n")
    print(table(["where", "workers", "turns/s", "ratio"], rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pace", type=float, default=200.0, help="deltas/s of the paced run (a model's pace)")
    parser.add_argument("--redis-url")
    args = parser.parse_args()
    server = None
    url = args.redis_url
    if url is None:
        from tests.support.redis_server import RedisServer

        server = RedisServer().start()
        url = server.url
    client = redis.Redis.from_url(url)
    try:
        print(f"Python {sys.version.split()[0]}, redis-py {redis.__version__}, rq {rq.__version__}, "
              f"Redis {client.info('server')['redis_version']}, {os.cpu_count()} CPUs")
        bench_events(url, client, args.events, args.repeats)
        bench_events(url, client, min(args.events, 500), args.repeats, pace=args.pace)
        bench_turns(url, client, args.turns, 20)
    finally:
        client.close()
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
