"""Prices per million tokens and the cost of a :class:`Usage`.

cost = ((prompt - cache_read - cache_write) x input
        + cache_read x cache_read price + cache_write x cache_write price
        + completion x output) / 1e6

A cache price left None is charged at the input price. The longest
model-name prefix in the table wins (a Bedrock cross-region profile id such
as ``us.anthropic.claude-...`` is looked up without its ``us.``); a table the user passes replaces the
built-in one entirely.
"""

from __future__ import annotations

from typing import Mapping, Optional, Union

import attrs

from agcore_sync._values import value_methods
from agcore_sync.llm.types import Usage

__all__ = ["Pricing", "DEFAULT_PRICING", "DEFAULT_PRICING_DATE", "PricingArg", "find_pricing", "cost_usd"]


@attrs.frozen
@value_methods
class Pricing:
    """USD per million tokens.

    Args:
        input: price of an uncached prompt token.
        output: price of a completion token.
        cache_read: price of a prompt token read from cache (None: ``input``).
        cache_write: price of a prompt token written to cache (None: ``input``).
    """

    input: float
    output: float
    cache_read: Optional[float] = None
    cache_write: Optional[float] = None

    def cost(self, usage: Usage) -> float:
        """Return the cost of ``usage`` in USD."""
        cache_read = self.input if self.cache_read is None else self.cache_read
        cache_write = self.input if self.cache_write is None else self.cache_write
        uncached = max(0, usage.prompt_tokens - usage.cache_read_tokens - usage.cache_write_tokens)
        return (
            uncached * self.input
            + usage.cache_read_tokens * cache_read
            + usage.cache_write_tokens * cache_write
            + usage.completion_tokens * self.output
        ) / 1e6


#: The date the built-in prices were copied from the providers' price pages.
#: Prices change; pass your own ``pricing=`` where it matters.
DEFAULT_PRICING_DATE = "2025-11-01"

#: Model-name prefix -> price, as published on :data:`DEFAULT_PRICING_DATE`.
DEFAULT_PRICING: Mapping[str, Pricing] = {
    "gpt-4o": Pricing(2.50, 10.00, cache_read=1.25),
    "gpt-4o-mini": Pricing(0.15, 0.60, cache_read=0.075),
    "gpt-4.1": Pricing(2.00, 8.00, cache_read=0.50),
    "gpt-4.1-mini": Pricing(0.40, 1.60, cache_read=0.10),
    "gpt-4.1-nano": Pricing(0.10, 0.40, cache_read=0.025),
    "gpt-5": Pricing(1.25, 10.00, cache_read=0.125),
    "gpt-5-mini": Pricing(0.25, 2.00, cache_read=0.025),
    "gpt-5-nano": Pricing(0.05, 0.40, cache_read=0.005),
    "o3": Pricing(2.00, 8.00, cache_read=0.50),
    "o4-mini": Pricing(1.10, 4.40, cache_read=0.275),
    "claude-opus-4": Pricing(15.00, 75.00, cache_read=1.50, cache_write=18.75),
    "claude-opus-4-5": Pricing(5.00, 25.00, cache_read=0.50, cache_write=6.25),
    "claude-sonnet-4": Pricing(3.00, 15.00, cache_read=0.30, cache_write=3.75),
    "claude-haiku-4-5": Pricing(1.00, 5.00, cache_read=0.10, cache_write=1.25),
    "claude-3-5-haiku": Pricing(0.80, 4.00, cache_read=0.08, cache_write=1.00),
    # Amazon Bedrock, on-demand, US East (N. Virginia), from aws.amazon.com/bedrock/pricing on
    # DEFAULT_PRICING_DATE. A cross-region profile id (us., eu., apac., global.) is priced as its model;
    # AWS charges some geographic profiles of the newest models 10% more.
    "anthropic.claude-opus-4": Pricing(15.00, 75.00, cache_read=1.50, cache_write=18.75),
    "anthropic.claude-opus-4-5": Pricing(5.00, 25.00, cache_read=0.50, cache_write=6.25),
    "anthropic.claude-sonnet-4": Pricing(3.00, 15.00, cache_read=0.30, cache_write=3.75),
    "anthropic.claude-3-7-sonnet": Pricing(3.00, 15.00, cache_read=0.30, cache_write=3.75),
    "anthropic.claude-haiku-4-5": Pricing(1.00, 5.00, cache_read=0.10, cache_write=1.25),
    "anthropic.claude-3-5-haiku": Pricing(0.80, 4.00, cache_read=0.08, cache_write=1.00),
    "amazon.nova-micro": Pricing(0.035, 0.14, cache_read=0.00875),
    "amazon.nova-lite": Pricing(0.06, 0.24, cache_read=0.015),
    "amazon.nova-pro": Pricing(0.80, 3.20, cache_read=0.20),
    "amazon.nova-premier": Pricing(2.50, 12.50, cache_read=0.625),
    "meta.llama3-1-8b-instruct": Pricing(0.22, 0.22),
    "meta.llama3-1-70b-instruct": Pricing(0.72, 0.72),
    "meta.llama3-3-70b-instruct": Pricing(0.72, 0.72),
    "meta.llama4-scout-17b": Pricing(0.17, 0.66),
    "meta.llama4-maverick-17b": Pricing(0.24, 0.97),
    # Gemini: https://ai.google.dev/gemini-api/docs/pricing (paid tier, read 2025-12-01; Vertex AI's
    # https://cloud.google.com/vertex-ai/generative-ai/pricing lists the same). Prompts up to 200k
    # tokens; the Pro models charge more past 200k, which this table does not model.
    "gemini-3-pro": Pricing(2.00, 12.00, cache_read=0.20),
    "gemini-2.5-pro": Pricing(1.25, 10.00, cache_read=0.125),
    "gemini-2.5-flash": Pricing(0.30, 2.50, cache_read=0.03),
    "gemini-2.5-flash-lite": Pricing(0.10, 0.40, cache_read=0.01),
    "gemini-2.0-flash": Pricing(0.10, 0.40, cache_read=0.025),
    "gemini-2.0-flash-lite": Pricing(0.075, 0.30),
}

# Bedrock cross-region inference profile ids: "<geo>.<model id>".
_BEDROCK_GEOS = ("us.", "eu.", "apac.", "global.", "us-gov.", "jp.", "au.", "ca.")

#: What ``pricing=`` accepts: None (the built-in table), one price for every
#: model, or a mapping of model-name prefixes to prices.
PricingArg = Union[None, Pricing, Mapping[str, Pricing]]


def find_pricing(model: Optional[str], pricing: PricingArg = None) -> Optional[Pricing]:
    """Return the price of ``model``: the longest matching prefix, or None."""
    if isinstance(pricing, Pricing):
        return pricing
    table = DEFAULT_PRICING if pricing is None else pricing
    if not model:
        return None
    best = None
    for prefix in table:
        if model.startswith(prefix) and (best is None or len(prefix) > len(best)):
            best = prefix
    if best is None and model.startswith(_BEDROCK_GEOS):
        return find_pricing(model.split(".", 1)[1], table)
    return None if best is None else table[best]


def cost_usd(usage: Usage, model: Optional[str], pricing: PricingArg = None) -> Optional[float]:
    """Return the cost of ``usage`` for ``model`` in USD, or None without a price."""
    price = find_pricing(model, pricing)
    return None if price is None else price.cost(usage)
