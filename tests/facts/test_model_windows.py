"""Every model the price table prices has its window in the table, read the way the agent
reads it (`resolve_model(...).facts`): a priced model never runs on an assumed window, so a
run on it never ends with the "context window is unknown" warning (issue 32)."""

from __future__ import annotations

import pytest

from warmloop import resolve_model
from warmloop.facts.price_table import shipped_table

# Priced, but no page or data warmloop can read documents their window: left assumed on
# purpose (a guessed window would be acted on) until a source says it.
UNDOCUMENTED_WINDOWS = frozenset(
    {
        "anthropic:claude-mythos-5",  # priced as Fable 5 on the pricing page; window unstated
        "anthropic:claude-mythos-5-1",
        "openai:gpt-6.2-sol",  # its page's pricing section only; not in genai-prices' data
    }
)


def _priced_keys() -> list[str]:
    table = shipped_table()
    return sorted({*table.models, *table.aliases} - UNDOCUMENTED_WINDOWS)


@pytest.mark.parametrize(
    "spec", ["openai-chat:gpt-4o-mini", "openai:gpt-4.1-mini", "anthropic:claude-opus-4-1"]
)
def test_the_popular_models_issue_32_names_run_on_a_known_window(spec: str) -> None:
    facts = resolve_model(spec, api_key="k").facts
    assert facts.window_source == "table", spec
    assert facts.assumptions(spec) == []


def test_every_priced_model_has_its_window_in_the_table() -> None:
    assumed = [
        key for key in _priced_keys() if not resolve_model(key, api_key="k").facts.window_known
    ]
    assert assumed == [], f"priced but on an assumed window: {assumed}"


def test_the_models_left_without_a_window_are_still_priced_and_still_unknown() -> None:
    # The exception list must not go stale: drop a model from it once the table has its window.
    for key in sorted(UNDOCUMENTED_WINDOWS):
        facts = resolve_model(key, api_key="k").facts
        assert facts.prices is not None, key
        assert facts.window_source == "assumed", key


@pytest.mark.parametrize(
    ("spec", "window"),
    [
        ("anthropic:claude-opus-4-0", 200_000),
        ("gemini:gemini-2.5-flash-lite", 1_000_000),
        ("openai:gpt-6.1-sol", 1_050_000),
    ],
)
def test_a_priced_model_reads_its_window_from_the_table(spec: str, window: int) -> None:
    facts = resolve_model(spec, api_key="k").facts
    assert (facts.context_window, facts.window_source) == (window, "table")
    assert facts.prices is not None, spec


def test_an_openai_model_with_only_a_window_never_asks_for_the_24h_retention() -> None:
    # Extended retention is refused by models not on OpenAI's list: an entry added for its
    # window alone must not start sending prompt_cache_retention="24h".
    profile = resolve_model("openai:gpt-4o-mini", api_key="k").facts.profile
    assert [r.name for r in profile.retentions] == ["in_memory"]


def test_gpt_6_models_follow_the_gpt_5_6_cache_rules_their_prices_bill() -> None:
    # The price table sells these models 30-minute writes at 1.25x input ("GPT-5.6 and
    # later"); their cache rules must say the same, not the older in-memory default.
    for spec in ("openai:gpt-6-sol", "openai:gpt-6.1-sol"):
        profile = resolve_model(spec, api_key="k").facts.profile
        assert profile.ttl == "30m", spec
        assert profile.writes_billed, spec


@pytest.mark.parametrize(
    ("spec", "window"),
    [
        ("xai:grok-4", 256_000),  # the CLI's own example of an xAI model
        ("xai:grok-4-0709", 256_000),
        ("xai:grok-3-mini", 131_072),
        ("xai:grok-4-fast-reasoning", 2_000_000),
        ("xai:grok-code-fast-1", 256_000),
    ],
)
def test_xais_current_models_run_on_their_documented_window_without_a_warning(
    spec: str, window: int
) -> None:
    # docs.x.ai's models page (stored copies): the window is a fact, so no run warns.
    facts = resolve_model(spec, api_key="k").facts
    assert (facts.context_window, facts.window_source) == (window, "table")
    assert facts.assumptions(spec) == []


@pytest.mark.parametrize(
    ("spec", "window", "cache_read"),
    [
        ("openai:o3", 200_000, 0.5),
        ("openai:o4-mini", 200_000, 0.275),
        ("openai:gpt-5-nano", 400_000, 0.005),
        ("openai-chat:gpt-4.1-nano", 1_047_576, 0.025),
        ("openai:gpt-4.1-mini", 1_000_000, 0.1),
    ],
)
def test_current_openai_models_have_a_cited_window_and_price(
    spec: str, window: int, cache_read: float
) -> None:
    # Each was on an assumed window and unpriced: the run warned and cost nothing known.
    facts = resolve_model(spec, api_key="k").facts
    assert (facts.context_window, facts.window_source) == (window, "table")
    assert facts.prices is not None, spec
    assert facts.prices.rates.cache_read == pytest.approx(cache_read)
    assert facts.assumptions(spec) == []
