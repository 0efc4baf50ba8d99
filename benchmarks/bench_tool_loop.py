"""Microseconds per round of the automatic tool loop, against a hand-written floor.

Workload: MockProvider answers 50 rounds of one ``add(a, b)`` call, then a
final text; ``LlmCycle.submit_with_tools`` runs them. The floor is the same
workload through a minimal loop written by hand (no validation, no hooks, no
events), measured in the same run. Run: ``python benchmarks/bench_tool_loop.py``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import median, table  # noqa: E402

from agcore_sync import CycleConfig, LlmCycle, Message, MessageRequest, MockProvider, ToolRegistry, tool  # noqa: E402

ROUNDS = 50
REPEATS = 41


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first addend.
        b: the second addend.
    """
    return a + b


def script():
    calls = [MockProvider.tool_calls(("add", {"a": i, "b": i + 1})) for i in range(ROUNDS)]
    return [*calls, MockProvider.text("done")]


def run_ours(registry, config) -> float:
    cycle = LlmCycle(MockProvider(script()), config)
    start = time.perf_counter()
    cycle.submit_with_tools("go", registry)
    return (time.perf_counter() - start) / ROUNDS * 1e6


def run_floor() -> float:
    provider = MockProvider(script())
    functions = {"add": add.__wrapped__ if hasattr(add, "__wrapped__") else add}
    start = time.perf_counter()
    messages = [Message.user("go")]
    while True:
        response = provider.chat(MessageRequest(None, tuple(messages)))
        messages.append(response.message)
        if not response.has_tool_calls:
            break
        for call in response.message.tool_uses:
            messages.append(Message.tool_result(call.id, str(functions[call.name](**call.input))))
    return (time.perf_counter() - start) / ROUNDS * 1e6


def main() -> None:
    configs = {
        "default config (tool_timeout_secs=30)": CycleConfig(max_tool_turns=ROUNDS + 1),
        "tool_timeout_secs=None (inline)": CycleConfig(max_tool_turns=ROUNDS + 1, tool_timeout_secs=None),
    }
    with ToolRegistry() as registry:
        registry.register(add)
        samples = {name: [] for name in configs}
        floor = []
        for _ in range(REPEATS):  # interleaved, so noise hits every variant alike
            for name, config in configs.items():
                samples[name].append(run_ours(registry, config))
            floor.append(run_floor())
    floor_us = median(floor)
    rows = [(name, median(values), median(values) / floor_us) for name, values in samples.items()]
    rows.append(("hand-written minimal loop (floor)", floor_us, 1.0))
    print(f"tool loop: {ROUNDS} rounds of add(a, b) + a final answer, median of {REPEATS} runs")
    print(table(["variant", "us/round", "x floor"], rows))


if __name__ == "__main__":
    main()
