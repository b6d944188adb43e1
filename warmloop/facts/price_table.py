"""The dated price table: what each model's tokens cost, where the figure comes from.

The table (`prices.json`, shipped with the package) is keyed by model selection string
(`anthropic:claude-sonnet-4-5`). Where the maintained `genai-prices` package has a model,
its rates come from there (`maintained_prices`) and the table adds only what the package
lacks. Every entry carries its source and an `as_of` date; a model the table does not
know has no price (None), and local engines are never priced.

An entry gives USD per million tokens for `input` (uncached), `cache_read` and `output`
(reasoning / thinking tokens included: OpenAI and Gemini bill them as output), and
optionally `cache_write`, a rate per retention the provider sells (`{"5m": 3.75, "1h": 6}`
for Anthropic, `{"30m": 2.5, "12h": 5}` for OpenAI's GPT-5.6 and later); without it,
cache writes are billed as plain input. The older keys `cache_write_5m` / `cache_write_1h`
are still read. `long_context` holds the rates of a whole request whose prompt is longer
than `above_prompt_tokens`.

Your own prices: write a JSON file in the same format (`{"models": {...}}`, with
optional `aliases` and `provider_aliases`) and set `WARMLOOP_PRICES=/path/to/prices.json`
(every lookup, `Run.cost()` and the CLI then use it), or pass `load_prices(path)` to
`cost_report`. Its entries are checked like the shipped ones (each needs a `source` and
an `as_of` date), replace shipped entries with the same key and add new ones; a bad file
raises `ConfigurationError` naming the file and the entry.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import date
from functools import cache, lru_cache
from pathlib import Path

from warmloop.errors import ConfigurationError, WarmloopError
from warmloop.facts.maintained_prices import matched_entry, with_maintained
from warmloop.facts.model_names import find_entry, split_model_name, split_spec, table_keys
from warmloop.facts.profiles import bills_nothing
from warmloop.facts.table_file import read_table, shipped_text, string_map
from warmloop.facts.usage import Usage

PRICES_ENV = "WARMLOOP_PRICES"

_RETENTION = re.compile(r"^([1-9]\d*)([mh])$")
_RATE_KEYS = frozenset({"input", "cache_read", "output", "cache_write"})
_LEGACY_WRITE_KEYS = {"cache_write_5m": "5m", "cache_write_1h": "1h"}
_ENTRY_KEYS = _RATE_KEYS | set(_LEGACY_WRITE_KEYS) | {"source", "as_of", "note", "long_context"}
_TIER_KEYS = _RATE_KEYS | set(_LEGACY_WRITE_KEYS) | {"above_prompt_tokens"}
_TABLE_KEYS = frozenset({"about", "models", "aliases", "provider_aliases"})


@dataclass(frozen=True)
class Rates:
    """USD per million tokens for each kind of token a request is billed for.

    `output` covers every generated token, reasoning included. `cache_writes` pairs each
    retention the provider sells (`"5m"`, `"1h"`, `"30m"`, ...) with its rate, shortest
    first; empty when writes are billed as plain input.
    """

    input: float
    cache_read: float
    output: float
    cache_writes: tuple[tuple[str, float], ...] = ()

    def cache_write(self, retention: str | None = None) -> float:
        """The rate of a cache write kept for `retention` (default: the shortest sold)."""
        if not self.cache_writes:
            return self.input
        if retention is None:
            return self.cache_writes[0][1]
        for sold, rate in self.cache_writes:
            if sold == retention:
                return rate
        offered = ", ".join(sold for sold, _ in self.cache_writes)
        raise WarmloopError(
            f"no cache write rate for retention {retention!r} (this model sells {offered}); "
            "the usage names a retention its provider does not bill"
        )


@dataclass(frozen=True)
class LongContext:
    """Rates that apply to a whole request once its prompt exceeds `above_prompt_tokens`."""

    above_prompt_tokens: int
    rates: Rates


@dataclass(frozen=True)
class Prices:
    """One model's table entry: its rates, where they come from and when they held.

    `origin` is the user price file the entry came from, or "" for the shipped table.
    """

    model: str
    rates: Rates
    source: str
    as_of: date
    note: str = ""
    long_context: LongContext | None = None
    origin: str = ""

    def rates_for(self, usage: Usage) -> Rates:
        """The rates a request with this usage is billed at (long-context tier or base)."""
        tier = self.long_context
        # Providers bill the whole request, output included, at the higher tier once the
        # prompt (cached or not) crosses the threshold.
        if tier is not None and usage.prompt_tokens > tier.above_prompt_tokens:
            return tier.rates
        return self.rates


def is_unpriced_engine(model_name: str) -> bool:
    """True for engines warmloop never prices: local, self-hosted servers, scripted (a
    provider profile of mode `engine`, `profiles.bills_nothing`)."""
    return bills_nothing(model_name)


@dataclass(frozen=True)
class PriceTable:
    """The parsed price table with its lookup rules (see `lookup`)."""

    models: Mapping[str, Prices]
    aliases: Mapping[str, str]
    provider_aliases: Mapping[str, str]
    matched: Callable[[str, str], Prices | None] | None = None
    """Prices for a (provider, model) the table does not list, from the maintained package's
    own matching (`maintained_prices.matched_entry`); None: only the table's entries."""

    def lookup(self, model_name: str) -> Prices | None:
        """Prices for a selection string, or None when it is unknown or a local engine.

        Rules, in order: trim and lower-case; local engines (`local`,
        `openai-compatible:...`) have no price; a provider alias swaps the provider
        (`openai-chat:gpt-5` is priced as `openai:gpt-5`, the same model on another API);
        then the exact key, then a model alias (a name billed as another model); then the
        same two with a dated snapshot suffix removed (`-20250929`, `-2025-08-07`); then,
        for a name the table does not list, the maintained genai-prices package's own match
        (`gpt-4o-2024-08-06` is its `gpt-4o`, `gpt-5-pro` its own `gpt-5-pro`, never a
        neighbour's price), where the shipped table has that package behind it.
        """
        provider, model = split_spec(model_name, self.provider_aliases)
        if not model or bills_nothing(f"{provider}:{model}"):
            return None
        found = find_entry(self.models, self.aliases, table_keys(provider, model))
        if found is None and self.matched is not None:
            return self.matched(provider, model)
        return found

    def merged(self, other: PriceTable, where: str = "merged price table") -> PriceTable:
        """This table with `other`'s entries on top: same keys replaced, new keys added."""
        # A key is a model or an alias, never both, so the newer meaning of a key wins.
        models = {k: v for k, v in self.models.items() if k not in other.aliases}
        aliases = {k: v for k, v in self.aliases.items() if k not in other.models}
        table = _checked(
            models | dict(other.models),
            aliases | dict(other.aliases),
            dict(self.provider_aliases) | dict(other.provider_aliases),
            where,
        )
        return replace(table, matched=self.matched)


