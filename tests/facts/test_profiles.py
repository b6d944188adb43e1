"""Cache profiles: the shipped table, resolution of selection strings, and its validation."""

from __future__ import annotations

import json
import math
from datetime import date
from importlib import resources
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from warmloop.errors import ConfigurationError
from warmloop.facts.price_table import prices_for
from warmloop.facts.profiles import CacheProfile, parse_table, profile_for, profile_table
from warmloop.facts.usage import Usage
from warmloop.providers.registry import providers


def _shipped() -> dict[str, Any]:
    text = resources.files("warmloop.facts").joinpath("profiles.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def _all_profiles() -> list[CacheProfile]:
    table = profile_table()
    return [*table.providers.values(), *table.models.values(), *(p for _, p in table.families)]


# --- the table ---------------------------------------------------------------------------


def test_every_entry_is_sourced_dated_and_has_a_safe_cold_after() -> None:
    for profile in _all_profiles():
        assert profile.source.strip(), profile.entry
        assert date(2025, 1, 1) <= profile.as_of <= date.today(), profile.entry
        for retention in profile.retentions:
            # A cold_after shorter than the assumed lifetime would rewrite a live cache.
            assert retention.cold_after >= retention.seconds > 0, profile.entry
        if profile.provider not in {"local", "openai-compatible", "scripted"}:
            assert profile.source.startswith("https://"), profile.entry


def test_every_selectable_provider_has_a_profile() -> None:
    for provider in (record.prefix for record in providers()):
        profile = profile_for(f"{provider}:some-model")
        assert profile.provider == ("openai" if provider == "openai-chat" else provider)


def test_multipliers_agree_with_the_price_table_wherever_both_know_the_model() -> None:
    checked = 0
    for key, profile in profile_table().models.items():
        prices = prices_for(key)
        if prices is None:
            continue
        checked += 1
        rates = prices.rates
        assert rates.cache_read == pytest.approx(rates.input * profile.read_multiplier), key
        if not profile.writes_billed:
            assert rates.cache_write() == pytest.approx(rates.input), key
            continue
        for retention in profile.retentions:
            billed = rates.cache_write(retention.name)
            assert billed == pytest.approx(rates.input * retention.write_multiplier), key
    assert checked >= 10


# --- resolution ---------------------------------------------------------------------------


def test_anthropic_profile_has_explicit_breakpoint_rules_and_both_ttls() -> None:
    profile = profile_for("anthropic:claude-sonnet-4-6")
    assert (profile.mode, profile.max_breakpoints, profile.lookback_blocks) == ("explicit", 4, 20)
    assert (profile.context_window, profile.min_cacheable_tokens) == (1_000_000, 2048)
    assert profile.ttl == "5m"
    assert profile.ttl_seconds == 300
    assert profile.retention_for("5m").write_multiplier == 1.25
    long = profile.retention_for("1h")
    assert (long.seconds, long.write_multiplier, long.long_rate) == (3600, 2.0, True)
    assert 300 < profile.cold_after <= 420
    assert profile_for("anthropic:claude-sonnet-4-6", cache_ttl="1h").cold_after >= 3600


def test_openai_classic_caching_is_automatic_from_1024_in_128_token_steps() -> None:
    profile = profile_for("openai:gpt-5")
    assert (profile.mode, profile.matching) == ("automatic", "common_prefix")
    assert (profile.min_cacheable_tokens, profile.increment_tokens) == (1024, 128)
    assert not profile.writes_billed
    assert profile.read_multiplier == 0.1
    assert profile.context_window == 400_000
    # In-memory caches "always" go within an hour of last use: that is the safe cold_after.
    assert profile.ttl == "in_memory"
    assert profile.cold_after == 3600
    assert profile_for("openai:gpt-5", cache_ttl="24h").cold_after == 86400


def test_chat_completions_selection_uses_the_openai_model_profile() -> None:
    profile = profile_for("openai-chat:gpt-4o")
    assert profile.entry == "openai:gpt-4o"
    assert profile.model == "openai-chat:gpt-4o"
    assert profile.read_multiplier == 0.5
    with pytest.raises(ConfigurationError, match="in_memory"):
        profile_for("openai-chat:gpt-4o", cache_ttl="24h")


def test_gpt_5_6_family_bills_writes_and_offers_30m_and_12h() -> None:
    for spec in ("openai:gpt-5.6", "openai:gpt-5.6-terra", "openai:gpt-5.6-luna-2026-07-09"):
        profile = profile_for(spec)
        assert profile.entry == "openai:gpt-5.6*", spec
        assert profile.writes_billed
        assert profile.matching == "whole_entry"
        assert (profile.increment_tokens, profile.max_breakpoints) == (1, 4)
        assert profile.ttl == "30m"
        assert profile.retention.write_multiplier == 1.25
        assert profile.retention_for("12h").write_multiplier == 2.5


def test_gemini_minimums_are_per_model_and_unknown_models_get_the_largest() -> None:
    assert profile_for("gemini:gemini-2.5-flash").min_cacheable_tokens == 2048
    assert profile_for("gemini:gemini-3.5-flash").min_cacheable_tokens == 4096
    assert profile_for("gemini:gemini-9-ultra").min_cacheable_tokens == 4096


def test_deepseek_disk_cache_uses_64_token_units_and_keeps_entries_for_days() -> None:
    profile = profile_for("deepseek:deepseek-reasoner")
    assert profile.entry == "deepseek:deepseek-chat"
    assert (profile.min_cacheable_tokens, profile.increment_tokens) == (64, 64)
    assert profile.persists_common_prefix
    assert profile.matching == "whole_entry"
    assert profile.cold_after >= 2 * 86400
    assert profile_for("deepseek:deepseek-v4-flash").entry == "deepseek:deepseek-flash"


def test_local_engines_never_expire_and_read_for_free() -> None:
    for spec in ("local", "openai-compatible:http://127.0.0.1:8080/v1"):
        profile = profile_for(spec)
        assert profile.mode == "engine", spec
        assert math.isinf(profile.cold_after), spec
        assert profile.read_multiplier == 0.0
        assert not profile.writes_billed


def test_unknown_models_fall_back_to_the_providers_safe_defaults() -> None:
    dated = profile_for("anthropic:claude-sonnet-4-5-20250929")
    assert dated.entry == "anthropic:claude-sonnet-4-5"
    unknown = profile_for("Anthropic:Claude-Next")
    assert unknown.entry == "anthropic"
    assert unknown.model == "Anthropic:Claude-Next"
    assert unknown.min_cacheable_tokens == 4096
    assert unknown.context_window == 200_000


def test_an_unknown_provider_is_a_clear_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match=r"provider 'mistral'.*anthropic"):
        profile_for("mistral:large")


