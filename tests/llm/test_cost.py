"""Pricing tables and the cost formula of DESIGN.md."""

from __future__ import annotations

import pytest

from agcore_sync.llm.cost import DEFAULT_PRICING, Pricing, cost_usd, find_pricing
from agcore_sync.llm.types import Usage


def test_cost_charges_uncached_cached_and_written_prompt_tokens_at_their_prices():
    price = Pricing(input=2.0, output=10.0, cache_read=0.5, cache_write=4.0)
    usage = Usage(prompt_tokens=1000, completion_tokens=100, cache_read_tokens=300, cache_write_tokens=200)
    expected = (500 * 2.0 + 300 * 0.5 + 200 * 4.0 + 100 * 10.0) / 1e6
    assert price.cost(usage) == pytest.approx(expected)


def test_a_cache_price_left_none_is_charged_at_the_input_price():
    usage = Usage(prompt_tokens=1000, cache_read_tokens=400, cache_write_tokens=100)
    assert Pricing(1.0, 0.0).cost(usage) == pytest.approx(1000 / 1e6)


def test_the_longest_matching_prefix_wins():
    assert find_pricing("gpt-4o-mini-2024-07-18") is DEFAULT_PRICING["gpt-4o-mini"]
    assert find_pricing("gpt-4o-2024-08-06") is DEFAULT_PRICING["gpt-4o"]
    assert find_pricing("claude-opus-4-5-20251101") is DEFAULT_PRICING["claude-opus-4-5"]


def test_an_unknown_model_has_no_price():
    assert cost_usd(Usage(10, 10), "my-local-llama") is None
    assert cost_usd(Usage(10, 10), None) is None


def test_a_user_table_replaces_the_built_in_one_and_a_single_price_covers_every_model():
    table = {"llama": Pricing(1.0, 1.0)}
    assert find_pricing("gpt-4o", table) is None
    assert cost_usd(Usage(1_000_000, 0), "llama-3", table) == pytest.approx(1.0)
    assert cost_usd(Usage(0, 1_000_000), "anything", Pricing(0.0, 3.0)) == pytest.approx(3.0)


def test_bedrock_rows_price_model_ids_and_cross_region_profiles():
    from agcore_sync.llm.cost import DEFAULT_PRICING

    claude = DEFAULT_PRICING["anthropic.claude-sonnet-4"]
    assert find_pricing("anthropic.claude-sonnet-4-5-20250929-v1:0") is claude
    assert find_pricing("us.anthropic.claude-sonnet-4-5-20250929-v1:0") is claude
    assert find_pricing("global.anthropic.claude-haiku-4-5-20251001-v1:0") is DEFAULT_PRICING[
        "anthropic.claude-haiku-4-5"]
    assert find_pricing("eu.amazon.nova-lite-v1:0") is DEFAULT_PRICING["amazon.nova-lite"]
    assert find_pricing("us.meta.llama3-3-70b-instruct-v1:0") is DEFAULT_PRICING["meta.llama3-3-70b-instruct"]
    assert find_pricing("us.unknown-model") is None
