"""What requests cost: a dated price table per model, and the cost of a `Usage` under it.

The table (`prices.json`, shipped with the package) is keyed by model selection string
(`anthropic:claude-sonnet-4-5`). Every entry carries its source and an `as_of` date; a
model the table does not know has no price (None), and local engines are never priced.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from functools import cache
from importlib import resources
from typing import Any

from warmloop.cache.usage import Usage
from warmloop.errors import ConfigurationError, WarmloopError

PER_TOKEN = 1e-6  # table prices are USD per million tokens

# Engines we run ourselves bill nothing per token; a price for them would be a guess.
UNPRICED_PROVIDERS = frozenset({"local", "openai-compatible", "scripted"})

# Snapshot ids: `claude-sonnet-4-5-20250929` (Anthropic), `gpt-5-2025-08-07` (OpenAI).
_DATED_SUFFIX = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2})$")

_RATE_FIELDS = ("input", "cache_read", "cache_write_5m", "cache_write_1h", "output")


@dataclass(frozen=True)
class Rates:
    """USD per million tokens for each kind of token a request is billed for."""

    input: float
    cache_read: float
    cache_write_5m: float
    cache_write_1h: float
    output: float


@dataclass(frozen=True)
class LongContext:
    """Rates that apply to a whole request once its prompt exceeds `above_prompt_tokens`."""

    above_prompt_tokens: int
    rates: Rates


@dataclass(frozen=True)
class Prices:
    """One model's table entry: its rates, where they come from and when they held."""

    model: str
    rates: Rates
    source: str
    as_of: date
    note: str = ""
    long_context: LongContext | None = None

    def rates_for(self, usage: Usage) -> Rates:
        """The rates a request with this usage is billed at (long-context tier or base)."""
        tier = self.long_context
        # Providers bill the whole request, output included, at the higher tier once the
        # prompt (cached or not) crosses the threshold.
        if tier is not None and usage.prompt_tokens > tier.above_prompt_tokens:
            return tier.rates
        return self.rates


@dataclass(frozen=True)
class Cost:
    """The USD cost of one or more requests, split by kind of token."""

    input: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    output: float = 0.0

    @property
    def total(self) -> float:
        """Everything together, in USD."""
        return self.input + self.cache_read + self.cache_write + self.output

    def __add__(self, other: Cost) -> Cost:
        return Cost(
            self.input + other.input,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
            self.output + other.output,
        )


def cost_breakdown(usage: Usage, prices: Prices) -> Cost:
    """The cost of one request, split into uncached input, cache reads, writes and output."""
    if not 0 <= usage.cache_write_1h_tokens <= usage.cache_write_tokens:
        raise WarmloopError(
            f"usage has {usage.cache_write_1h_tokens} one-hour cache writes out of "
            f"{usage.cache_write_tokens} cache writes; the provider's usage normalisation "
            "must count one-hour writes inside cache_write_tokens"
        )
    rates = prices.rates_for(usage)
    writes_5m = usage.cache_write_tokens - usage.cache_write_1h_tokens
    return Cost(
        input=usage.input_tokens * rates.input * PER_TOKEN,
        cache_read=usage.cache_read_tokens * rates.cache_read * PER_TOKEN,
        cache_write=(
            writes_5m * rates.cache_write_5m + usage.cache_write_1h_tokens * rates.cache_write_1h
        )
        * PER_TOKEN,
        output=usage.output_tokens * rates.output * PER_TOKEN,
    )


def cost(usage: Usage, prices: Prices) -> float:
    """The USD cost of one request with this usage under these prices."""
    return cost_breakdown(usage, prices).total


@dataclass(frozen=True)
class PriceTable:
    """The parsed price table with its lookup rules (see `lookup`)."""

    models: Mapping[str, Prices]
    aliases: Mapping[str, str]
    provider_aliases: Mapping[str, str]

    def lookup(self, model_name: str) -> Prices | None:
        """Prices for a selection string, or None when it is unknown or a local engine.

        Rules, in order: trim and lower-case; local engines (`local`,
        `openai-compatible:...`) have no price; a provider alias swaps the provider
        (`openai-chat:gpt-5` is priced as `openai:gpt-5`, the same model on another API);
        then the exact key, then a model alias (a name billed as another model); then the
        same two with a dated snapshot suffix removed (`-20250929`, `-2025-08-07`).
        Nothing else is tried: a near miss such as `gpt-5-pro` is unknown, not `gpt-5`.
        """
        provider, sep, model = model_name.strip().lower().partition(":")
        if not sep or not model or provider in UNPRICED_PROVIDERS:
            return None
        provider = self.provider_aliases.get(provider, provider)
        key = f"{provider}:{model}"
        for candidate in (key, _DATED_SUFFIX.sub("", key)):
            found = self.models.get(candidate) or self.models.get(self.aliases.get(candidate, ""))
            if found is not None:
                return found
        return None


