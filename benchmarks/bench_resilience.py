"""Resilience: a rate limit shared by processes through Redis, failover under faults, and the overhead.

Run from the repository root (needs redis-server and ``redis``)::

    python benchmarks/bench_resilience.py [--duration 120] [--turns 1000] [--json FILE]

It starts a redis-server of its own on 127.0.0.1 (tests/support/redis_server.py)
and a local OpenAI-compatible HTTP server (a thread of this process, on
127.0.0.1) that counts what it receives, and stops both at the end.

1. **Shared budget.** ``--processes`` (4) child processes, ``--threads`` (4)
   threads each, send requests as fast as their
   ``RateLimitedProvider(OpenAIProvider, RateLimit(60 RPM, 100k TPM),
   store=RedisRateLimitStore)`` lets them, all under one key, for
   ``--duration`` seconds. A request asks ``max_tokens=2000``; the server
   answers with a completion of 1,500 to 2,000 tokens (``usage``), so both
   budgets bind. The server keeps the provider's own books: a token bucket
   per dimension with the same rules (a minute's budget, refilled
   continuously, full when the first request arrives), charged with each
   request's real usage on arrival; a request it has no room for is *over budget* (a real
   provider would answer 429). The check allows 250 ms of refill for the
   time between taking the budget and arriving. It also prints the requests
   and tokens of each whole minute since the start. *Used* is what arrived
   over what the budget allowed from the first arrival to the last (a full
   minute at the start plus the refill in between).
2. **Failover.** ``--turns`` (1,000) streamed session turns on 4 threads
   through ``FallbackProvider([primary, backup], circuit=CircuitBreaker(5,
   reset_after=0.2))``. The primary fails for a scripted part of the turns:
   down (503), then 429 with ``Retry-After: 1``, then stalls (no answer
   within its 0.1 s timeout). Checked on every turn's events: it succeeded,
   its first event is its one ``MessageStart``, and its text is one whole
   answer (a failover after the first event would show two starts or a
   spliced text). The breaker's state changes are read from its log.
3. **Overhead.** Median per request: ``RateLimitedProvider`` around an
   instant in-process provider against the bare provider (in-process store;
   RPM + concurrency, then with TPM and its JSON estimate too), in CPU time
   of the calling thread (``time.thread_time``: the machine may be shared);
   and the
   Redis store's acquire against a bare ``EVALSHA`` of ``return 0`` on the
   same connection (one round trip each).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import queue
import statistics
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "benchmarks")]

from _common import table  # noqa: E402
from _resilience_server import ANSWER_PIECES, RPM, TPM, BenchServer, serve  # noqa: E402

from agcore_sync import (  # noqa: E402
    AgentSession,
    CircuitBreaker,
    FallbackProvider,
    LlmProvider,
    Message,
    MessageComplete,
    MessageRequest,
    MessageResponse,
    MessageStart,
    OpenAIProvider,
    RateLimit,
    RateLimitedProvider,
    RateLimitWaitExceeded,
    StopReason,
    TextDelta,
    Usage,
)

#: The primary's read timeout in part 2 (the server stalls longer).
PRIMARY_TIMEOUT = 0.1


# -- part 1: the shared budget -----------------------------------------------------


def child(port: int, redis_port: int, threads: int, deadline_s: float) -> None:
    """One process of part 1: ``threads`` threads sending until the deadline; prints its counts as JSON."""
    import redis

    from agcore_sync.contrib.redis import RedisRateLimitStore

    client = redis.Redis(host="127.0.0.1", port=redis_port)
    deadline = time.monotonic() + deadline_s
    inner = OpenAIProvider("bench-model", api_key="sk-bench", base_url=f"http://127.0.0.1:{port}/budget/v1")
    provider = RateLimitedProvider(inner, RateLimit(requests_per_minute=RPM, tokens_per_minute=TPM, max_wait=5.0),
                                   store=RedisRateLimitStore(client), key="bench")
    request = MessageRequest(None, [Message.user("Summarise the report in three lines.")], max_tokens=2000)
    sent, waits, errors = [0], [0], []

    def run() -> None:
        while time.monotonic() < deadline:
            try:
                provider.chat(request)
                sent[0] += 1
            except RateLimitWaitExceeded:
                waits[0] += 1
            except Exception as exc:  # noqa: BLE001 - reported to the parent
                errors.append(repr(exc))
                return

    workers = [threading.Thread(target=run, name=f"agcore-bench-{i}") for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    provider.close()
    client.close()
    print(json.dumps({"sent": sent[0], "wait_exceeded": waits[0], "errors": errors}))


def shared_budget(server: BenchServer, redis_port: int, processes: int, threads: int, duration: float) -> Dict:
    server.start_budget()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    procs = [subprocess.Popen([sys.executable, __file__, "--child", str(server.server_address[1]), str(redis_port),
                               str(threads), str(duration)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for _ in range(processes)]
    outs = []
    for proc in procs:
        out, err = proc.communicate(timeout=duration + 120)
        if proc.returncode != 0:
            raise SystemExit(f"a child failed:\n{err[-3000:]}")
        outs.append(json.loads(out.strip().splitlines()[-1]))
    with server.lock:
        arrivals = list(server.arrivals)
        over_requests, over_tokens = (server.requests.over, server.tokens.over) if arrivals else (0, 0)
    # The budget allowed up to the last arrival: a full minute at the start plus the refill since.
    elapsed = max((at for at, _ in arrivals), default=duration)
    allowed_requests = RPM + RPM * elapsed / 60
    allowed_tokens = TPM + TPM * elapsed / 60
    tokens = sum(t for _, t in arrivals)
    minutes: Dict[int, List[int]] = {}
    for at, used in arrivals:
        cell = minutes.setdefault(int(at // 60), [0, 0])
        cell[0] += 1
        cell[1] += used
    return {"processes": processes, "threads": threads, "duration_s": duration, "elapsed_s": elapsed,
            "requests": len(arrivals),
            "tokens": tokens, "over_budget_requests": over_requests, "over_budget_tokens": over_tokens,
            "used_requests": len(arrivals) / allowed_requests, "used_tokens": tokens / allowed_tokens,
            "per_minute": {str(k): v for k, v in sorted(minutes.items())},
            "errors": [e for o in outs for e in o["errors"]], "wait_exceeded": sum(o["wait_exceeded"] for o in outs)}


# -- part 2: failover ----------------------------------------------------------------


class StateLog(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.changes: List[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.changes.append(record.getMessage().split(": ", 1)[1].split(" for ")[0])


def failover(server: BenchServer, turns: int, threads: int) -> Dict:
    url = f"http://127.0.0.1:{server.server_address[1]}"
    primary = OpenAIProvider("primary-model", api_key="sk-a", base_url=f"{url}/a/v1", timeout=PRIMARY_TIMEOUT)
    backup = OpenAIProvider("backup-model", api_key="sk-b", base_url=f"{url}/b/v1", timeout=10.0)
    provider = FallbackProvider([primary, backup], circuit=CircuitBreaker(5, reset_after=0.2))
    log = StateLog()
    circuit_log = logging.getLogger("agcore_sync.llm.circuit")
    circuit_log.addHandler(log)
    circuit_log.setLevel(logging.WARNING)
    logging.getLogger("agcore_sync.llm.fallback").setLevel(logging.ERROR)
    # The scripted faults, by turn: down, then 429, then stalls; healthy before and after.
    phases = [(0.1, "down"), (0.3, "429"), (0.45, "stall"), (0.6, "ok")]
    work: queue.Queue = queue.Queue()
    for i in range(turns):
        work.put(i)
    results: List[Dict[str, Any]] = []
    lock = threading.Lock()

    def run() -> None:
        while True:
            try:
                index = work.get_nowait()
            except queue.Empty:
                return
            mode = "ok"
            for start, name in phases:
                if index >= start * turns:
                    mode = name
            server.primary_mode = mode
            outcome: Dict[str, Any] = {"index": index, "mode": mode}
            try:
                session = AgentSession(provider)
                with session.submit_turn_stream("What is the answer?") as stream:
                    events = list(stream)
                starts = [e for e in events if isinstance(e, MessageStart)]
                text = "".join(e.text for e in events if isinstance(e, TextDelta))
                outcome.update(ok=True, one_start_first=len(starts) == 1 and events[0] is starts[0],
                               whole=text == "".join(ANSWER_PIECES), model=starts[0].model if starts else None,
                               complete=isinstance(events[-1], MessageComplete))
            except Exception as exc:  # noqa: BLE001 - counted
                outcome.update(ok=False, error=repr(exc))
            with lock:
                results.append(outcome)

    started = time.perf_counter()
    workers = [threading.Thread(target=run, name=f"agcore-bench-turn-{i}") for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    elapsed = time.perf_counter() - started
    circuit_log.removeHandler(log)
    provider.close()
    ok = [r for r in results if r["ok"]]
    return {"turns": turns, "succeeded": len(ok), "success_rate": len(ok) / turns, "seconds": elapsed,
            "events_ok": all(r["one_start_first"] and r["whole"] and r["complete"] for r in ok),
            "by_backup": sum(r["model"] == "backup-model" for r in ok),
            "by_primary": sum(r["model"] == "primary-model" for r in ok),
            "breaker_changes": log.changes, "breaker_opened": any(c.endswith("-> open") for c in log.changes),
            "breaker_closed_again": any(c.endswith("-> closed") for c in log.changes),
            "final_state": provider.circuits[0].state, "server_counts": dict(server.counts),
            "errors": [r["error"] for r in results if not r["ok"]][:5]}


# -- part 3: overhead ---------------------------------------------------------------


class Instant(LlmProvider):
    """Answers at once with a fixed response: what is left is the wrapper's cost."""

    model = "instant"

    def __init__(self) -> None:
        self.response = MessageResponse("r", "instant", Message.assistant("ok"), StopReason.STOP, Usage(10, 2))

    def chat(self, request: MessageRequest) -> MessageResponse:
        return self.response

    def chat_stream(self, request: MessageRequest) -> Any:
        raise NotImplementedError


