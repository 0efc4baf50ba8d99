"""The ``agcore-sync`` command (also ``python -m agcore_sync``).

``agcore-sync demo`` streams an answer from the built-in scripted demo model
to the terminal: no key and no network needed. This module is the only
place that prints; the library itself logs.
"""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional, TextIO

from agcore_sync.llm.cycle import CycleConfig, LlmCycle
from agcore_sync.llm.events import CostUpdate, TextDelta
from agcore_sync.llm.mock import MockProvider

__all__ = ["main", "DEMO_ANSWER"]

#: What the scripted demo model answers. It is a demo model, not a fake of a real one.
DEMO_ANSWER = (
    "Hello from agcore_sync! This answer comes from the built-in scripted demo model and reaches you "
    "as a plain Python generator of stream events, one TextDelta at a time. Point the library at a real "
    "provider with OpenAIProvider or AnthropicProvider to talk to a real model."
)


def run_demo(out: TextIO) -> int:
    """Stream the demo model's answer to ``out``; return the exit status."""
    cycle = LlmCycle(MockProvider([MockProvider.text(DEMO_ANSWER)], model="demo-model"), CycleConfig())
    out.write("you> Say hello.\nassistant> ")
    for event in cycle.submit_stream("Say hello."):
        if isinstance(event, TextDelta):
            out.write(event.text)
            out.flush()
        elif isinstance(event, CostUpdate):
            out.write(f"\n[{event.usage.total_tokens} tokens]\n")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    """Run the command line; return the exit status."""
    parser = argparse.ArgumentParser(prog="agcore-sync", description="agcore_sync command line")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="stream an answer from the built-in demo model")
    args = parser.parse_args(argv)
    if args.command == "demo":
        return run_demo(sys.stdout)
    return 2  # pragma: no cover - argparse refuses unknown commands first
