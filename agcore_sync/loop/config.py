"""CycleConfig: the settings of an LLM cycle and of the tool loops it runs.

A frozen value, shared by :class:`~agcore_sync.loop.cycle.LlmCycle` and the
loops of :mod:`agcore_sync.loop.tool_loop`; change it with ``attrs.evolve``.
It sits below every other module of :mod:`agcore_sync.loop`, so the loops
read it without importing the cycle.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

import attrs

from agcore_sync import _check
from agcore_sync.llm.retry import RetryConfig
from agcore_sync.loop.limits import UsageLimits

__all__ = ["CycleConfig", "DEFAULT_MAX_TOOL_TURNS"]

#: ``max_tool_turns=None`` means this many rounds, as in the seed.
DEFAULT_MAX_TOOL_TURNS = 10


def _retry_converter(value: Any) -> Optional[RetryConfig]:
    if isinstance(value, dict):
        return RetryConfig.from_dict(value)
    return value


def _limits_converter(value: Any) -> Optional[UsageLimits]:
    if isinstance(value, dict):
        return UsageLimits.from_dict(value)
    return value


# Validators: a wrong setting fails when the config is made, naming the field.


def _optional_str(_: Any, attribute: Any, value: Any) -> None:
    _check.optional_str("CycleConfig", attribute.name, value)


def _count(_: Any, attribute: Any, value: Any) -> None:
    _check.positive_int("CycleConfig", attribute.name, value, allow_none=True)


def _seconds(_: Any, attribute: Any, value: Any) -> None:
    _check.positive_number("CycleConfig", attribute.name, value, allow_none=True)


def _temperature(_: Any, attribute: Any, value: Any) -> None:
    _check.positive_number("CycleConfig", attribute.name, value, allow_none=True, allow_zero=True)


def _retry_config(_: Any, attribute: Any, value: Any) -> None:
    _check.optional_instance("CycleConfig", attribute.name, value, RetryConfig, "a RetryConfig (or None: no retry)")


def _usage_limits(_: Any, attribute: Any, value: Any) -> None:
    _check.optional_instance("CycleConfig", attribute.name, value, UsageLimits, "a UsageLimits (or None: no limit)")


@attrs.frozen
class CycleConfig:
    """Settings of an :class:`LlmCycle` (change with ``attrs.evolve``).

    Args:
        model: the model name (None: the provider's ``model``).
        max_tokens: the completion limit sent with each request.
        temperature: sampling temperature.
        max_turns: the seed's older name for ``max_tool_turns``; wins when given.
        retry: retry settings for every provider call; None turns retry off
            (use that when the provider already is a ``RetryProvider``).
        max_tool_turns: at most this many provider calls in one tool loop
            (None: 10).
        tool_timeout_secs: one deadline for each round's tool calls (None: no limit).
        max_tool_result_bytes: tool results longer than this (UTF-8 bytes)
            are cut, with a marker (None: no limit).
        max_repeated_tool_calls: a call identical to the previous N calls in
            a row is refused (None: no guard).
        usage_limits: a :class:`~agcore_sync.loop.limits.UsageLimits` budget
            for each tool-loop turn (None: no limit).

    .. versionchanged:: 0.2 ``usage_limits``.
    """

    model: Optional[str] = attrs.field(default=None, validator=_optional_str)
    max_tokens: Optional[int] = attrs.field(default=None, validator=_count)
    temperature: Optional[float] = attrs.field(default=None, validator=_temperature)
    max_turns: Optional[int] = attrs.field(default=None, validator=_count)
    retry: Optional[RetryConfig] = attrs.field(default=RetryConfig(), converter=_retry_converter,
                                               validator=_retry_config)
    max_tool_turns: Optional[int] = attrs.field(default=10, validator=_count)
    tool_timeout_secs: Optional[float] = attrs.field(default=30.0, validator=_seconds)
    max_tool_result_bytes: Optional[int] = attrs.field(default=100_000, validator=_count)
    max_repeated_tool_calls: Optional[int] = attrs.field(default=3, validator=_count)
    usage_limits: Optional[UsageLimits] = attrs.field(default=None, converter=_limits_converter,
                                                      validator=_usage_limits)

    @property
    def tool_turn_limit(self) -> int:
        """The effective round limit (``max_turns``, else ``max_tool_turns``, else 10)."""
        if self.max_turns is not None:
            return self.max_turns
        return DEFAULT_MAX_TOOL_TURNS if self.max_tool_turns is None else self.max_tool_turns

    def to_dict(self) -> Dict[str, Any]:
        """Return a JSON-ready dict."""
        data = attrs.asdict(self, recurse=False)
        data["retry"] = None if self.retry is None else self.retry.to_dict()
        data["usage_limits"] = None if self.usage_limits is None else self.usage_limits.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> CycleConfig:
        """Build a config from ``to_dict()`` output."""
        return cls(**data)