def parse_table(text: str, origin: str = "") -> PriceTable:
    """Parse and validate a price table in the `prices.json` format.

    `origin` names the file in error messages and in each entry's `Prices.origin`.
    """
    where = f"price file {origin}" if origin else "price table"
    models, aliases, provider_aliases = _parse(read_table(text, where), where, origin)
    return _checked(models, aliases, provider_aliases, where)


@cache
def shipped_table() -> PriceTable:
    """The table shipped with warmloop, read and validated once per process: `prices.json`
    with the rates of the models it takes from genai-prices (`maintained_prices`)."""
    where = "price table"
    data = with_maintained(read_table(shipped_text("prices.json"), where), date.today())
    return replace(_checked(*_parse(data, where, ""), where), matched=_maintained_match)


@lru_cache(maxsize=256)
def _maintained_match(provider: str, model: str) -> Prices | None:
    """The maintained package's price for a name the shipped table does not list."""
    table = read_table(shipped_text("prices.json"), "price table")
    section = table.get("genai_prices", {}) if isinstance(table, dict) else {}
    if not isinstance(section, dict):
        return None
    entry = matched_entry(section, provider, model, date.today())
    if entry is None:
        return None
    return _entry(f"{provider}:{model}", dict(entry), "price table (genai-prices match)", "")


def load_prices(path: str | os.PathLike[str]) -> PriceTable:
    """The shipped table with the price file at `path` merged over it (see `cost_report`)."""
    return _with_file(Path(path), "")


def price_table() -> PriceTable:
    """The table prices are looked up in: shipped, plus the file `WARMLOOP_PRICES` names."""
    path = os.environ.get(PRICES_ENV, "").strip()
    if not path:
        return shipped_table()
    try:
        stat = Path(path).stat()
    except OSError as exc:
        raise ConfigurationError(
            f"cannot read price file {path} (set by {PRICES_ENV}): {exc.strerror or exc}; "
            f"fix the path or unset {PRICES_ENV}"
        ) from exc
    return _user_table(path, stat.st_mtime_ns, stat.st_size)


def prices_for(model_name: str) -> Prices | None:
    """Prices for a model selection string, or None (unknown model, or a local engine)."""
    return price_table().lookup(model_name)


# --- reading and checking tables -------------------------------------------------------


@lru_cache(maxsize=8)
def _user_table(path: str, mtime_ns: int, size: int) -> PriceTable:
    # Keyed on the file's mtime and size too, so an edited file is read again.
    del mtime_ns, size
    return _with_file(Path(path), f" (set by {PRICES_ENV})")


def _with_file(path: Path, how: str) -> PriceTable:
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigurationError(f"cannot read price file {path}{how}: {reason}") from exc
    where = f"price file {path}{how}"
    # Aliases in the file may point at shipped entries, so they are checked after merging.
    user = PriceTable(*_parse(read_table(text, where), where, str(path)))
    return shipped_table().merged(user, where)


