"""The agcore_sync client of bench_concurrency.py: one thread per conversation.

N caller threads each own an :class:`AgentSession`; all sessions share ONE
:class:`OpenAIProvider` (so one ``requests.Session`` and its connection
pool) and one :class:`ToolRegistry`. Each caller runs ``turns`` streamed
turns with ``submit_turn_stream`` and reads every event, as a web request
thread relaying a turn to a browser does.

The provider is subclassed only to stamp each event as it leaves
``chat_stream`` (in the stream's worker thread): the consumer's clock on
receipt minus that stamp is the hand-off latency.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Dict, Iterator, List

from _concurrency_common import OpenTurns, Sampler, add, clock, cpu_seconds, latency_us, percentiles

from agcore_sync import AgentSession, CycleConfig, Error, OpenAIProvider, TextDelta, ToolRegistry, tool

#: Bound on every wait of the workload (seconds): a stuck run fails instead of hanging.
RUN_TIMEOUT = 600.0


class StampingProvider(OpenAIProvider):
    """``OpenAIProvider`` that records when each event leaves ``chat_stream``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sent: Dict[int, float] = {}

    def chat_stream(self, request: Any) -> Iterator[Any]:
        inner = super().chat_stream(request)
        sent = self.sent
        try:
            for event in inner:
                sent[id(event)] = time.perf_counter()  # the event is alive until consumed: ids are unique
                yield event
        finally:
            inner.close()


def run(port: int, n: int, turns: int, warmed: Callable[[], None]) -> Dict[str, Any]:
    """Run ``n`` conversations of ``turns`` turns at once; return the measures.

    One turn runs first, alone, to load what the first use loads; then
    ``warmed()`` is called (the parent reads the server's counters) and
    the measured run starts.
    """
    provider = StampingProvider(base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-bench", model="gpt-4o-mini")
    registry = ToolRegistry()
    registry.register(tool(add))
    config = CycleConfig()
    with AgentSession(provider, config, registry=registry).submit_turn_stream("What is 1 + 1?") as warm_up:
        for event in warm_up:
            if isinstance(event, Error):
                raise RuntimeError(f"the warm-up turn failed: {event.message}")
    provider.sent.clear()
    warmed()
    open_turns = OpenTurns()
    sampler = Sampler(open_turns)
    barrier = threading.Barrier(n + 1, timeout=RUN_TIMEOUT)
    text_latency: List[float] = []
    handoff: List[float] = []
    errors: List[str] = []
    counts = {"events": 0, "turns": 0}
    count_lock = threading.Lock()

    def conversation(i: int) -> None:
        session = AgentSession(provider, config, registry=registry)
        events = done = 0
        barrier.wait()
        for t in range(turns):
            open_turns.add(1)
            try:
                with session.submit_turn_stream(f"What is {i} + {t}?") as stream:
                    for event in stream:
                        now = time.perf_counter()
                        now_ns = time.monotonic_ns()
                        events += 1
                        left = provider.sent.pop(id(event), None)
                        if left is not None:
                            handoff.append((now - left) * 1e6)
                        if isinstance(event, TextDelta):
                            latency_us(event.text, now_ns, text_latency)
                        elif isinstance(event, Error):
                            errors.append(event.message)
                done += 1
            finally:
                open_turns.add(-1)
        with count_lock:
            counts["events"] += events
            counts["turns"] += done

    callers = [threading.Thread(target=conversation, args=(i,), name=f"bench-caller-{i}", daemon=True)
               for i in range(n)]
    sampler.start()
    try:
        for caller in callers:
            caller.start()
        barrier.wait()
        cpu0, t0 = cpu_seconds(), clock()
        for caller in callers:
            caller.join(RUN_TIMEOUT)
        wall, cpu = clock() - t0, cpu_seconds() - cpu0
    finally:
        sampler.stop()
        registry.close()
        provider.close()
    stuck = [c.name for c in callers if c.is_alive()]
    if stuck:
        raise RuntimeError(f"{len(stuck)} conversations did not finish")
    return {
        "client": "ours", "n": n, "turns": counts["turns"], "errors": errors[:5], "error_count": len(errors),
        "wall_s": wall, "cpu_s": cpu, "events": counts["events"],
        "text_latency_us": percentiles(text_latency), "handoff_us": percentiles(handoff),
        **sampler.result(),
    }