def parse_table(text: str) -> PriceTable:
    """Parse and validate a price table in the `prices.json` format."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"price table is not valid JSON ({exc}); fix the file") from exc
    if not isinstance(data, dict) or not isinstance(data.get("models"), dict):
        raise ConfigurationError("price table needs a top-level object with a 'models' object")
    models = {key: _entry(key, value) for key, value in data["models"].items()}
    aliases = _string_map(data.get("aliases", {}), "aliases")
    for alias, target in aliases.items():
        if target not in models:
            raise ConfigurationError(
                f"price table alias {alias!r} points to {target!r}, which has no entry; "
                "add the entry or fix the alias"
            )
    provider_aliases = _string_map(data.get("provider_aliases", {}), "provider_aliases")
    return PriceTable(models, aliases, provider_aliases)


@cache
def price_table() -> PriceTable:
    """The table shipped with warmloop, read and validated once per process."""
    text = resources.files("warmloop.cache").joinpath("prices.json").read_text("utf-8")
    return parse_table(text)


def prices_for(model_name: str) -> Prices | None:
    """Prices for a model selection string, or None (unknown model, or a local engine)."""
    return price_table().lookup(model_name)


@dataclass(frozen=True)
class CostReport:
    """The cost of a run's requests under one model's prices; costs are None when unpriced."""

    model: str
    prices: Prices | None
    usages: tuple[Usage, ...]

    @property
    def usage(self) -> Usage:
        """Usage summed over every request."""
        return sum(self.usages, Usage())

    @property
    def per_request(self) -> tuple[Cost, ...] | None:
        """Each request's cost, in order, or None when the model has no price."""
        prices = self.prices
        if prices is None:
            return None
        return tuple(cost_breakdown(u, prices) for u in self.usages)

    @property
    def breakdown(self) -> Cost | None:
        """The run's cost by kind of token, or None when the model has no price."""
        per_request = self.per_request
        return None if per_request is None else sum(per_request, Cost())

    @property
    def total(self) -> float | None:
        """The run's cost in USD, or None when the model has no price."""
        breakdown = self.breakdown
        return None if breakdown is None else breakdown.total

    def describe(self) -> str:
        """One line for people: total and split, with the price date, or why it is unknown."""
        breakdown = self.breakdown
        if breakdown is None or self.prices is None:
            return f"cost unknown: no price for {self.model!r} (local engines are not priced)"
        return (
            f"${breakdown.total:.4f} over {len(self.usages)} requests "
            f"(input ${breakdown.input:.4f}, cache reads ${breakdown.cache_read:.4f}, "
            f"cache writes ${breakdown.cache_write:.4f}, output ${breakdown.output:.4f}; "
            f"prices as of {self.prices.as_of.isoformat()})"
        )


def cost_report(model_name: str, usages: Iterable[Usage]) -> CostReport:
    """Price every request of a run under the table entry for `model_name`."""
    return CostReport(model_name, prices_for(model_name), tuple(usages))


def _entry(key: str, value: Any) -> Prices:
    where = f"price table entry {key!r}"
    provider, sep, model = key.partition(":")
    if not sep or not model or key != key.strip().lower():
        raise ConfigurationError(f"{where}: keys are lower-case 'provider:model' strings")
    if provider in UNPRICED_PROVIDERS:
        raise ConfigurationError(f"{where}: {provider!r} engines are never priced; remove it")
    if not isinstance(value, dict):
        raise ConfigurationError(f"{where}: must be an object")
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
        long_context = LongContext(threshold, _rates(tier, f"{where} long_context"))
    return Prices(key, _rates(value, where), value["source"], as_of, note, long_context)


def _rates(value: Mapping[str, Any], where: str) -> Rates:
    numbers: list[float] = []
    for field in _RATE_FIELDS:
        number = value.get(field)
        if not isinstance(number, int | float) or isinstance(number, bool) or number < 0:
            raise ConfigurationError(
                f"{where}: {field!r} must be a non-negative number (USD per million tokens)"
            )
        numbers.append(float(number))
    return Rates(*numbers)


def _string_map(value: Any, name: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ConfigurationError(f"price table {name!r} must map strings to strings")
    return dict(value)
