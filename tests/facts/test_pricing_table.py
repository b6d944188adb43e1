"""The shipped price table: every entry sourced and dated, coverage of each provider's
current models, the documented cache multipliers, and the lookup rules."""

from __future__ import annotations

from datetime import date

import pytest

from warmloop.facts.price_table import PRICES_ENV, Prices, Rates, prices_for, shipped_table
from warmloop.providers.registry import providers


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
    assert len(table.models) >= 40
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
    remote = {record.prefix for record in providers()} - {"local", "openai-compatible"}
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


@pytest.mark.parametrize(
    "name",
    [
        # Named in issue 13, item 6.
        "openai:gpt-4o",
        "openai:gpt-4o-mini",
        "openai:o3-mini",
        "gemini:gemini-2.0-flash",
        "gemini:gemini-3-flash-preview",
        "anthropic:claude-sonnet-4-0",
        # gpt-5.x family members.
        "openai:gpt-5.1",
        "openai:gpt-5.2",
        "openai:gpt-5.4-mini",
        "openai:gpt-5.4-nano",
        "openai:gpt-5.6",
        "openai:gpt-5.6-terra",
        "openai:gpt-5.6-luna",
        # Current Opus models.
        "anthropic:claude-opus-5-5",
        "anthropic:claude-opus-4-8",
        "anthropic:claude-opus-4-7",
    ],
)
def test_the_models_people_use_today_are_priced(name: str) -> None:
    assert prices_for(name) is not None, name


@pytest.mark.parametrize(
    "name",
    [
        "anthropic:claude-fable-5-1",
        "anthropic:claude-opus-5-5",
        "anthropic:claude-sonnet-5-5",
        "anthropic:claude-haiku-5-5",
        "openai:gpt-6.2-sol",
        "openai:gpt-6.1-sol",
        "openai:gpt-6-astra",
        "openai:gpt-6-luna",
        "gemini:gemini-3.8-flash",
        "gemini:gemini-3.1-pro-preview",
        "deepseek:deepseek-flash",
    ],
)
def test_each_providers_current_lineup_is_priced(name: str) -> None:
    assert prices_for(name) is not None, name


def test_the_providers_the_examples_name_are_all_priced() -> None:
    for name in (
        "anthropic:claude-sonnet-4-5",
        "openai:gpt-5",
        "openai-chat:gpt-5",
        "gemini:gemini-2.5-flash",
        "deepseek:deepseek-chat",
    ):
        assert prices_for(name) is not None, name


def test_deepseek_reasoner_is_priced_as_the_model_that_served_it_not_as_deepseek_chat() -> None:
    reasoner = _priced("deepseek:deepseek-reasoner")
    assert reasoner.model == "deepseek:deepseek-reasoner"
    assert reasoner.rates != _priced("deepseek:deepseek-chat").rates
    # DeepSeek pricing page, deepseek-v4-flash column: miss $0.14, hit $0.0028, out $0.28.
    assert (reasoner.rates.input, reasoner.rates.cache_read, reasoner.rates.output) == (
        0.14,
        0.0028,
        0.28,
    )
    assert "retired" in reasoner.note


# --- documented cache rules ------------------------------------------------------------------


def test_anthropic_writes_follow_the_documented_multipliers_and_reads_are_at_most_a_tenth() -> None:
    # Anthropic pricing, prompt caching: 5m write 1.25x, 1h write 2x; hits 0.1x, and lower
    # on the newest models (Fable 5.1 0.025x, Opus 5.5 and Sonnet 5.5 0.05x).
    entries = [p for k, p in shipped_table().models.items() if k.startswith("anthropic:")]
    assert len(entries) >= 15
    for prices in entries:
        for rates in _tiers(prices):
            assert [r for r, _ in rates.cache_writes] == ["5m", "1h"], prices.model
            assert rates.cache_write("5m") == pytest.approx(1.25 * rates.input), prices.model
            assert rates.cache_write("1h") == pytest.approx(2.0 * rates.input), prices.model
            assert rates.cache_read <= 0.1 * rates.input + 1e-12, prices.model


def test_openai_gpt_5_6_and_later_sell_30_minute_writes_at_1_25x_input() -> None:
    # Prompt-caching guide: from GPT-5.6, writes cost 1.25x input; retention 30 minutes.
    newest = [
        p
        for k, p in shipped_table().models.items()
        if k.startswith(("openai:gpt-5.6", "openai:gpt-6"))
    ]
    assert len(newest) >= 7
    for prices in newest:
        for rates in _tiers(prices):
            assert rates.cache_writes[0][0] == "30m", prices.model
            assert rates.cache_write() == pytest.approx(1.25 * rates.input), prices.model


def test_gpt_6_2_sol_sells_12_hour_writes_beside_30_minute_ones() -> None:
    # OpenAI GPT-6.2 Sol model page: "A 12-hour cache write costs $5 per million tokens".
    rates = _priced("openai:gpt-6.2-sol").rates
    assert rates.cache_writes == (("30m", 2.5), ("12h", 5.0))


def test_models_that_bill_writes_as_plain_input_carry_no_write_rate() -> None:
    for name in (
        "openai:gpt-5.5",
        "openai:gpt-4o",
        "gemini:gemini-2.5-pro",
        "deepseek:deepseek-flash",
    ):
        rates = _priced(name).rates
        assert rates.cache_writes == (), name
        assert rates.cache_write() == rates.input, name


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
    assert prices_for("anthropic:claude-sonnet-4-20250514") == _priced("anthropic:claude-sonnet-4")
    assert prices_for("anthropic:claude-opus-4-1-20250805") == _priced("anthropic:claude-opus-4-1")


def test_chat_completions_and_responses_share_openai_prices() -> None:
    assert prices_for("openai-chat:gpt-5") == _priced("openai:gpt-5")
    assert prices_for("openai-chat:gpt-4.1-2025-04-14") == _priced("openai:gpt-4.1")


def test_a_model_billed_as_another_resolves_through_its_alias() -> None:
    # DeepSeek pricing page notes 1-2: legacy V4 names are billed at the deepseek-flash price.
    assert prices_for("deepseek:deepseek-v4-pro") == _priced("deepseek:deepseek-flash")
    assert prices_for("deepseek:deepseek-v4-flash") == _priced("deepseek:deepseek-flash")
    # Anthropic's `-0` aliases and OpenAI's `gpt-5.6` alias (routes to GPT-5.6 Sol).
    assert prices_for("anthropic:claude-sonnet-4-0") == _priced("anthropic:claude-sonnet-4")
    assert prices_for("anthropic:claude-opus-4-0") == _priced("anthropic:claude-opus-4")
    assert prices_for("openai:gpt-5.6") == _priced("openai:gpt-5.6-sol")
