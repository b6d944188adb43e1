"""How each provider's prompt cache behaves, per model: a dated, data-driven profile.

The rules live in `profiles.json` (shipped with the package): provider defaults, per-model
overrides (a key ending in `*` covers a model family), each with its source and `as_of`
date. `profile_for("anthropic:claude-sonnet-4-6")` resolves a selection string to a frozen
`CacheProfile`; the simulator (`simulate.py`), the planner, the benchmarks and the audit
read their rules from it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import date
from functools import cache
from typing import Any, Literal, cast

from warmloop.errors import ConfigurationError
from warmloop.facts.model_names import find_entry, split_model_name, split_spec, table_keys
from warmloop.facts.table_file import read_table, shipped_text
from warmloop.facts.usage import Usage

CacheMode = Literal["explicit", "automatic", "engine"]
Matching = Literal["common_prefix", "whole_entry"]

MODES: tuple[CacheMode, ...] = ("explicit", "automatic", "engine")
MATCHINGS: tuple[Matching, ...] = ("common_prefix", "whole_entry")


@dataclass(frozen=True)
class Retention:
    """One cache lifetime a provider offers (a TTL such as `5m`, or `in_memory`).

    `seconds`: how long an entry lives after its last write or read, as the simulator
    assumes it (math.inf: never expires). `cold_after`: idle seconds after which the cache
    is surely gone, on the safe side. `write_multiplier`: a written token's price relative
    to base input. `long_rate`: writes are billed at the long-TTL rate
    (`Usage.cache_write_1h_tokens`, `Usage.cache_write_12h_tokens`).
    """

    name: str
    seconds: float
    cold_after: float
    write_multiplier: float
    long_rate: bool = False


@dataclass(frozen=True)
class CacheProfile:
    """The cache rules for one model under one retention (`ttl`).

    `mode`: `explicit` (writes only at breakpoints, Anthropic), `automatic` (every prompt
    is cached, OpenAI, Gemini, DeepSeek) or `engine` (a self-hosted KV cache that holds the
    previous request). `matching`: a hit is the longest common prefix with any entry
    (`common_prefix`) or the longest whole entry that is a prefix (`whole_entry`).
    `max_breakpoints`/`lookback_blocks` are None where the provider has no such limit.
    `prewarm`: the model prepares its cache on a request that generates nothing (OpenAI's
    `prompt_cache_options.prewarm`, GPT-5.6 and later), so a keep-alive or a warm-up pays
    for no output where its wire format carries it (`WireFormat.prewarm`).
    """

    model: str
    provider: str
    entry: str
    mode: CacheMode
    matching: Matching
    persists_common_prefix: bool
    context_window: int
    min_cacheable_tokens: int
    increment_tokens: int
    max_breakpoints: int | None
    lookback_blocks: int | None
    writes_billed: bool
    read_multiplier: float
    retentions: tuple[Retention, ...]
    ttl: str
    source: str
    as_of: date
    note: str = ""
    prewarm: bool = False

    def retention_for(self, name: str) -> Retention:
        """The retention called `name`; a name this model does not offer is an error."""
        for retention in self.retentions:
            if retention.name == name:
                return retention
        offered = ", ".join(r.name for r in self.retentions)
        raise ConfigurationError(
            f"{self.model or self.entry!r} has no cache TTL {name!r}; use one of: {offered}"
        )

    @property
    def retention(self) -> Retention:
        """The retention in use (`ttl`)."""
        return self.retention_for(self.ttl)

    @property
    def ttl_seconds(self) -> float:
        """Seconds an entry lives after its last use under the retention in use."""
        return self.retention.seconds

    @property
    def cold_after(self) -> float:
        """Idle seconds after which the cache is surely gone (safe side; math.inf: never)."""
        return self.retention.cold_after

    def cacheable(self, tokens: int) -> int:
        """The part of a `tokens`-long matched prefix the provider serves from its cache.

        Nothing below the minimum; above it, whole increments only (OpenAI: 1024, then
        128-token steps; DeepSeek: 64-token units).
        """
        minimum = self.min_cacheable_tokens
        if tokens <= 0 or tokens < minimum:
            return 0
        return minimum + (tokens - minimum) // self.increment_tokens * self.increment_tokens

    def input_equivalent(self, usage: Usage) -> float:
        """A request's input cost in base-input tokens under these multipliers.

        Writes at the long rate use the first long-rate retention's multiplier. For
        comparing policies where no price is known; dollars come from `pricing`.
        """
        if not self.writes_billed:
            writes = float(usage.cache_write_tokens)
        else:
            short = next((r for r in self.retentions if not r.long_rate), self.retention)
            long = next((r for r in self.retentions if r.long_rate), short)
            long_writes = usage.cache_write_1h_tokens + usage.cache_write_12h_tokens
            short_writes = usage.cache_write_tokens - long_writes
            writes = short_writes * short.write_multiplier + long_writes * long.write_multiplier
        return usage.uncached_tokens + usage.cache_read_tokens * self.read_multiplier + writes


@dataclass(frozen=True)
class ProfileTable:
    """The parsed profile table with its lookup rules (see `lookup`)."""

    providers: Mapping[str, CacheProfile]
    models: Mapping[str, CacheProfile]
    families: tuple[tuple[str, CacheProfile], ...]
    aliases: Mapping[str, str]
    provider_aliases: Mapping[str, str]

    def lookup(self, model_spec: str) -> CacheProfile:
        """The profile for a selection string, with the model's default retention.

        Rules, in order: the table key rule (`model_names`: trim, lower-case, provider
        alias, exact key or alias, then without a dated snapshot suffix), then the longest
        family prefix; else the provider's defaults. An unknown provider is a
        ConfigurationError.
        """
        return self.find(model_spec)[0]

    def find(self, model_spec: str) -> tuple[CacheProfile, bool]:
        """The profile, and whether the table has an entry for this model (False: only
        the provider's defaults, which say nothing certain about the model itself)."""
        provider, model = split_spec(model_spec, self.provider_aliases)
        defaults = self.providers.get(provider)
        if defaults is None:
            known = ", ".join(sorted({*self.providers, *self.provider_aliases}))
            raise ConfigurationError(
                f"no cache profile for provider {provider!r} (from {model_spec!r}); "
                f"use one of: {known}"
            )
        found = self._model(provider, model) if model else None
        return replace(found or defaults, model=model_spec.strip()), found is not None

    def _model(self, provider: str, model: str) -> CacheProfile | None:
        keys = table_keys(provider, model)
        found = find_entry(self.models, self.aliases, keys)
        if found is not None:
            return found
        # Families are sorted longest prefix first, so the most specific one wins.
        return next((p for prefix, p in self.families if keys[0].startswith(prefix)), None)


def profile_for(model_spec: str, *, cache_ttl: str | None = None) -> CacheProfile:
    """The cache profile for a selection string such as `anthropic:claude-sonnet-4-6`.

    `cache_ttl` picks a retention the model offers (`5m`/`1h`, `in_memory`/`24h`,
    `30m`/`12h`); None keeps the model's default. Unknown models of a known provider get
    the provider's (safe) defaults; an unknown provider or TTL is a ConfigurationError.
    """
    profile = profile_table().lookup(model_spec)
    if cache_ttl is None:
        return profile
    return replace(profile, ttl=profile.retention_for(cache_ttl).name)


_PARTS = ("providers", "models", "aliases", "provider_aliases")
_registered: list[dict[str, Any]] = []


@cache
def profile_table() -> ProfileTable:
    """The table shipped with warmloop plus the entries `register_profiles` added, read and
    validated once per process (again after each registration)."""
    return parse_table(json.dumps(_table_data()))


def bills_nothing(model_spec: str) -> bool:
    """Whether a selection string's provider is an engine its user runs, billing nothing per
    token (its provider profile's `mode` is `engine`: the embedded model, a self-hosted
    server, the scripted model): no price is looked up or accepted for it, since one would
    be a guess. One fact, in the cache tables, for built-ins and registered providers alike."""
    table = profile_table()
    provider, _ = split_spec(model_spec, table.provider_aliases)
    found = table.providers.get(provider)
    return found is not None and found.mode == "engine"


def register_profiles(text: str) -> None:
    """Add entries in the `profiles.json` format (a provider warmloop does not ship, with
    its defaults, models and aliases) to the table; a key the table has already is a
    ConfigurationError. The hook a provider added from outside the package uses
    (docs/adding-a-provider.md)."""
    parse_table(text)  # complete and valid on its own
    added: dict[str, Any] = read_table(text, "the registered profiles")
    data = _table_data()
    taken = sorted(k for part in _PARTS for k in added.get(part, {}) if k in data.get(part, {}))
    if taken:
        raise ConfigurationError(
            f"profile entries {', '.join(taken)} are in the table already; add only new keys"
        )
    _registered.append(added)
    profile_table.cache_clear()


def _table_data() -> dict[str, Any]:
    data: dict[str, Any] = read_table(shipped_text("profiles.json"), "profiles.json")
    for added in _registered:
        for part in _PARTS:
            data[part] = {**data.get(part, {}), **added.get(part, {})}
    return data


def parse_table(text: str) -> ProfileTable:
    """Parse and validate a profile table in the `profiles.json` format."""
    data = read_table(text, "profile table")
    if not isinstance(data, dict) or not all(
        isinstance(data.get(name), dict) for name in ("providers", "models")
    ):
        raise ConfigurationError("profile table needs 'providers' and 'models' objects")
    raw_providers: dict[str, Any] = data["providers"]
    providers: dict[str, CacheProfile] = {}
    for name, value in raw_providers.items():
        if not isinstance(value, dict) or name != name.strip().lower() or ":" in name:
            raise ConfigurationError(f"profile provider {name!r}: a lower-case name and object")
        providers[name] = _profile(name, name, value)
    models: dict[str, CacheProfile] = {}
    families: list[tuple[str, CacheProfile]] = []
    for key, value in data["models"].items():
        provider, model = split_model_name(key)
        where = f"profile entry {key!r}"
        if ":" not in key or not model or key != key.strip().lower():
            raise ConfigurationError(f"{where}: keys are lower-case 'provider:model' strings")
        if provider not in raw_providers:
            raise ConfigurationError(f"{where}: provider {provider!r} has no defaults")
        if not isinstance(value, dict) or not {"source", "as_of"} <= value.keys():
            raise ConfigurationError(f"{where}: needs an object with its own source and as_of")
        merged = {**raw_providers[provider], "note": "", **value}
        if key.endswith("*"):
            families.append((key[:-1], _profile(key, provider, merged)))
        else:
            models[key] = _profile(key, provider, merged)
    families.sort(key=lambda item: len(item[0]), reverse=True)
    aliases = _string_map(data.get("aliases", {}), "aliases")
    for alias, target in aliases.items():
        if target not in models:
            raise ConfigurationError(f"profile alias {alias!r} points to {target!r}: no entry")
    provider_aliases = _string_map(data.get("provider_aliases", {}), "provider_aliases")
    for alias, target in provider_aliases.items():
        if target not in providers:
            raise ConfigurationError(f"profile provider alias {alias!r} -> unknown {target!r}")
    return ProfileTable(providers, models, tuple(families), aliases, provider_aliases)


_FIELDS = frozenset(
    {
        "mode",
        "matching",
        "persists_common_prefix",
        "context_window",
        "min_cacheable_tokens",
        "increment_tokens",
        "max_breakpoints",
        "lookback_blocks",
        "writes_billed",
        "read_multiplier",
        "default_ttl",
        "ttls",
        "source",
        "as_of",
        "note",
        "prewarm",
    }
)


def _profile(key: str, provider: str, value: Mapping[str, Any]) -> CacheProfile:
    where = f"profile entry {key!r}"
    unknown = set(value) - _FIELDS
    missing = _FIELDS - set(value) - {"note", "prewarm"}
    if unknown or missing:
        raise ConfigurationError(
            f"{where}: unknown fields {sorted(unknown)}, missing fields {sorted(missing)}"
        )

    def field(name: str, check: Callable[[Any], bool], what: str) -> Any:
        if not check(value[name]):
            raise ConfigurationError(f"{where}: {name!r} must be {what}")
        return value[name]

    def count(name: str, low: int, optional: bool = False) -> int | None:
        def ok(v: Any) -> bool:
            return (optional and v is None) or (_is_int(v) and v >= low)

        return cast("int | None", field(name, ok, f"an integer >= {low}"))

    mode = field("mode", lambda v: v in MODES, f"one of {MODES}")
    matching = field("matching", lambda v: v in MATCHINGS, f"one of {MATCHINGS}")
    flags = {
        name: field(name, lambda v: isinstance(v, bool), "true or false")
        for name in ("persists_common_prefix", "writes_billed")
    }
    prewarm = (
        field("prewarm", lambda v: isinstance(v, bool), "true or false")
        if "prewarm" in value
        else False
    )
    read_multiplier = field("read_multiplier", _is_rate, "a non-negative number")
    text = {name: field(name, _is_text, "a non-empty string") for name in ("source", "as_of")}
    note = field("note", lambda v: isinstance(v, str), "a string") if "note" in value else ""
    try:
        as_of = date.fromisoformat(text["as_of"])
    except ValueError as exc:
        raise ConfigurationError(f"{where}: 'as_of' must be a YYYY-MM-DD date") from exc
    ttls = field("ttls", lambda v: isinstance(v, dict) and bool(v), "a non-empty object")
    retentions = tuple(_retention(where, name, rule) for name, rule in ttls.items())
    default_ttl = field("default_ttl", lambda v: v in ttls, "the name of one of its ttls")
    if not flags["writes_billed"] and any(r.write_multiplier != 1.0 for r in retentions):
        raise ConfigurationError(f"{where}: unbilled writes need write_multiplier 1.0")
    profile = CacheProfile(
        model="",
        provider=provider,
        entry=key,
        mode=mode,
        matching=matching,
        persists_common_prefix=flags["persists_common_prefix"],
        context_window=cast(int, count("context_window", 1)),
        min_cacheable_tokens=cast(int, count("min_cacheable_tokens", 0)),
        increment_tokens=cast(int, count("increment_tokens", 1)),
        max_breakpoints=count("max_breakpoints", 1, optional=True),
        lookback_blocks=count("lookback_blocks", 1, optional=True),
        writes_billed=flags["writes_billed"],
        read_multiplier=float(read_multiplier),
        retentions=retentions,
        ttl=default_ttl,
        source=text["source"],
        as_of=as_of,
        note=note,
        prewarm=prewarm,
    )
    if mode == "explicit" and (profile.max_breakpoints is None or profile.lookback_blocks is None):
        raise ConfigurationError(f"{where}: explicit caching needs max_breakpoints and lookback")
    return profile


def _retention(where: str, name: str, rule: Any) -> Retention:
    where = f"{where} ttl {name!r}"
    required = {"seconds", "cold_after", "write_multiplier"}
    if not isinstance(rule, dict) or not required <= rule.keys():
        raise ConfigurationError(f"{where}: needs seconds, cold_after and write_multiplier")
    if rule.keys() - required - {"long_rate"}:
        raise ConfigurationError(f"{where}: unknown fields {sorted(rule)}")
    seconds, cold_after = (_lifetime(where, rule[k], k) for k in ("seconds", "cold_after"))
    if cold_after < seconds:
        raise ConfigurationError(f"{where}: cold_after must be at least seconds (safe side)")
    if not _is_rate(rule["write_multiplier"]):
        raise ConfigurationError(f"{where}: 'write_multiplier' must be a non-negative number")
    long_rate = rule.get("long_rate", False)
    if not isinstance(long_rate, bool):
        raise ConfigurationError(f"{where}: 'long_rate' must be true or false")
    return Retention(name, seconds, cold_after, float(rule["write_multiplier"]), long_rate)


def _lifetime(where: str, value: Any, name: str) -> float:
    if value is None:
        return math.inf
    if not _is_rate(value) or value <= 0:
        raise ConfigurationError(f"{where}: {name!r} must be positive seconds or null (never)")
    return float(value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_rate(value: Any) -> bool:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return ok and math.isfinite(value) and value >= 0


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _string_map(value: Any, name: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ConfigurationError(f"profile table {name!r} must map strings to strings")
    return dict(value)
