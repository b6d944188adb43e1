"""The cost of documented provider usage under the shipped prices, and run reports.

Each provider test parses a usage object shaped as that provider documents it with the
provider's own SDK type, maps it into `Usage` the way the provider defines its counters,
and checks the cost against arithmetic written out from the published prices.
"""

from __future__ import annotations

from typing import Any

import anthropic.types
import pytest
from google.genai import types as genai_types
from hypothesis import given
from hypothesis import strategies as st
from openai.types import CompletionUsage
from openai.types.responses import ResponseUsage

from warmloop.errors import WarmloopError
from warmloop.facts.price_table import PRICES_ENV, Prices, prices_for, shipped_table
from warmloop.facts.pricing import Cost, cost, cost_breakdown, cost_report
from warmloop.facts.usage import Usage

M = 1_000_000


@pytest.fixture(autouse=True)
def _no_user_prices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PRICES_ENV, raising=False)


def _priced(name: str) -> Prices:
    prices = prices_for(name)
    assert prices is not None, f"{name} should be in the price table"
    return prices


# --- Anthropic -------------------------------------------------------------------------------


def _from_anthropic(usage: anthropic.types.Usage) -> Usage:
    # Anthropic prompt caching ("Tracking cache performance"): input_tokens is only what
    # follows the last breakpoint; total input = input + cache_creation + cache_read.
    one_hour = usage.cache_creation.ephemeral_1h_input_tokens if usage.cache_creation else 0
    return Usage.of_parts(
        usage.input_tokens,
        usage.cache_read_input_tokens or 0,
        usage.cache_creation_input_tokens or 0,
        usage.output_tokens,
        cache_write_1h_tokens=one_hour or 0,
    )


def test_anthropic_documented_usage_costs_reads_writes_and_output_at_their_rates() -> None:
    # Shape from the Messages API `usage` object (docs: Prompt caching, Tracking cache
    # performance): a warm request that read 100K tokens and wrote the newest 248.
    wire = anthropic.types.Usage.model_validate(
        {
            "input_tokens": 50,
            "cache_read_input_tokens": 100_000,
            "cache_creation_input_tokens": 248,
            "output_tokens": 503,
            "cache_creation": {"ephemeral_5m_input_tokens": 248, "ephemeral_1h_input_tokens": 0},
        }
    )
    breakdown = cost_breakdown(_from_anthropic(wire), _priced("anthropic:claude-sonnet-4-5"))
    # Sonnet 4.5: input $3, 5m write $3.75, read $0.30, output $15 per MTok.
    assert breakdown.input == pytest.approx(50 * 3.00 / M)
    assert breakdown.cache_read == pytest.approx(100_000 * 0.30 / M)
    assert breakdown.cache_write == pytest.approx(248 * 3.75 / M)
    assert breakdown.output == pytest.approx(503 * 15.00 / M)
    assert breakdown.total == pytest.approx(0.038625)


def test_anthropic_one_hour_writes_are_billed_at_the_one_hour_rate() -> None:
    # docs: Prompt caching, 1-hour cache duration: `cache_creation` splits writes by TTL.
    wire = anthropic.types.Usage.model_validate(
        {
            "input_tokens": 10,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 3_000,
            "output_tokens": 0,
            "cache_creation": {
                "ephemeral_5m_input_tokens": 1_000,
                "ephemeral_1h_input_tokens": 2_000,
            },
        }
    )
    breakdown = cost_breakdown(_from_anthropic(wire), _priced("anthropic:claude-haiku-4-5"))
    # Haiku 4.5: 5m write $1.25, 1h write $2 per MTok.
    assert breakdown.cache_write == pytest.approx((1_000 * 1.25 + 2_000 * 2.00) / M)


def test_fable_5_1_cache_hits_cost_a_quarter_of_the_usual_tenth() -> None:
    # Anthropic pricing page, footnote 1: Fable 5.1 cache hits $0.25 against $10 input.
    usage = Usage(cache_read_tokens=1_000_000)
    assert cost(usage, _priced("anthropic:claude-fable-5-1")) == pytest.approx(0.25)