def test_an_unknown_ttl_names_the_ones_on_offer() -> None:
    with pytest.raises(ConfigurationError, match="5m, 1h"):
        profile_for("anthropic:claude-opus-5", cache_ttl="24h")


# --- arithmetic ---------------------------------------------------------------------------


def test_cacheable_rounds_openai_to_1024_then_128_token_steps() -> None:
    profile = profile_for("openai:gpt-5")
    # 1023 is below the minimum; 1151 = 1024 + 127 keeps only 1024; 1152 = 1024 + 128.
    assert [profile.cacheable(n) for n in (0, 1023, 1024, 1151, 1152)] == [0, 0, 1024, 1024, 1152]


def test_cacheable_rounds_deepseek_to_64_token_units() -> None:
    profile = profile_for("deepseek:deepseek-chat")
    assert [profile.cacheable(n) for n in (63, 64, 127, 130)] == [0, 64, 64, 128]


def test_input_equivalent_weighs_reads_and_each_ttls_writes() -> None:
    profile = profile_for("anthropic:claude-sonnet-4-5")
    usage = Usage(input_tokens=1_500, cache_read_tokens=1000, cache_write_tokens=400)
    usage_1h = Usage(cache_write_tokens=400, cache_write_1h_tokens=100)
    # 100 + 1000 * 0.1 + 400 * 1.25 = 700; 300 * 1.25 + 100 * 2.0 = 575
    assert profile.input_equivalent(usage) == pytest.approx(700)
    assert profile.input_equivalent(usage_1h) == pytest.approx(575)
    # Unbilled writes cost plain input: 400 * 1.0.
    assert profile_for("openai:gpt-5").input_equivalent(usage_1h) == pytest.approx(400)


