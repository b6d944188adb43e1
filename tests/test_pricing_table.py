"""The shipped price table: every entry sourced and dated, coverage of each provider's
current models, the documented cache multipliers, and the lookup rules."""

from __future__ import annotations

from datetime import date

import pytest

from warmloop.cache.pricing import PRICES_ENV, Prices, Rates, prices_for, shipped_table
from warmloop.providers.select import _PROVIDERS


@pytest.fixture(autouse=True)
def _no_user_prices(monkeypatch: pytest.MonkeyPatch) -> None:
    # These tests pin the shipped table; a developer's own price file must not leak in.
    monkeypatch.delenv(PRICES_ENV, raising=False)


def _priced(name: str) -> Prices:
    prices = prices_for(name)
    assert prices is not None, f"{name} should be in the price table"
    return prices


def _tiers(prices: Prices) -> list[Rates]:
    return [prices.rates] + ([prices.long_context.rates] if prices.long_context else [])


# --- every entry ---------------------------------------------------------------------------


def test_every_entry_has_a_source_and_an_as_of_date() -> None:
    table = shipped_table()
    assert len(table.models) >= 4
    for key, prices in table.models.items():
        assert prices.model == key
        assert prices.source.startswith("https://"), key
        assert date(2025, 1, 1) <= prices.as_of <= date.today(), key
        assert prices.origin == "", key


def test_every_rate_is_a_non_negative_finite_number() -> None:
    for key, prices in shipped_table().models.items():
        for rates in _tiers(prices):
            values = [rates.input, rates.cache_read, rates.output]
            values += [rate for _, rate in rates.cache_writes]
            assert all(0 <= v < 1_000 for v in values), key


def test_every_entry_is_a_remote_provider_selection_string() -> None:
    remote = set(_PROVIDERS) - {"local", "openai-compatible"}
    for key in shipped_table().models:
        provider, _, model = key.partition(":")
        assert provider in remote, key
        assert model, key


def test_a_cache_read_never_costs_more_than_uncached_input() -> None:
    for key, prices in shipped_table().models.items():
        for rates in _tiers(prices):
            assert rates.cache_read < rates.input, key


def test_a_long_context_tier_never_costs_less_than_the_base_tier() -> None:
    for key, prices in shipped_table().models.items():
        if prices.long_context is None:
            continue
        base, tier = prices.rates, prices.long_context.rates
        assert tier.input >= base.input, key
        assert tier.cache_read >= base.cache_read, key
        assert tier.output >= base.output, key
        assert [r for r, _ in tier.cache_writes] == [r for r, _ in base.cache_writes], key


# --- coverage ------------------------------------------------------------------------------


def test_the_providers_the_examples_name_are_all_priced() -> None:
    for name in (
        "anthropic:claude-sonnet-4-5",
        "openai:gpt-5",
        "openai-chat:gpt-5",
        "gemini:gemini-2.5-flash",
        "deepseek:deepseek-chat",
    ):
        assert prices_for(name) is not None, name


# --- documented cache rules ------------------------------------------------------------------


# --- lookup ----------------------------------------------------------------------------------


def test_an_unknown_model_or_a_near_miss_has_no_price() -> None:
    assert prices_for("anthropic:claude-imaginary-9") is None
    assert prices_for("nosuchprovider:gpt-5") is None
    assert prices_for("gpt-5") is None  # no provider: ambiguous, so not guessed
    assert prices_for("openai:gpt-5-pro") is None  # not priced as its neighbour gpt-5


def test_local_engines_are_never_priced() -> None:
    assert prices_for("local") is None
    assert prices_for("openai-compatible:http://127.0.0.1:8080/v1") is None
    assert prices_for("openai-compatible:gpt-5") is None
    assert prices_for("scripted") is None


def test_a_dated_snapshot_resolves_to_its_model() -> None:
    assert prices_for("anthropic:claude-sonnet-4-5-20250929") == _priced(
        "anthropic:claude-sonnet-4-5"
    )
    assert prices_for("openai:gpt-5-2025-08-07") == _priced("openai:gpt-5")
    assert prices_for(" Anthropic:Claude-Haiku-4-5-20251001 ") == _priced(
        "anthropic:claude-haiku-4-5"
    )


def test_chat_completions_and_responses_share_openai_prices() -> None:
    assert prices_for("openai-chat:gpt-5") == _priced("openai:gpt-5")
    assert prices_for("openai-chat:gpt-4.1-2025-04-14") == _priced("openai:gpt-4.1")


def test_a_model_billed_as_another_resolves_through_its_alias() -> None:
    # DeepSeek pricing page notes 1-2: legacy V4 names are billed at the deepseek-flash price.
    assert prices_for("deepseek:deepseek-v4-pro") == _priced("deepseek:deepseek-flash")
    assert prices_for("deepseek:deepseek-v4-flash") == _priced("deepseek:deepseek-flash")