def test_haiku_5_5_bills_a_prompt_over_100k_tokens_at_the_higher_band() -> None:
    prices = _priced("anthropic:claude-haiku-5-5")
    at_limit = Usage(input_tokens=100_000, cache_read_tokens=90_000, output_tokens=1_000)
    over = Usage(input_tokens=100_001, cache_read_tokens=90_000, output_tokens=1_000)
    assert cost(at_limit, prices) == pytest.approx((10_000 * 0.1 + 90_000 * 0.01 + 1_000 * 0.5) / M)
    assert cost(over, prices) == pytest.approx((10_001 * 0.5 + 90_000 * 0.05 + 1_000 * 2.5) / M)


# --- OpenAI ----------------------------------------------------------------------------------


def test_openai_chat_completions_usage_prices_cached_tokens_at_the_cached_rate() -> None:
    # docs: Prompt caching guide, example `usage`: prompt_tokens includes the cached ones.
    wire = CompletionUsage.model_validate(
        {
            "prompt_tokens": 2006,
            "completion_tokens": 300,
            "total_tokens": 2306,
            "prompt_tokens_details": {"cached_tokens": 1920},
            "completion_tokens_details": {"reasoning_tokens": 0},
        }
    )
    cached = wire.prompt_tokens_details.cached_tokens or 0 if wire.prompt_tokens_details else 0
    usage = Usage(
        input_tokens=wire.prompt_tokens,  # every prompt token, as the wire counts them
        cache_read_tokens=cached,
        output_tokens=wire.completion_tokens,
    )
    # GPT-5: input $1.25, cached input $0.125, output $10 per MTok.
    expected = (86 * 1.25 + 1920 * 0.125 + 300 * 10.00) / M
    assert cost(usage, _priced("openai-chat:gpt-5")) == pytest.approx(expected)


def _from_responses(wire: ResponseUsage) -> Usage:
    # Responses API `usage`: input_tokens includes cached_tokens and cache_write_tokens;
    # output_tokens includes reasoning_tokens (billed as output).
    details = wire.input_tokens_details
    return Usage(
        input_tokens=wire.input_tokens,
        cache_read_tokens=details.cached_tokens,
        cache_write_tokens=details.cache_write_tokens,
        output_tokens=wire.output_tokens,
    )


def test_openai_reasoning_tokens_are_billed_as_output() -> None:
    # docs: Responses API reference, `usage` (output_tokens_details.reasoning_tokens is a
    # part of output_tokens).
    wire = ResponseUsage.model_validate(
        {
            "input_tokens": 12_000,
            "input_tokens_details": {"cached_tokens": 11_264, "cache_write_tokens": 0},
            "output_tokens": 900,
            "output_tokens_details": {"reasoning_tokens": 640},
            "total_tokens": 12_900,
        }
    )
    breakdown = cost_breakdown(_from_responses(wire), _priced("openai:gpt-5-mini"))
    # GPT-5 mini: input $0.25, cached input $0.025, output $2 per MTok.
    assert breakdown.output == pytest.approx(900 * 2.00 / M)
    assert breakdown.total == pytest.approx((736 * 0.25 + 11_264 * 0.025 + 900 * 2.00) / M)


def test_openai_gpt_6_cache_writes_are_billed_at_the_30_minute_write_rate() -> None:
    # docs: Prompt caching guide: from GPT-5.6 writes are reported in cache_write_tokens and
    # cost 1.25x input; the SDK's cache_write_tokens_details splits them by retention.
    wire = ResponseUsage.model_validate(
        {
            "input_tokens": 40_000,
            "input_tokens_details": {
                "cached_tokens": 30_000,
                "cache_write_tokens": 9_000,
                "cache_write_tokens_details": {"ttl_30m_tokens": 9_000, "ttl_12h_tokens": 0},
            },
            "output_tokens": 500,
            "output_tokens_details": {"reasoning_tokens": 200},
            "total_tokens": 40_500,
        }
    )
    breakdown = cost_breakdown(_from_responses(wire), _priced("openai:gpt-6-sol"))
    # GPT-6 Sol: input $2, cached $0.20, cache writes $2.50, output $10 per MTok.
    assert breakdown.cache_write == pytest.approx(9_000 * 2.50 / M)
    assert breakdown.total == pytest.approx(
        (1_000 * 2.00 + 30_000 * 0.20 + 9_000 * 2.50 + 500 * 10.00) / M
    )