@given(st.sampled_from(["openai:gpt-5", "deepseek:deepseek-chat", "anthropic:claude-opus-5"]))
def test_cacheable_is_zero_or_a_whole_number_of_steps_past_the_minimum(spec: str) -> None:
    profile = profile_for(spec)
    previous = 0
    for tokens in range(0, 3000, 7):
        cached = profile.cacheable(tokens)
        assert 0 <= cached <= tokens
        assert cached >= previous
        if cached:
            assert cached >= profile.min_cacheable_tokens
            assert (cached - profile.min_cacheable_tokens) % profile.increment_tokens == 0
        previous = cached


# --- validation ---------------------------------------------------------------------------


def _broken(change: Any) -> str:
    data = _shipped()
    change(data)
    return json.dumps(data)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["providers"]["anthropic"].update(lookbak=20), "unknown fields"),
        (lambda d: d["models"]["openai:gpt-5"].pop("source"), "own source and as_of"),
        (lambda d: d["models"]["openai:gpt-5"].update(as_of="late 2026"), "YYYY-MM-DD"),
        (
            lambda d: d["providers"]["anthropic"]["ttls"]["5m"].update(cold_after=200),
            "safe side",
        ),
        (
            lambda d: d["providers"]["gemini"]["ttls"]["implicit"].update(write_multiplier=1.25),
            "unbilled writes",
        ),
        (lambda d: d["providers"]["anthropic"].update(lookback_blocks=None), "explicit caching"),
        (lambda d: d["providers"]["openai"].update(default_ttl="1h"), "default_ttl"),
        (lambda d: d["providers"]["openai"].update(mode="sometimes"), "'mode'"),
        (lambda d: d["providers"]["openai"].update(context_window=0), "'context_window'"),
        (lambda d: d["aliases"].update({"openai:o9": "openai:o10"}), "no entry"),
        (lambda d: d["models"].update({"mistral:large": {}}), "no defaults"),
    ],
)
def test_a_malformed_table_is_rejected_with_the_fault_named(change: Any, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        parse_table(_broken(change))


def test_the_longest_family_prefix_wins() -> None:
    def add_luna(data: dict[str, Any]) -> None:
        entry = dict(data["models"]["openai:gpt-5.6*"], context_window=12345)
        data["models"]["openai:gpt-5.6-luna*"] = entry

    table = parse_table(_broken(add_luna))
    assert table.lookup("openai:gpt-5.6-luna-fast").context_window == 12345
    assert table.lookup("openai:gpt-5.6-sol").entry == "openai:gpt-5.6*"


def test_the_shipped_table_round_trips_through_the_parser() -> None:
    table = parse_table(json.dumps(_shipped()))
    assert table.models.keys() == profile_table().models.keys()
    with pytest.raises(ConfigurationError, match="not valid JSON"):
        parse_table("{")


# Issue 36: table corrections from recorded bills and the providers' docs, each with its source.
def test_claude_opus_4_8_caches_from_the_1024_tokens_a_recorded_read_showed() -> None:
    """Recorded traffic billed a 1,590-token cached read on claude-opus-4-8: the table's
    minimum must not exclude it (the provider default is 4,096)."""
    profile = profile_for("anthropic:claude-opus-4-8")
    assert profile.entry == "anthropic:claude-opus-4-8"
    assert profile.min_cacheable_tokens == 1024
    assert profile.cacheable(1590) == 1590
    assert "1,590" in profile.note
    assert profile_for("anthropic:claude-fable-5").min_cacheable_tokens == 512


def test_each_corrected_minimum_names_its_source_and_what_it_took() -> None:
    flash = profile_for("gemini:gemini-2.5-flash")
    assert "183-594" in flash.note  # the recorded reads, and why the docs' figure stays
    assert "pull/2115" in flash.source
    openai = profile_for("openai:gpt-unlisted")  # the provider's defaults
    assert "Organizations without ZDR enabled default to `24h`" in openai.source
    assert openai.ttl == "in_memory"  # what every organisation gets at least
