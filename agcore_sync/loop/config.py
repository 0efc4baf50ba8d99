"""CycleConfig: the settings of an LLM cycle and of the tool loops it runs.

A frozen value, shared by :class:`~agcore_sync.loop.cycle.LlmCycle` and the
loops of :mod:`agcore_sync.loop.tool_loop`; change it with ``attrs.evolve``.
It sits below every other module of :mod:`agcore_sync.loop`, so the loops
read it without importing the cycle.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Union

import attrs

from agcore_sync import _check
from agcore_sync._values import value_methods
from agcore_sync.llm.retry import RetryConfig
from agcore_sync.llm.types import check_thinking
from agcore_sync.loop.limits import UsageLimits

__all__ = ["CycleConfig", "DEFAULT_MAX_TOOL_TURNS", "OUTPUT_MODES"]

#: The values of ``CycleConfig.output_mode``.
OUTPUT_MODES = ("native", "tool", "prompted")

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
@value_methods
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
            (None: 10); output retries (``output_retries``) come on top.
        tool_timeout_secs: one deadline for each round's tool calls (None: no limit).
        max_tool_result_bytes: tool results longer than this (UTF-8 bytes)
            are cut, with a marker (None: no limit).
        max_repeated_tool_calls: a call identical to the previous N calls in
            a row is refused (None: no guard).
        output_mode: how ``output=`` is asked for: ``"native"`` (OpenAI
            ``response_format``, Anthropic ``output_config.format``),
            ``"tool"`` (a forced output tool, for servers without native
            support) or ``"prompted"`` (the schema in the system prompt).
        output_retries: how many times an answer that does not match the
            output schema is sent back to the model with its errors before
            ``OutputValidationError`` is raised.
        prompt_cache: Anthropic cache breakpoints (tools, system, last
            messages); OpenAI caches by itself.
        thinking: Anthropic extended thinking: a budget in tokens (at least
            1024, below ``max_tokens``) or ``"adaptive"``.
        reasoning_effort: OpenAI ``reasoning_effort``, Anthropic
            ``output_config.effort`` (``"low"``, ``"medium"``, ``"high"``
            or any value the API accepts).
        extra_body: merged last into every request body (replacing
            top-level keys), for server-specific fields.

    Raises:
        ValueError: an unknown ``output_mode``, negative ``output_retries``,
            or a thinking budget under 1024 or not below ``max_tokens``.

        usage_limits: a :class:`~agcore_sync.loop.limits.UsageLimits` budget
            for each tool-loop turn (None: no limit).

    .. versionchanged:: 0.1.0
       ``output_mode``, ``output_retries``, ``prompt_cache``, ``thinking``,
       ``reasoning_effort`` and ``extra_body``.

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
    output_mode: str = attrs.field(default="native", kw_only=True)
    output_retries: int = attrs.field(default=1, kw_only=True)
    prompt_cache: bool = attrs.field(default=False, kw_only=True, converter=bool)
    thinking: Union[None, int, str] = attrs.field(default=None, kw_only=True)
    reasoning_effort: Optional[str] = attrs.field(default=None, kw_only=True)
    extra_body: Optional[Dict[str, Any]] = attrs.field(default=None, kw_only=True)

    def __attrs_post_init__(self) -> None:
        if self.output_mode not in OUTPUT_MODES:
            raise ValueError(f"output_mode must be one of {OUTPUT_MODES}, got {self.output_mode!r}")
        if isinstance(self.output_retries, bool) or not isinstance(self.output_retries, int) \
                or self.output_retries < 0:
            raise ValueError(f"output_retries must be an int >= 0, got {self.output_retries!r}")
        if self.extra_body is not None and not isinstance(self.extra_body, dict):
            raise TypeError(f"extra_body must be a dict or None, got {type(self.extra_body).__name__}")
        check_thinking(self.thinking, self.max_tokens)

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