def test_older_openai_models_bill_cache_writes_as_plain_input() -> None:
    usage = Usage(input_tokens=1_100, cache_write_tokens=1_000)
    assert cost(usage, _priced("openai:gpt-5.5")) == pytest.approx(1_100 * 5.00 / M)


def test_a_one_hour_write_on_a_model_that_sells_no_one_hour_tier_is_an_error() -> None:
    usage = Usage(cache_write_tokens=10, cache_write_1h_tokens=10)
    with pytest.raises(WarmloopError, match="no cache write rate for retention '1h'"):
        cost(usage, _priced("openai:gpt-6-sol"))


# --- Gemini and DeepSeek ---------------------------------------------------------------------


def _from_gemini(meta: genai_types.GenerateContentResponseUsageMetadata) -> Usage:
    # prompt_token_count includes cached content; thinking tokens are billed as output
    # (Gemini pricing: "Output price (including thinking tokens)").
    cached = meta.cached_content_token_count or 0
    return Usage(
        input_tokens=meta.prompt_token_count or 0,
        cache_read_tokens=cached,
        output_tokens=(meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0),
    )


# Shaped like the usage_metadata printed in the Gemini API context caching guide.
_GEMINI_WARM = genai_types.GenerateContentResponseUsageMetadata(
    prompt_token_count=696_219,
    cached_content_token_count=696_190,
    candidates_token_count=214,
    thoughts_token_count=0,
    total_token_count=696_433,
)


def test_gemini_usage_prices_cached_content_at_the_cached_rate() -> None:
    usage = _from_gemini(_GEMINI_WARM)
    # Gemini 2.5 Flash (flat): input $0.30, cached $0.03, output $2.50 per MTok.
    expected = (29 * 0.30 + 696_190 * 0.03 + 214 * 2.50) / M
    assert cost(usage, _priced("gemini:gemini-2.5-flash")) == pytest.approx(expected)


def test_gemini_thinking_tokens_are_billed_as_output() -> None:
    meta = genai_types.GenerateContentResponseUsageMetadata(
        prompt_token_count=1_000, candidates_token_count=100, thoughts_token_count=400
    )
    breakdown = cost_breakdown(_from_gemini(meta), _priced("gemini:gemini-3-flash-preview"))
    # Gemini 3 Flash Preview: output $3 per MTok, thinking included.
    assert breakdown.output == pytest.approx(500 * 3.00 / M)


def test_deepseek_usage_prices_hits_and_misses() -> None:
    # docs: DeepSeek Context Caching: prompt_cache_hit_tokens + prompt_cache_miss_tokens
    # = prompt_tokens, returned beside the OpenAI-format usage fields.
    wire = CompletionUsage.model_validate(
        {
            "prompt_tokens": 4_000,
            "completion_tokens": 250,
            "total_tokens": 4_250,
            "prompt_cache_hit_tokens": 3_840,
            "prompt_cache_miss_tokens": 160,
        }
    )
    extra: dict[str, Any] = wire.model_extra or {}
    usage = Usage.of_parts(
        extra["prompt_cache_miss_tokens"],
        extra["prompt_cache_hit_tokens"],
        0,
        wire.completion_tokens,
    )
    # deepseek-flash, peak: miss $0.30, hit $0.006, output $1.20 per MTok.
    expected = (160 * 0.30 + 3_840 * 0.006 + 250 * 1.20) / M
    assert cost(usage, _priced("deepseek:deepseek-flash")) == pytest.approx(expected)


# --- long-context tiers ----------------------------------------------------------------------


def test_a_prompt_over_the_threshold_bills_the_whole_request_at_the_long_context_rates() -> None:
    prices = _priced("anthropic:claude-sonnet-4-5")
    at_limit = Usage(input_tokens=200_000, cache_read_tokens=199_000, output_tokens=1_000)
    over = Usage(input_tokens=200_001, cache_read_tokens=199_000, output_tokens=1_000)
    assert cost(at_limit, prices) == pytest.approx((1_000 * 3 + 199_000 * 0.3 + 1_000 * 15) / M)
    assert cost(over, prices) == pytest.approx((1_001 * 6 + 199_000 * 0.6 + 1_000 * 22.5) / M)


