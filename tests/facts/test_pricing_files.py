"""Price tables from text and from user files: validation, the older key names, and user
prices merged over the shipped table through `load_prices` or `WARMLOOP_PRICES`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from warmloop.errors import ConfigurationError
from warmloop.facts.price_table import (
    PRICES_ENV,
    load_prices,
    parse_table,
    price_table,
    prices_for,
    shipped_table,
)
from warmloop.facts.pricing import cost, cost_report
from warmloop.facts.usage import Usage

M = 1_000_000

_GOOD_ENTRY: dict[str, Any] = {
    "input": 1.0,
    "cache_read": 0.1,
    "cache_write": {"5m": 1.25, "1h": 2.0},
    "output": 5.0,
    "source": "https://example.com/pricing",
    "as_of": "2026-11-01",
}


@pytest.fixture(autouse=True)
def _no_user_prices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PRICES_ENV, raising=False)


def _table(entry: dict[str, Any], key: str = "anthropic:x", **extra: Any) -> str:
    return json.dumps({"models": {key: entry}, **extra})


def _write(tmp_path: Path, models: dict[str, Any], **extra: Any) -> Path:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"models": models, **extra}), "utf-8")
    return path


# --- validation ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not valid JSON"),
        (json.dumps({"entries": {}}), "'models' object"),
        (_table({**_GOOD_ENTRY, "source": ""}), "'source'"),
        (_table({k: v for k, v in _GOOD_ENTRY.items() if k != "as_of"}), "'as_of'"),
        (_table({**_GOOD_ENTRY, "as_of": "Nov 2026"}), "YYYY-MM-DD"),
        (_table({**_GOOD_ENTRY, "output": -1}), "'output' must be a non-negative number"),
        (_table({**_GOOD_ENTRY, "cache_read": "0.1"}), "'cache_read'"),
        (_table({**_GOOD_ENTRY, "input": float("nan")}), "'input' must be a non-negative"),
        (_table({**_GOOD_ENTRY, "output": float("inf")}), "'output' must be a non-negative"),
        (_table(_GOOD_ENTRY, key="local:gemma"), "never priced"),
        (_table(_GOOD_ENTRY, key="Anthropic:X"), "lower-case"),
        (_table(_GOOD_ENTRY, aliases={"anthropic:y": "anthropic:z"}), "has no entry"),
        (_table(_GOOD_ENTRY, aliases={"anthropic:x": "anthropic:x"}), "both an entry and"),
        (_table({**_GOOD_ENTRY, "cache_raed": 0.1}), "unknown field 'cache_raed'"),
        (_table(_GOOD_ENTRY, model={}), "unknown field 'model'"),
        (_table({**_GOOD_ENTRY, "cache_write": {"5 min": 1.0}}), "retention '5 min'"),
        (_table({**_GOOD_ENTRY, "cache_write": {"60m": 1.0, "1h": 2.0}}), "overlap"),
        (_table({**_GOOD_ENTRY, "cache_write": 1.25}), "maps a retention"),
        (_table({**_GOOD_ENTRY, "cache_write": {"5m": -1}}), "'5m' must be a non-negative"),
        (_table({**_GOOD_ENTRY, "cache_write_5m": 1.25}), "not both"),
        ('{"models": {"anthropic:x": {}, "anthropic:x": {}}}', "appears twice"),
        (
            _table({**_GOOD_ENTRY, "long_context": {"above_prompt_tokens": 0}}),
            "above_prompt_tokens",
        ),
        (
            _table({**_GOOD_ENTRY, "long_context": {"above_prompt_tokens": 9, "source": "x"}}),
            "long_context: unknown field 'source'",
        ),
    ],
)
def test_a_malformed_table_is_rejected_with_what_to_fix(text: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        parse_table(text)


def test_a_well_formed_table_parses_with_its_aliases_and_snapshots() -> None:
    table = parse_table(_table(_GOOD_ENTRY, aliases={"anthropic:y": "anthropic:x"}))
    assert table.lookup("anthropic:y") == table.lookup("anthropic:x")
    assert table.lookup("anthropic:x-20260101") is not None


def test_write_retentions_are_ordered_shortest_first_whatever_the_file_order() -> None:
    entry = {**_GOOD_ENTRY, "cache_write": {"12h": 5.0, "30m": 2.5}}
    prices = parse_table(_table(entry, key="openai:x")).lookup("openai:x")
    assert prices is not None
    assert prices.rates.cache_writes == (("30m", 2.5), ("12h", 5.0))
    assert prices.rates.cache_write() == 2.5


def test_the_older_write_keys_still_parse_into_retention_rates() -> None:
    # The format before `cache_write`: one key per Anthropic retention.
    legacy = {k: v for k, v in _GOOD_ENTRY.items() if k != "cache_write"}
    legacy |= {"cache_write_5m": 1.25, "cache_write_1h": 2.0}
    legacy_prices = parse_table(_table(legacy)).lookup("anthropic:x")
    new_prices = parse_table(_table(_GOOD_ENTRY)).lookup("anthropic:x")
    assert legacy_prices is not None
    assert legacy_prices == new_prices


def test_an_entry_without_write_rates_bills_writes_as_plain_input() -> None:
    entry = {k: v for k, v in _GOOD_ENTRY.items() if k != "cache_write"}
    prices = parse_table(_table(entry, key="gemini:x")).lookup("gemini:x")
    assert prices is not None
    assert cost(Usage(cache_write_tokens=M), prices) == pytest.approx(1.0)


# --- user price files ------------------------------------------------------------------------


def test_a_price_file_adds_a_model_the_shipped_table_lacks(tmp_path: Path) -> None:
    path = _write(tmp_path, {"openai:gpt-house": _GOOD_ENTRY})
    table = load_prices(path)
    prices = table.lookup("openai:gpt-house")
    assert prices is not None
    assert prices.origin == str(path)
    assert table.lookup("anthropic:claude-sonnet-4-5") == prices_for("anthropic:claude-sonnet-4-5")


def test_a_price_file_overrides_a_shipped_entry(tmp_path: Path) -> None:
    negotiated = {**_GOOD_ENTRY, "input": 2.4, "source": "our contract, section 3"}
    path = _write(tmp_path, {"anthropic:claude-sonnet-4-5": negotiated})
    prices = load_prices(path).lookup("anthropic:claude-sonnet-4-5-20250929")
    assert prices is not None
    assert prices.rates.input == 2.4
    assert prices.source == "our contract, section 3"
    assert prices.long_context is None  # the whole entry is replaced, not patched


def test_a_table_loaded_from_a_file_prices_a_run_report(tmp_path: Path) -> None:
    path = _write(tmp_path, {"openai:gpt-house": _GOOD_ENTRY})
    report = cost_report("openai:gpt-house", [Usage(output_tokens=M)], load_prices(path))
    assert report.total == pytest.approx(5.0)
    assert report.describe().endswith(f"prices as of 2026-11-01 from {path})")
    assert cost_report("openai:gpt-house", [Usage(output_tokens=M)]).total is None


def test_a_price_file_alias_may_point_at_a_shipped_entry(tmp_path: Path) -> None:
    path = _write(tmp_path, {}, aliases={"openai:gpt-house": "openai:gpt-5"})
    assert load_prices(path).lookup("openai:gpt-house") == prices_for("openai:gpt-5")


def test_a_price_file_entry_replaces_a_shipped_alias_of_the_same_name(tmp_path: Path) -> None:
    path = _write(tmp_path, {"openai:gpt-5.6": _GOOD_ENTRY})
    prices = load_prices(path).lookup("openai:gpt-5.6")
    assert prices is not None
    assert prices.rates.input == 1.0


def test_a_bad_price_file_names_the_file_and_the_entry(tmp_path: Path) -> None:
    path = _write(tmp_path, {"openai:gpt-house": {**_GOOD_ENTRY, "output": "cheap"}})
    with pytest.raises(ConfigurationError) as caught:
        load_prices(path)
    message = str(caught.value)
    assert str(path) in message
    assert "'openai:gpt-house'" in message
    assert "'output' must be a non-negative number" in message


def test_a_missing_price_file_says_which_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"cannot read price file .*nope\.json"):
        load_prices(tmp_path / "nope.json")


# --- WARMLOOP_PRICES -------------------------------------------------------------------------


def test_the_env_var_adds_and_overrides_prices_for_every_lookup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(
        tmp_path,
        {
            "openai:gpt-house": _GOOD_ENTRY,
            "openai:gpt-5": {**_GOOD_ENTRY, "input": 9.0},
        },
    )
    monkeypatch.setenv(PRICES_ENV, str(path))
    assert prices_for("openai:gpt-house") is not None
    gpt5 = prices_for("openai-chat:gpt-5-2025-08-07")
    assert gpt5 is not None
    assert gpt5.rates.input == 9.0
    report = cost_report("openai:gpt-house", [Usage(input_tokens=M)])
    assert report.total == pytest.approx(1.0)
    assert f"from {path}" in report.describe()


def test_an_empty_env_var_means_the_shipped_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PRICES_ENV, "  ")
    assert price_table() is shipped_table()


def test_an_edited_price_file_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path, {"openai:gpt-house": _GOOD_ENTRY})
    monkeypatch.setenv(PRICES_ENV, str(path))
    assert prices_for("openai:gpt-house") is not None
    _write(tmp_path, {"openai:gpt-house": {**_GOOD_ENTRY, "input": 1.5, "note": "raised"}})
    prices = prices_for("openai:gpt-house")
    assert prices is not None
    assert prices.rates.input == 1.5


def test_a_bad_file_in_the_env_var_names_the_variable_the_file_and_the_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path, {"openai:gpt-house": {**_GOOD_ENTRY, "as_of": "soon"}})
    monkeypatch.setenv(PRICES_ENV, str(path))
    with pytest.raises(ConfigurationError) as caught:
        prices_for("openai:gpt-5")
    message = str(caught.value)
    assert str(path) in message
    assert PRICES_ENV in message
    assert "'openai:gpt-house'" in message
    assert "YYYY-MM-DD" in message


def test_a_missing_file_in_the_env_var_says_how_to_fix_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PRICES_ENV, str(tmp_path / "gone.json"))
    with pytest.raises(ConfigurationError, match=f"gone.json.*{PRICES_ENV}.*unset"):
        price_table()
