"""Prices from genai-prices: they agree with the figures warmloop's table checked against
each provider's page, the table only adds what the package lacks, and an override says why."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from warmloop.errors import ConfigurationError
from warmloop.facts.maintained_prices import maintained_entries, with_maintained
from warmloop.facts.price_table import PRICES_ENV, Rates, parse_table, shipped_table
from warmloop.facts.table_file import read_table, shipped_text

# The day the package's figures were checked against the table (prices.json's genai_prices
# as_of); pinned so a price the package schedules for a later date cannot move this test.
CHECKED_ON = date(2026, 11, 27)


@pytest.fixture(autouse=True)
def _no_user_prices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PRICES_ENV, raising=False)


def _shipped() -> dict[str, Any]:
    data = read_table(shipped_text("prices.json"), "prices.json")
    assert isinstance(data, dict)
    return data


def _doc_checked() -> dict[str, Any]:
    path = Path(__file__).with_name("doc_checked_prices.json")
    data: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return data


def _rates(entry: Mapping[str, object]) -> Rates:
    table = parse_table(
        json.dumps({"models": {"openai:x": {**entry, "source": "s", "as_of": "2026-01-01"}}})
    )
    prices = table.lookup("openai:x")
    assert prices is not None
    return prices.rates


def _close(theirs: Rates, ours: Rates) -> bool:
    pairs = [(theirs.input, ours.input), (theirs.cache_read, ours.cache_read)]
    pairs += [(theirs.output, ours.output)]
    sold = dict(ours.cache_writes)
    pairs += [(rate, sold.get(retention, -1.0)) for retention, rate in theirs.cache_writes]
    return all(a == pytest.approx(b, rel=1e-9, abs=1e-12) for a, b in pairs)


def test_genai_prices_agrees_with_the_documented_figures_for_every_model_both_have() -> None:
    shipped = _shipped()
    section = shipped["genai_prices"]
    theirs = maintained_entries(section, CHECKED_ON)
    checked = _doc_checked()["models"]
    assert set(theirs) == set(section["models"]) == set(checked)
    overriding = {k for k, v in shipped["models"].items() if "overrides" in v}
    disagreements = []
    for key, entry in theirs.items():
        ours = checked[key]
        agree = _close(_rates(entry), _rates(ours))
        tier, our_tier = entry.get("long_context"), ours.get("long_context")
        if tier is not None:
            same_start = (
                our_tier is not None
                and tier["above_prompt_tokens"] == our_tier["above_prompt_tokens"]
            )
            agree = (
                agree
                and same_start
                and _close(_rates(_no_start(tier)), _rates(_no_start(our_tier)))
            )
        if agree == (key in overriding):
            disagreements.append(key)
    # An entry overrides the package exactly where the two disagree.
    assert disagreements == []
    assert overriding == {"deepseek:deepseek-chat", "deepseek:deepseek-reasoner"}


def _no_start(tier: Mapping[str, object] | None) -> dict[str, object]:
    assert tier is not None
    return {k: v for k, v in tier.items() if k != "above_prompt_tokens"}


def test_every_override_cites_its_reason_and_the_providers_page() -> None:
    for key, entry in _shipped()["models"].items():
        if "overrides" in entry:
            assert "genai-prices" in entry["overrides"], key
            assert entry["source"].startswith("https://"), key


def test_a_model_from_genai_prices_names_the_package_and_its_version_as_source() -> None:
    prices = shipped_table().lookup("anthropic:claude-sonnet-4-6")
    assert prices is not None
    assert prices.source.startswith("https://github.com/pydantic/genai-prices (genai-prices 0.2.")
    assert prices.as_of == CHECKED_ON


def test_the_table_adds_the_12_hour_write_genai_prices_lacks() -> None:
    prices = shipped_table().lookup("openai:gpt-6-sol")
    assert prices is not None
    assert prices.long_context is not None
    assert prices.rates.cache_writes == (("30m", 2.5), ("12h", 5.0))
    assert prices.long_context.rates.cache_writes == (("30m", 5.0), ("12h", 10.0))
    assert "developers.openai.com" in prices.source


def test_a_price_that_varies_with_the_hour_is_taken_at_its_dearest() -> None:
    # DeepSeek's pricing page: peak hours cost twice off-peak; an estimate is an upper bound.
    entry = maintained_entries(_shipped()["genai_prices"], CHECKED_ON)["deepseek:deepseek-flash"]
    assert (entry["input"], entry["cache_read"], entry["output"]) == (0.3, 0.006, 1.2)


def test_a_price_the_package_schedules_for_a_date_applies_from_that_date() -> None:
    # genai-prices: Gemini 3.8 Flash's introductory rates end on 2026-12-31.
    section = _shipped()["genai_prices"]
    before = maintained_entries(section, date(2026, 12, 31))["gemini:gemini-3.8-flash"]
    after = maintained_entries(section, date(2027, 1, 1))["gemini:gemini-3.8-flash"]
    assert (before["input"], after["input"]) == (0.75, 1.5)


def _with(key: str, entry: dict[str, Any]) -> dict[str, Any]:
    shipped = _shipped()
    return shipped | {"models": shipped["models"] | {key: entry}}


_DATED = {"source": "https://example.com/pricing", "as_of": "2026-11-01"}


@pytest.mark.parametrize(
    ("key", "entry", "message"),
    [
        ("openai:gpt-5", {"input": 9.0, **_DATED}, "only add what it lacks"),
        ("openai:gpt-6-sol", {"cache_write": {"30m": 9.0}, **_DATED}, "already prices the '30m'"),
        ("openai:gpt-5.4", {"long_context": {"above_prompt_tokens": 1}, **_DATED}, "long-context"),
        ("openai:gpt-5", {"cache_write": {"12h": 1.0}}, "its own 'source' and 'as_of'"),
        ("openai:gpt-5", {"overrides": " ", "input": 1.0, **_DATED}, "'overrides' needs a reason"),
    ],
)
def test_a_table_entry_that_repeats_or_hides_a_package_price_is_refused(
    key: str, entry: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        with_maintained(_with(key, entry), CHECKED_ON)


def test_a_model_the_package_does_not_have_is_refused_with_what_to_do() -> None:
    section = _shipped()["genai_prices"] | {"models": {"openai:gpt-nonesuch": "gpt-nonesuch"}}
    with pytest.raises(ConfigurationError, match="has no model openai/gpt-nonesuch"):
        maintained_entries(section, CHECKED_ON)