def test_gemini_pro_switches_tier_on_the_whole_prompt_including_cached_content() -> None:
    usage = _from_gemini(_GEMINI_WARM)
    # Gemini 2.5 Pro above 200K prompt tokens: input $2.50, cached $0.25, output $15.
    expected = (29 * 2.50 + 696_190 * 0.25 + 214 * 15.00) / M
    assert cost(usage, _priced("gemini:gemini-2.5-pro")) == pytest.approx(expected)


# --- properties ------------------------------------------------------------------------------

_tokens = st.integers(min_value=0, max_value=100_000)


@given(
    name=st.sampled_from(sorted(shipped_table().models)),
    prompt=_tokens,
    read_share=st.floats(min_value=0.0, max_value=1.0),
    output=_tokens,
)
def test_a_warm_request_never_costs_more_than_the_same_request_cold(
    name: str, prompt: int, read_share: float, output: int
) -> None:
    prices = _priced(name)
    read = int(prompt * read_share)
    warm = Usage(input_tokens=prompt, cache_read_tokens=read, output_tokens=output)
    cold = Usage(input_tokens=prompt, output_tokens=output)
    assert 0.0 <= cost(warm, prices) <= cost(cold, prices) + 1e-12


@given(
    name=st.sampled_from(sorted(shipped_table().models)),
    a=st.tuples(_tokens, _tokens, _tokens, _tokens),
    b=st.tuples(_tokens, _tokens, _tokens, _tokens),
)
def test_a_report_total_is_the_sum_of_its_requests(
    name: str, a: tuple[int, int, int, int], b: tuple[int, int, int, int]
) -> None:
    first, second = Usage(*a), Usage(*b)
    report = cost_report(name, [first, second])
    prices = _priced(name)
    assert report.total == pytest.approx(cost(first, prices) + cost(second, prices))
    assert report.usage == first + second


# --- run reports -----------------------------------------------------------------------------


def test_a_cost_report_lists_each_request_and_describes_the_total() -> None:
    usages = [
        Usage(input_tokens=12_000, cache_write_tokens=10_000, output_tokens=300),
        Usage(
            input_tokens=11_100, cache_read_tokens=10_000, cache_write_tokens=700, output_tokens=250
        ),
    ]
    report = cost_report("anthropic:claude-sonnet-4-5", usages)
    assert report.per_request is not None
    assert len(report.per_request) == 2
    assert report.per_request[1].cache_read == pytest.approx(10_000 * 0.30 / M)
    assert report.breakdown == sum(report.per_request, Cost())
    text = report.describe()
    assert f"${report.total:.4f} over 2 requests" in text
    assert "prices as of 2026-" in text
    assert " from " not in text  # shipped prices name no file


@pytest.mark.parametrize("engine", ["local", "openai-compatible:http://127.0.0.1:8080/v1"])
def test_a_local_engine_reports_unknown_cost_and_says_it_is_never_priced(engine: str) -> None:
    report = cost_report(engine, [Usage(input_tokens=500, output_tokens=20)])
    assert report.total is None
    assert report.per_request is None
    assert report.usage.prompt_tokens == 500
    text = report.describe()
    assert text.startswith(f"cost unknown: no price for {engine!r}")
    assert "never prices" in text
    assert PRICES_ENV not in text  # a price file would not help


def test_an_unknown_api_model_reports_unknown_cost_and_how_to_add_a_price() -> None:
    report = cost_report("openai:gpt-9-imaginary", [Usage(input_tokens=500)])
    assert report.total is None
    text = report.describe()
    assert text.startswith("cost unknown: no price for 'openai:gpt-9-imaginary' in the price")
    assert f"{PRICES_ENV}=" in text
    assert "prices.json" in text
    assert "never prices" not in text


def test_one_hour_writes_beyond_all_writes_are_rejected() -> None:
    bad = Usage(cache_write_tokens=10, cache_write_1h_tokens=20)
    with pytest.raises(WarmloopError, match="one-hour cache writes"):
        cost(bad, _priced("anthropic:claude-sonnet-4-5"))
