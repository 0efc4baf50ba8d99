"""The asyncio peer of bench_concurrency.py: the official SDK's AsyncOpenAI, one task per conversation.

N asyncio tasks share ONE ``AsyncOpenAI`` client (its defaults: an HTTP
connection pool of up to 1,000 connections, 100 kept alive). Each task runs
the same turns as the agcore_sync client: stream a request with the ``add``
tool, assemble the tool call from its deltas, run the tool, send the result,
stream the answer. This is the loop the SDK leaves to its user, written
minimally (no validation, no hooks, no event objects of our own): the peer
does less work per chunk than a full agent library.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, Callable, Dict, List

from _concurrency_common import ADD_PARAMETERS, OpenTurns, Sampler, add, clock, cpu_seconds, latency_us, percentiles

TOOLS = [{"type": "function", "function": {"name": "add", "description": "Add two integers.",
                                           "parameters": ADD_PARAMETERS}}]

#: Bound on the whole workload (seconds): a stuck run fails instead of hanging.
RUN_TIMEOUT = 600.0


async def _workload(port: int, n: int, turns: int, warmed: Callable[[], None]) -> Dict[str, Any]:
    from openai import AsyncOpenAI  # the optional peer: imported only in this worker

    client = AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-bench", max_retries=0)
    open_turns = OpenTurns()
    start = asyncio.Event()
    text_latency: List[float] = []
    errors: List[str] = []
    counts = {"events": 0, "turns": 0}

    async def conversation(i: int) -> None:
        messages: List[Dict[str, Any]] = []
        await start.wait()
        for t in range(turns if i >= 0 else 1):
            open_turns.add(1)
            try:
                messages.append({"role": "user", "content": f"What is {i} + {t}?"})
                while True:
                    stream = await client.chat.completions.create(
                        model="gpt-4o-mini", messages=messages, tools=TOOLS, stream=True,
                        stream_options={"include_usage": True})
                    calls: Dict[int, Dict[str, str]] = {}
                    text: List[str] = []
                    async for chunk in stream:
                        now_ns = time.monotonic_ns()
                        counts["events"] += 1
                        if not chunk.choices:
                            continue
                        delta = chunk.choices[0].delta
                        if delta.content:
                            text.append(delta.content)
                            latency_us(delta.content, now_ns, text_latency)
                        for call in delta.tool_calls or ():
                            slot = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                            slot["id"] = call.id or slot["id"]
                            if call.function is not None:
                                slot["name"] = call.function.name or slot["name"]
                                slot["arguments"] += call.function.arguments or ""
                    if not calls:
                        messages.append({"role": "assistant", "content": "".join(text)})
                        break
                    messages.append({"role": "assistant", "content": None, "tool_calls": [
                        {"id": c["id"], "type": "function",
                         "function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls.values()]})
                    for c in calls.values():
                        result = add(**json.loads(c["arguments"]))
                        messages.append({"role": "tool", "tool_call_id": c["id"], "content": str(result)})
                counts["turns"] += 1
            except Exception as exc:  # noqa: BLE001 - reported, as ours reports Error events
                errors.append(f"{type(exc).__name__}: {exc}")
                return
            finally:
                open_turns.add(-1)

    start.set()
    await conversation(-1)  # the warm-up turn, alone: loads what the first use loads
    if errors or counts["turns"] != 1:
        raise RuntimeError(f"the warm-up turn failed: {errors}")
    counts.update(events=0, turns=0)
    text_latency.clear()
    start.clear()
    warmed()
    sampler = Sampler(open_turns)
    tasks = [asyncio.ensure_future(conversation(i)) for i in range(n)]
    sampler.start()
    try:
        await asyncio.sleep(0)  # every task is now waiting on ``start``
        cpu0, t0 = cpu_seconds(), clock()
        start.set()
        await asyncio.wait_for(asyncio.gather(*tasks), RUN_TIMEOUT)
        wall, cpu = clock() - t0, cpu_seconds() - cpu0
    finally:
        sampler.stop()
        await client.close()
    return {
        "client": "asyncio", "n": n, "turns": counts["turns"], "errors": errors[:5], "error_count": len(errors),
        "wall_s": wall, "cpu_s": cpu, "events": counts["events"],
        "text_latency_us": percentiles(text_latency), "handoff_us": [None, None],
        **sampler.result(),
    }


def run(port: int, n: int, turns: int, warmed: Callable[[], None]) -> Dict[str, Any]:
    """Run ``n`` conversations of ``turns`` turns at once on one event loop; return the measures.

    One turn runs first, alone; then ``warmed()`` is called and the measured run starts.
    """
    return asyncio.run(_workload(port, n, turns, warmed))
