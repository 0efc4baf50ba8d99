"""What a provider's rate-limit response headers say is left (pure, no I/O).

Read, for requests and for tokens, the remaining count and the seconds until
it resets:

- OpenAI (and the OpenAI-compatible servers that copy it):
  ``x-ratelimit-remaining-requests``, ``x-ratelimit-reset-requests``,
  ``x-ratelimit-remaining-tokens``, ``x-ratelimit-reset-tokens``; the reset
  is a duration such as ``"1s"``, ``"6m0s"``, ``"20ms"`` or ``"1h2m3.5s"``.
- Anthropic: ``anthropic-ratelimit-requests-remaining`` / ``-reset``,
  ``anthropic-ratelimit-tokens-remaining`` / ``-reset`` (the most
  restrictive token limit; ``input-tokens`` when that is absent); the reset
  is an RFC 3339 time.

A header that is missing or does not parse is ignored (headers are advice).
:func:`tightened_level` turns a reading into the level a local bucket may
hold at most.
"""

from __future__ import annotations

import datetime
import re
import time
from typing import Callable, Mapping, Optional, Tuple

__all__ = ["Reading", "read_headers", "parse_duration", "tightened_level"]

#: ``(remaining, seconds until reset)`` of one limit.
Reading = Tuple[float, float]

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}

_OPENAI = {"requests": ("x-ratelimit-remaining-requests", "x-ratelimit-reset-requests"),
           "tokens": ("x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens")}
_ANTHROPIC = {"requests": (("anthropic-ratelimit-requests-remaining", "anthropic-ratelimit-requests-reset"),),
              "tokens": (("anthropic-ratelimit-tokens-remaining", "anthropic-ratelimit-tokens-reset"),
                         ("anthropic-ratelimit-input-tokens-remaining", "anthropic-ratelimit-input-tokens-reset"))}


def parse_duration(text: str) -> Optional[float]:
    """Return the seconds of an OpenAI reset duration (``"6m0s"``, ``"20ms"``, ``"1.5s"``), or None."""
    text = text.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    total, end = 0.0, 0
    for match in _DURATION.finditer(text):
        if match.start() != end:
            return None
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        end = match.end()
    return total if end and end == len(text) else None


def _parse_time(text: str, wall: float) -> Optional[float]:
    try:
        when = datetime.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return parse_duration(text)
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return max(0.0, when.timestamp() - wall)


def _number(text: Optional[str]) -> Optional[float]:
    if text is None:
        return None
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if value >= 0 and value == value else None


def read_headers(headers: Mapping[str, str], wall: Callable[[], float] = time.time
                 ) -> Tuple[Optional[Reading], Optional[Reading]]:
    """Return the ``(requests, tokens)`` readings of ``headers`` (None where absent).

    ``headers`` must look names up case-insensitively (``requests``' do).
    """
    readings = []
    for bucket in ("requests", "tokens"):
        reading: Optional[Reading] = None
        remaining_name, reset_name = _OPENAI[bucket]
        remaining = _number(headers.get(remaining_name))
        if remaining is not None:
            reset = headers.get(reset_name)
            reading = (remaining, (parse_duration(reset) if reset else None) or 0.0)
        else:
            for remaining_name, reset_name in _ANTHROPIC[bucket]:
                remaining = _number(headers.get(remaining_name))
                if remaining is not None:
                    reset = headers.get(reset_name)
                    reading = (remaining, (_parse_time(reset, wall()) if reset else None) or 0.0)
                    break
        readings.append(reading)
    return readings[0], readings[1]


def tightened_level(reading: Reading, per_minute: float, unit: float) -> float:
    """Return the most a local bucket may hold after ``reading``.

    The remaining count itself; when nothing is left, a level that refills
    (at ``per_minute`` / 60 a second) to ``unit`` exactly when the server
    resets, so the next request waits for the reset.
    """
    remaining, reset = reading
    if remaining >= 1:
        return remaining
    return unit - per_minute * reset / 60.0
