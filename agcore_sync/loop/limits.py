"""Usage limits: a budget of requests, tool calls, tokens and dollars per turn or per session.

:class:`UsageLimits` is the budget (a frozen value; None means no limit),
:class:`RunUsage` what a turn or a session has used, and
:class:`UsageMeter` the part of a tool loop that checks (the loop counts). The
loop checks twice per round:

1. before each provider request, a limit the next request would surely
   exceed: ``max_requests`` already reached, or ``max_input_tokens``,
   ``max_total_tokens`` or ``max_cost_usd`` already used up (every request
   sends at least one input token); and before a round's tools run, a
   ``max_tool_calls`` the round's calls would pass (none of them runs);
2. after each response, every token and cost limit against what was used.

Either raises :class:`UsageLimitExceeded`, which ends the turn as any fatal
error does: the stream's last event is an ``Error``, a session turn still
ends and counts what it used. A session's limits apply to the sum over all
its turns, the turn running included. This module does no I/O.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import attrs

from agcore_sync import _instrument
from agcore_sync._values import value_methods
from agcore_sync.errors import AgcoreError
from agcore_sync.llm.cost import Pricing, PricingArg, find_pricing
from agcore_sync.llm.types import Usage

__all__ = ["RunUsage", "TurnAccount", "UsageLimitExceeded", "UsageLimits", "UsageMeter", "pricer", "run_usage"]


def _optional_limit(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"UsageLimits.{attribute.name} must be None or a number >= 0, got {value!r}")


@attrs.frozen(kw_only=True)
@value_methods
class UsageLimits:
    """A budget for a turn (``CycleConfig.usage_limits``) or a session (``AgentSession(usage_limits=...)``).

    Args:
        max_requests: provider calls (a call's retries are one call).
        max_tool_calls: tool calls handed to the registry.
        max_input_tokens: prompt tokens, cached ones included.
        max_output_tokens: completion tokens.
        max_total_tokens: prompt plus completion tokens.
        max_cost_usd: dollars, priced with the session's (or the
            provider's) pricing; a model without a price counts nothing.

    .. versionadded:: 0.2
    """

    max_requests: Optional[int] = attrs.field(default=None, validator=_optional_limit)
    max_tool_calls: Optional[int] = attrs.field(default=None, validator=_optional_limit)
    max_input_tokens: Optional[int] = attrs.field(default=None, validator=_optional_limit)
    max_output_tokens: Optional[int] = attrs.field(default=None, validator=_optional_limit)
    max_total_tokens: Optional[int] = attrs.field(default=None, validator=_optional_limit)
    max_cost_usd: Optional[float] = attrs.field(default=None, validator=_optional_limit)

    def to_dict(self) -> Dict[str, Any]:
        """Return a JSON-ready dict."""
        return attrs.asdict(self)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> UsageLimits:
        """Build limits from ``to_dict()`` output."""
        return cls(**data)

    @classmethod
    def read(cls, data: Optional[Dict[str, Any]]) -> Optional[UsageLimits]:
        """Return :meth:`from_dict` of ``data``, or None for None (saved "no limits")."""
        return None if data is None else cls.from_dict(data)


@attrs.frozen(kw_only=True)
@value_methods
class RunUsage:
    """What a turn or a session has used; ``a + b`` adds two.

    Args:
        requests: provider calls made.
        tool_calls: tool calls handed to the registry.
        input_tokens: prompt tokens.
        output_tokens: completion tokens.
        cost_usd: dollars (priced calls only).

    .. versionadded:: 0.2
    """

    requests: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: RunUsage) -> RunUsage:
        if not isinstance(other, RunUsage):
            return NotImplemented
        return RunUsage(requests=self.requests + other.requests, tool_calls=self.tool_calls + other.tool_calls,
                        input_tokens=self.input_tokens + other.input_tokens,
                        output_tokens=self.output_tokens + other.output_tokens,
                        cost_usd=self.cost_usd + other.cost_usd)

    def to_dict(self) -> Dict[str, Any]:
        """Return a JSON-ready dict."""
        return attrs.asdict(self)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> RunUsage:
        """Build a usage from ``to_dict()`` output."""
        return cls(**data)


class UsageLimitExceeded(AgcoreError):
    """A turn would pass, or has passed, one of its :class:`UsageLimits`.

    Args:
        message: which limit, its value, and what was used.
        limit: the field of :class:`UsageLimits` that was hit, e.g. ``"max_requests"``.
        value: that field's value.
        usage: what was used when the check failed (the session's sum for a
            session limit, the turn's for a turn limit).
        scope: ``"turn"`` or ``"session"``.

    .. versionadded:: 0.2
    """

    def __init__(self, message: str, *, limit: str = "", value: Any = None,
                 usage: Optional[RunUsage] = None, scope: str = "turn") -> None:
        super().__init__(message)
        self.limit = limit
        self.value = value
        self.usage = usage if usage is not None else RunUsage()
        self.scope = scope


#: ``cost(usage, model) -> dollars or None`` (None: the model has no price).
CostFn = Callable[[Usage, Optional[str]], Optional[float]]

# Checked before a request: used up means the next request surely exceeds.
_BEFORE_REQUEST = (("max_input_tokens", "input_tokens"), ("max_total_tokens", "total_tokens"),
                   ("max_cost_usd", "cost_usd"))
# Checked after a response: passed.
_AFTER_RESPONSE = (("max_input_tokens", "input_tokens"), ("max_output_tokens", "output_tokens"),
                   ("max_total_tokens", "total_tokens"), ("max_cost_usd", "cost_usd"))


def run_usage(requests: int, tool_calls: int, usage_by_model: Sequence[Tuple[Usage, Optional[str]]],
              cost: CostFn) -> RunUsage:
    """Return the :class:`RunUsage` of ``requests`` calls, ``tool_calls`` tool calls and those responses."""
    dollars = 0.0
    for usage, model in usage_by_model:
        dollars += cost(usage, model) or 0.0
    return RunUsage(requests=requests, tool_calls=tool_calls,
                    input_tokens=sum(usage.prompt_tokens for usage, _ in usage_by_model),
                    output_tokens=sum(usage.completion_tokens for usage, _ in usage_by_model),
                    cost_usd=dollars)


class UsageMeter:
    """Checks one turn's usage against its turn and session limits.

    The loop counts (requests, tool calls, responses) and asks the meter
    only when there is a limit to check (:meth:`create` returns None
    otherwise), so a loop without limits pays nothing here.

    Args:
        turn_limits: the turn's limits (``CycleConfig.usage_limits``), or None.
        session_limits: ``(limits, usage of the session's earlier turns)``, or None.
    """

    __slots__ = ("_checks",)

    def __init__(self, turn_limits: Optional[UsageLimits],
                 session_limits: Optional[Tuple[UsageLimits, RunUsage]]) -> None:
        checks = []
        if turn_limits is not None:
            checks.append(("turn", turn_limits, RunUsage()))
        if session_limits is not None:
            checks.append(("session", session_limits[0], session_limits[1]))
        self._checks: Sequence[Tuple[str, UsageLimits, RunUsage]] = tuple(checks)

    @classmethod
    def create(cls, turn_limits: Optional[UsageLimits],
               session_limits: Optional[Tuple[UsageLimits, RunUsage]]) -> Optional[UsageMeter]:
        """Return a meter for these limits, or None when there are none."""
        if turn_limits is None and session_limits is None:
            return None
        return cls(turn_limits, session_limits)

    def before_request(self, used_by_turn: RunUsage) -> None:
        """Raise if the next request would surely exceed a limit."""
        for scope, limits, base in self._checks:
            used = base + used_by_turn
            if limits.max_requests is not None and used.requests + 1 > limits.max_requests:
                self._raise(scope, "max_requests", limits.max_requests, used, "the next request would be one more")
            for name, field in _BEFORE_REQUEST:
                limit = getattr(limits, name)
                if limit is not None and getattr(used, field) >= limit:
                    self._raise(scope, name, limit, used, "it is used up before the next request")

    def after_response(self, used_by_turn: RunUsage) -> None:
        """Raise if what was used passes a token or cost limit."""
        for scope, limits, base in self._checks:
            used = base + used_by_turn
            for name, field in _AFTER_RESPONSE:
                limit = getattr(limits, name)
                if limit is not None and getattr(used, field) > limit:
                    self._raise(scope, name, limit, used, "the last response passed it")

    def before_tools(self, used_by_turn: RunUsage, count: int) -> None:
        """Raise if running ``count`` more tool calls would pass ``max_tool_calls``."""
        for scope, limits, base in self._checks:
            used = base + used_by_turn
            if limits.max_tool_calls is not None and used.tool_calls + count > limits.max_tool_calls:
                self._raise(scope, "max_tool_calls", limits.max_tool_calls, used,
                            f"the model asked for {count} more; none of them ran")

    @staticmethod
    def _raise(scope: str, limit: str, value: Any, used: RunUsage, why: str) -> None:
        raise UsageLimitExceeded(
            f"the {scope} reached its usage limit {limit}={value} ({why}); used so far: "
            f"{used.requests} requests, {used.tool_calls} tool calls, {used.input_tokens} input and "
            f"{used.output_tokens} output tokens, ${used.cost_usd:.6f}; raise the limit or start a new "
            f"{scope}",
            limit=limit, value=value, usage=used, scope=scope,
        )


def pricer(pricing: PricingArg) -> CostFn:
    """Return ``cost(usage, model)`` with each model's price looked up once."""
    prices: Dict[Optional[str], Optional[Pricing]] = {}

    def cost(usage: Usage, model: Optional[str]) -> Optional[float]:
        if model not in prices:
            prices[model] = find_pricing(model, pricing)
        price = prices[model]
        return None if price is None else price.cost(usage)

    return cost


class TurnAccount:
    """A tool loop's count of its turn (requests, tool calls) and the check of its limits.

    :meth:`start` reads the turn's limits and prices from the cycle when the
    turn starts (a session points its cycle at the turn then); without a
    limit every check is a ``None`` test.
    """

    __slots__ = ("requests", "tool_calls", "_price", "_meter")

    def __init__(self) -> None:
        #: Provider calls made, and tool calls the model asked for (refused ones included).
        self.requests = self.tool_calls = 0
        self._price: CostFn = pricer(None)
        self._meter: Optional[UsageMeter] = None

    def start(self, cycle: Any, cancelled: Any) -> Any:
        """Take the turn's prices and limits (its own and its session's) from ``cycle``.

        Returns the ``with`` block that runs the loop in its turn (the
        session's open turn made current, or a turn id of its own);
        ``cancelled`` is the loop's exception for a closed stream.
        """
        self._price = pricer(getattr(cycle, "pricing", None) or getattr(cycle.provider, "pricing", None))
        self._meter = UsageMeter.create(cycle.config.usage_limits, getattr(cycle, "session_limits", None))
        return _instrument.loop_turn(cancelled, getattr(cycle, "turn_scope", None))

    def resume(self, paused: Any) -> None:
        """Take up the count of a paused turn (its round's calls were counted before the pause)."""
        self.requests = paused.provider_calls
        self.tool_calls = sum(len(m.tool_uses) for m in (*paused.messages, paused.assistant))

    def used(self, usage_by_model: Sequence[Tuple[Usage, Optional[str]]]) -> RunUsage:
        """Return what the turn used, given its responses' ``(usage, model)``."""
        return run_usage(self.requests, self.tool_calls, usage_by_model, self._price)

    def before_request(self, usage_by_model: Sequence[Tuple[Usage, Optional[str]]]) -> None:
        """Check the limits before a request, then count it."""
        if self._meter is not None:
            self._meter.before_request(self.used(usage_by_model))
        self.requests += 1

    def after_response(self, usage_by_model: Sequence[Tuple[Usage, Optional[str]]]) -> None:
        """Check the token and cost limits after a response."""
        if self._meter is not None:
            self._meter.after_response(self.used(usage_by_model))

    def before_tools(self, usage_by_model: Sequence[Tuple[Usage, Optional[str]]], count: int) -> None:
        """Check ``max_tool_calls`` before a round's ``count`` calls run, then count them."""
        if self._meter is not None:
            self._meter.before_tools(self.used(usage_by_model), count)
        self.tool_calls += count