def per_call_us(call: Any, n: int, repeats: int = 5, clock: Any = time.perf_counter) -> float:
    """Median over ``repeats`` runs of the time per call; ``clock=time.thread_time`` counts CPU time only."""
    runs = []
    for _ in range(repeats):
        started = clock()
        for _ in range(n):
            call()
        runs.append((clock() - started) / n * 1e6)
    return statistics.median(runs)


def overhead(redis_port: int, n: int, redis_n: int) -> Dict:
    import redis

    from agcore_sync.contrib.redis import RedisRateLimitStore

    request = MessageRequest(None, [Message.user("What is 17 * 23?")], max_tokens=100)
    bare = Instant()
    big = 1e12
    rpm = RateLimitedProvider(bare, RateLimit(requests_per_minute=big, max_concurrent=1_000_000))
    all3 = RateLimitedProvider(bare, RateLimit(requests_per_minute=big, tokens_per_minute=big,
                                               max_concurrent=1_000_000))
    # CPU time of this thread: on a shared, loaded machine wall time mostly measures the other processes.
    cpu = time.thread_time
    bare_us = per_call_us(lambda: bare.chat(request), n, clock=cpu)
    rpm_us = per_call_us(lambda: rpm.chat(request), n, clock=cpu)
    all_us = per_call_us(lambda: all3.chat(request), n, clock=cpu)
    client = redis.Redis(host="127.0.0.1", port=redis_port)
    try:
        noop = client.register_script("return 0")
        noop()
        shared = RateLimitedProvider(bare, RateLimit(requests_per_minute=big), store=RedisRateLimitStore(client),
                                     key="overhead")
        shared.chat(request)
        # Interleaved runs, so both see the same load; medians over the runs.
        evalsha_runs, redis_runs = [], []
        for _ in range(7):
            evalsha_runs.append(per_call_us(noop, redis_n, repeats=1))
            redis_runs.append(per_call_us(lambda: shared.chat(request), redis_n, repeats=1))
        evalsha_us, redis_us = statistics.median(evalsha_runs), statistics.median(redis_runs)
        # Round trips: every command the client sends goes through execute_command (no pipelines here).
        sent: List[str] = []
        execute = client.execute_command

        def counted(*args: Any, **kwargs: Any) -> Any:
            sent.append(str(args[0]))
            return execute(*args, **kwargs)

        client.execute_command = counted  # type: ignore[method-assign]
        for _ in range(100):
            shared.chat(request)
        client.execute_command = execute  # type: ignore[method-assign]
        # Time inside Redis per script (commandstats), which a loaded machine's scheduling does not blur.
        server_us = {}
        for name, call in (("evalsha", noop), ("acquire", lambda: shared.chat(request))):
            client.config_resetstat()
            for _ in range(redis_n):
                call()
            server_us[name] = client.info("commandstats")["cmdstat_evalsha"]["usec_per_call"]
    finally:
        client.close()
    return {"bare_us": bare_us, "rpm_concurrency_overhead_us": rpm_us - bare_us,
            "rpm_tpm_concurrency_overhead_us": all_us - bare_us, "redis_chat_us": redis_us,
            "bare_evalsha_us": evalsha_us, "redis_over_evalsha": redis_us / evalsha_us,
            "round_trips_per_acquire": len(sent) / 100, "commands": sorted(set(sent)),
            "server_us_evalsha": server_us["evalsha"], "server_us_acquire": server_us["acquire"]}


