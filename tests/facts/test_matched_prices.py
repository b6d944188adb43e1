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
