"""Helpers for tests of the SSE parser (tests/http/test_sse.py, the property tests)."""

from __future__ import annotations

from typing import List, Sequence

from agcore_sync._http.sse import SseEvent, SseParser

__all__ = ["parse", "split_at"]


def parse(*chunks: bytes) -> List[SseEvent]:
    """Feed ``chunks`` one by one, then close, and return every event."""
    parser = SseParser()
    events: List[SseEvent] = []
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    events.extend(parser.close())
    return events


def split_at(body: bytes, points: Sequence[int]) -> List[bytes]:
    """Cut ``body`` at the offsets ``points`` (sorted here; empty pieces included)."""
    bounds = [0, *sorted(points), len(body)]
    return [body[a:b] for a, b in zip(bounds, bounds[1:])]