def _checked(
    models: dict[str, Prices],
    aliases: dict[str, str],
    provider_aliases: dict[str, str],
    where: str,
) -> PriceTable:
    for alias, target in aliases.items():
        if target not in models:
            raise ConfigurationError(
                f"{where}: alias {alias!r} points to {target!r}, which has no entry; "
                "add the entry or fix the alias"
            )
        if alias in models:
            raise ConfigurationError(f"{where}: {alias!r} is both an entry and an alias")
    return PriceTable(models, aliases, provider_aliases)


def _parse(
    data: object, where: str, origin: str
) -> tuple[dict[str, Prices], dict[str, str], dict[str, str]]:
    if not isinstance(data, dict) or not isinstance(data.get("models"), dict):
        raise ConfigurationError(f"{where} needs a top-level object with a 'models' object")
    _no_unknown(data, _TABLE_KEYS, where)
    models = {key: _entry(key, value, where, origin) for key, value in data["models"].items()}
    aliases = string_map(data.get("aliases", {}), f"{where}: 'aliases'")
    provider_aliases = string_map(data.get("provider_aliases", {}), f"{where}: 'provider_aliases'")
    return models, aliases, provider_aliases


def _no_unknown(value: Mapping[str, object], known: Iterable[str], where: str) -> None:
    unknown = sorted(set(value) - set(known))
    if unknown:
        raise ConfigurationError(
            f"{where}: unknown field {unknown[0]!r} (known: {', '.join(sorted(known))})"
        )


def _entry(key: str, value: object, table: str, origin: str) -> Prices:
    where = f"{table}, entry {key!r}"
    provider, model = split_model_name(key)
    if ":" not in key or not model or key != key.strip().lower():
        raise ConfigurationError(f"{where}: keys are lower-case 'provider:model' strings")
    if bills_nothing(key):
        raise ConfigurationError(f"{where}: {provider!r} engines are never priced; remove it")
    if not isinstance(value, dict):
        raise ConfigurationError(f"{where}: must be an object")
    _no_unknown(value, _ENTRY_KEYS, where)
    for field in ("source", "as_of"):
        if not isinstance(value.get(field), str) or not value[field].strip():
            raise ConfigurationError(f"{where}: needs a non-empty {field!r} string")
    try:
        as_of = date.fromisoformat(value["as_of"])
    except ValueError as exc:
        raise ConfigurationError(f"{where}: 'as_of' must be a YYYY-MM-DD date") from exc
    note = value.get("note", "")
    if not isinstance(note, str):
        raise ConfigurationError(f"{where}: 'note' must be a string")
    long_context = None
    if "long_context" in value:
        tier = value["long_context"]
        threshold = tier.get("above_prompt_tokens") if isinstance(tier, dict) else None
        if not isinstance(threshold, int) or isinstance(threshold, bool) or threshold <= 0:
            raise ConfigurationError(
                f"{where}: 'long_context' needs a positive integer 'above_prompt_tokens'"
            )
        tier_where = f"{where}, long_context"
        _no_unknown(tier, _TIER_KEYS, tier_where)
        long_context = LongContext(threshold, _rates(tier, tier_where))
    return Prices(key, _rates(value, where), value["source"], as_of, note, long_context, origin)


def _rates(value: Mapping[str, object], where: str) -> Rates:
    input_rate, cache_read, output = (
        _rate(value, k, where) for k in ("input", "cache_read", "output")
    )
    legacy = {k: r for k, r in _LEGACY_WRITE_KEYS.items() if k in value}
    if "cache_write" in value and legacy:
        raise ConfigurationError(
            f"{where}: give 'cache_write' or the older {', '.join(legacy)}, not both"
        )
    writes = value.get("cache_write", {})
    if legacy:
        writes = {retention: value[key] for key, retention in legacy.items()}
    if not isinstance(writes, dict):
        raise ConfigurationError(
            f"{where}: 'cache_write' maps a retention ('5m', '30m', '1h') to a rate"
        )
    minutes: dict[int, str] = {}
    for retention in writes:
        match = _RETENTION.match(retention) if isinstance(retention, str) else None
        if match is None:
            raise ConfigurationError(
                f"{where}: cache write retention {retention!r} must look like '5m' or '1h'"
            )
        length = int(match[1]) * (60 if match[2] == "h" else 1)
        if length in minutes:
            raise ConfigurationError(f"{where}: {minutes[length]!r} and {retention!r} overlap")
        minutes[length] = retention
    sold = tuple(
        (retention, _rate(writes, retention, f"{where}, cache_write"))
        for _, retention in sorted(minutes.items())
    )
    return Rates(input_rate, cache_read, output, sold)


def _rate(value: Mapping[str, object], field: str, where: str) -> float:
    number = value.get(field)
    if (
        not isinstance(number, int | float)
        or isinstance(number, bool)
        or not math.isfinite(number)
        or number < 0
    ):
        raise ConfigurationError(
            f"{where}: {field!r} must be a non-negative number (USD per million tokens)"
        )
    return float(number)
