"""Every model name recorded traffic uses is priced where the maintained genai-prices package
prices it (issue 48: 15 names of recorded traffic had no price though the installed package
priced all of them). A name the table does not list is priced by the package's own matching
(a dated snapshot, `-latest`, a version suffix), never as a neighbour; the table's own
entries, which follow the providers' pages, come first."""

from __future__ import annotations

from datetime import UTC, datetime

import genai_prices.data_snapshot as snapshot
import pytest

from warmloop.facts.price_table import prices_for, shipped_table

RECORDED = (
    "anthropic:claude-3-5-haiku-latest",
    "anthropic:claude-3-5-sonnet-latest",
    "anthropic:claude-3-7-sonnet-latest",
    "anthropic:claude-3-opus-latest",
    "anthropic:claude-sonnet-4-20250514",
    "anthropic:claude-opus-4-1-20250805",
    "openai:gpt-4o-2024-08-06",
    "openai:gpt-4o-mini-2024-07-18",
    "openai:gpt-4.1-2025-04-14",
    "openai:gpt-4.1-nano-2025-04-14",
    "openai:o3-mini-2025-01-31",
    "openai:o1",
    "openai:gpt-5-2025-08-07",
    "openai:gpt-5.2-2025-12-11",
    "openai:gpt-5.1-codex",
    "openai:gpt-5-chat-latest",
    "gemini:gemini-1.5-flash",
    "gemini:gemini-2.0-flash-001",
)
"""Model names as frameworks' recorded cassettes send them (dated snapshots, `-latest`)."""
PROVIDER_IDS = {"gemini": "google"}


@pytest.mark.parametrize("name", RECORDED)
def test_a_name_the_package_prices_is_priced_at_its_rates(name: str) -> None:
    provider, model = name.split(":", 1)
    found = prices_for(name)
    assert found is not None, name
    _, info = snapshot.get_snapshot().find_provider_model(
        model, None, PROVIDER_IDS.get(provider, provider), None
    )
    rates = info.get_prices(datetime.now(UTC))
    assert found.rates.input == pytest.approx(base(rates.input_mtok)), name
    assert found.rates.cache_read == pytest.approx(base(rates.cache_read_mtok)), name


def base(value: object) -> float:
    """A rate's base figure (a tiered one's first tier)."""
    return float(getattr(value, "base", value) or 0)  # type: ignore[arg-type]


def test_the_tables_own_entries_come_first_and_near_misses_stay_unpriced() -> None:
    table = shipped_table()
    assert table.matched is not None
    assert prices_for("openai:gpt-5") is table.models["openai:gpt-5"]
    # A name the package does not know is no neighbour's: no price.
    assert prices_for("openai:gpt-9") is None
    assert prices_for("anthropic:claude-imaginary-9") is None
    # One the package prices without a cached-input rate is not guessed either.
    assert prices_for("openai:gpt-5-pro") is None


CASSETTE_HOSTS = "pydantic/pydantic-ai@4fda38988f2939fa6ea9cdefcf120693e10ef491"
"""Where the names below come from: every model name pydantic-ai's 1,001 VCR cassettes
(tests/models/cassettes/) carry on a provider's own API host (api.openai.com,
api.anthropic.com, api.deepseek.com, generativelanguage.googleapis.com and
aiplatform.googleapis.com), in a request's `model` or in its response's (the dated snapshot
that answered), that the price table did not list before the genai-prices fallback
(issue 48), and that the package knows under the same provider."""
PRICED_FROM_CASSETTES = (
    "anthropic:claude-3-opus-latest",
    "anthropic:claude-sonnet-4-0",
    "anthropic:claude-sonnet-4-5-20250929",
    "deepseek:deepseek-v4-flash",
    "gemini:gemini-1.5-flash",
    "gemini:gemini-2.0-flash-exp",
    "gemini:gemini-2.5-pro-preview-03-25",
    "gemini:gemini-2.5-pro-preview-05-06",
    "gemini:gemini-3-pro-preview",
    "gemini:gemini-3.1-flash-lite",
    "openai:gpt-4.5-preview",
    "openai:gpt-5.6",
    "openai:o1-mini",
    # The snapshots that answered (the responses' `model`)
    "anthropic:claude-3-opus-20240229",
    "anthropic:claude-haiku-4-5-20251001",
    "anthropic:claude-sonnet-4-20250514",
    "openai:gpt-4.1-2025-04-14",
    "openai:gpt-4.1-mini-2025-04-14",
    "openai:gpt-4.1-nano-2025-04-14",
    "openai:gpt-4.5-preview-2025-02-27",
    "openai:gpt-4o-2024-08-06",
    "openai:gpt-4o-mini-2024-07-18",
    "openai:gpt-5-2025-08-07",
    "openai:gpt-5-mini-2025-08-07",
    "openai:gpt-5.2-2025-12-11",
    "openai:gpt-5.4-mini-2026-03-17",
    "openai:gpt-5.5-2026-04-23",
    "openai:o1-mini-2024-09-12",
    "openai:o3-2025-04-16",
    "openai:o3-mini-2025-01-31",
    "openai:o4-mini-2025-04-16",
)
"""Priced now, each at the package's figures."""
NO_CACHED_RATE_FROM_CASSETTES = (
    "gemini:gemini-2.5-flash-image",
    "gemini:gemini-3-pro-image-preview",
    "openai:gpt-4o-audio-preview",
    "openai:gpt-4o-search-preview",
    "openai:gpt-5-pro",
    "openai:computer-use-preview",
    "openai:computer-use-preview-2025-03-11",
    "openai:gpt-4o-audio-preview-2024-12-17",
    "openai:gpt-4o-search-preview-2025-03-11",
    "openai:gpt-5-pro-2025-10-06",
)
"""The package prices these without a cached-input rate: no price rather than a guessed one
(the audit's dollars would rest on a cache-read rate nobody published)."""


def dearest(provider: str, model: str) -> tuple[float, float, float]:
    """The package's (input, cached input, output) for a model at its dearest hour of a
    day, as the table takes a price that varies with the hour (DeepSeek's off-peak
    discount), each a tiered rate's base figure."""
    _, info = snapshot.get_snapshot().find_provider_model(
        model, None, PROVIDER_IDS.get(provider, provider), None
    )
    day = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    rates = [info.get_prices(day.replace(hour=hour)) for hour in range(24)]
    top = max(rates, key=lambda r: base(r.input_mtok))
    return base(top.input_mtok), base(top.cache_read_mtok), base(top.output_mtok)


@pytest.mark.parametrize("name", PRICED_FROM_CASSETTES)
def test_each_name_the_cassettes_send_is_priced_at_the_packages_figures(name: str) -> None:
    provider, model = name.split(":", 1)
    found = prices_for(name)
    assert found is not None, name
    ours = (found.rates.input, found.rates.cache_read, found.rates.output)
    assert ours == pytest.approx(dearest(provider, model)), name


@pytest.mark.parametrize("name", NO_CACHED_RATE_FROM_CASSETTES)
def test_a_cassette_name_without_a_cached_rate_stays_unpriced(name: str) -> None:
    provider, model = name.split(":", 1)
    assert dearest(provider, model)[0] > 0  # the package knows it ...
    _, info = snapshot.get_snapshot().find_provider_model(
        model, None, PROVIDER_IDS.get(provider, provider), None
    )
    assert info.get_prices(datetime.now(UTC)).cache_read_mtok is None  # ... with no read rate
    assert prices_for(name) is None, name