# -- main ---------------------------------------------------------------------------


def print_budget(budget: Dict[str, Any], args: argparse.Namespace) -> None:
    print(f"1. shared budget: {RPM} RPM, {TPM:,} TPM, {args.processes} processes x {args.threads} threads, "
          f"{args.duration:g} s, one Redis")
    print(table(["requests", "tokens", "over budget (req/tok)", "used req", "used tok", "waits > max_wait"],
                [[budget["requests"], f"{budget['tokens']:,}",
                  f"{budget['over_budget_requests']}/{budget['over_budget_tokens']}",
                  f"{budget['used_requests']:.1%}", f"{budget['used_tokens']:.1%}", budget["wait_exceeded"]]]))
    print("   per whole minute (requests, tokens):", budget["per_minute"])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        port, redis_port, threads, duration = sys.argv[2:6]
        child(int(port), int(redis_port), int(threads), float(duration))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=120.0, help="seconds of part 1 (default 120)")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--overhead-calls", type=int, default=20000)
    parser.add_argument("--redis-calls", type=int, default=2000)
    parser.add_argument("--skip-budget", action="store_true", help="leave out part 1 (its two minutes)")
    parser.add_argument("--json", help="write the results to this file")
    args = parser.parse_args()

    from tests.support.redis_server import RedisServer

    results: Dict[str, Any] = {}
    redis_server = RedisServer().start()
    server, thread = serve()
    try:
        if not args.skip_budget:
            budget = results["budget"] = shared_budget(server, redis_server.port, args.processes, args.threads,
                                                       args.duration)
            print_budget(budget, args)
        fail = results["failover"] = failover(server, args.turns, 4)
        print(f"2. failover: {args.turns} streamed turns, primary down / 429 / stalling for 50% of them")
        print(table(["succeeded", "by primary", "by backup", "events ok", "breaker opened", "closed again",
                     "final state", "s"],
                    [[f"{fail['success_rate']:.1%}", fail["by_primary"], fail["by_backup"], fail["events_ok"],
                      fail["breaker_opened"], fail["breaker_closed_again"], fail["final_state"], fail["seconds"]]]))
        print("   primary requests by mode:", fail["server_counts"])
        over = results["overhead"] = overhead(redis_server.port, args.overhead_calls, args.redis_calls)
        print("3. overhead per request (medians; in-process figures are CPU time, Redis ones wall time)")
        print(table(["bare us", "+RPM+concurrency us", "+RPM+TPM+concurrency us", "Redis chat us",
                     "bare EVALSHA us", "Redis / EVALSHA", "round trips"],
                    [[over["bare_us"], over["rpm_concurrency_overhead_us"], over["rpm_tpm_concurrency_overhead_us"],
                      over["redis_chat_us"], over["bare_evalsha_us"], over["redis_over_evalsha"],
                      f"{over['round_trips_per_acquire']:.2f} ({', '.join(over['commands'])})"]]))
        print(f"   time inside Redis per call: bare EVALSHA {over['server_us_evalsha']:.1f} us, "
              f"acquire script {over['server_us_acquire']:.1f} us")
    finally:
        server.stopping.set()
        server.shutdown()
        server.server_close()
        thread.join(10)
        redis_server.stop()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
