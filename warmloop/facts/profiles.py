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
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from datetime import date
from functools import cache
from typing import Literal, TypeGuard, TypeVar

from warmloop.errors import ConfigurationError
from warmloop.facts.model_names import find_entry, split_model_name, split_spec, table_keys
from warmloop.facts.table_file import read_table, shipped_text, string_map
from warmloop.facts.usage import Usage

CacheMode = Literal["explicit", "automatic", "engine"]
Matching = Literal["common_prefix", "whole_entry"]

MODES: tuple[CacheMode, ...] = ("explicit", "automatic", "engine")
MATCHINGS: tuple[Matching, ...] = ("common_prefix", "whole_entry")
T = TypeVar("T")


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
    `needs_cache_key`: a request without the routing key (`prompt_cache_key`) falls back to
    an older, far less reliable matching (GPT-5.6 and later), so a miss on such a request
    is the missing key's (`wire.miss_kinds`). `default_ttl_depends`: what the provider's
    default retention depends on where the client cannot know it (OpenAI before GPT-5.5:
    the organisation's data-retention setting), "" where the default is documented;
    `default_retention_known` reads it. `durable_seconds`: how long a prefix evicted from
    the cache stays readable from a durable tier (Vertex AI's implicit caching: up to 24 h),
    None where there is none: a pause inside it needs no keep-alive.
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
    needs_cache_key: bool = False
    default_ttl_depends: str = ""
    durable_seconds: float | None = None

    @property
    def default_retention_known(self) -> bool:
        """Whether the retention a request that names none gets is documented for this
        model: False where it depends on something the client cannot see (OpenAI before
        GPT-5.5, on models selling two retentions: the organisation's data retention)."""
        return not (self.default_ttl_depends and len(self.retentions) > 1)

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
_registered: list[dict[str, object]] = []


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
    added = _object(read_table(text, "the registered profiles"), "the registered profiles")
    data = _table_data()
    taken = sorted(k for part in _PARTS for k in _part(added, part) if k in _part(data, part))
    if taken:
        raise ConfigurationError(
            f"profile entries {', '.join(taken)} are in the table already; add only new keys"
        )
    _registered.append(added)
    profile_table.cache_clear()


def _table_data() -> dict[str, object]:
    data = _object(read_table(shipped_text("profiles.json"), "profiles.json"), "profiles.json")
    for added in _registered:
        for part in _PARTS:
            data[part] = {**_part(data, part), **_part(added, part)}
    return data


def _object(data: object, where: str) -> dict[str, object]:
    if not isinstance(data, dict):
        raise ConfigurationError(f"{where} must be a JSON object of profile table parts")
    return data


def _part(data: Mapping[str, object], part: str) -> Mapping[str, object]:
    """One part of a table (`providers`, `models`, ...): empty where the table has none."""
    found = data.get(part, {})
    if not isinstance(found, dict):
        raise ConfigurationError(f"profile table {part!r} must be an object")
    return found


def parse_table(text: str) -> ProfileTable:
    """Parse and validate a profile table in the `profiles.json` format."""
    data = read_table(text, "profile table")
    if not isinstance(data, dict) or not all(
        isinstance(data.get(name), dict) for name in ("providers", "models")
    ):
        raise ConfigurationError("profile table needs 'providers' and 'models' objects")
    raw_providers: dict[str, Mapping[str, object]] = {}
    providers: dict[str, CacheProfile] = {}
    for name, value in data["providers"].items():
        if not isinstance(value, dict) or name != name.strip().lower() or ":" in name:
            raise ConfigurationError(f"profile provider {name!r}: a lower-case name and object")
        raw_providers[name] = value
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
    aliases = string_map(data.get("aliases", {}), "profile table 'aliases'")
    for alias, target in aliases.items():
        if target not in models:
            raise ConfigurationError(f"profile alias {alias!r} points to {target!r}: no entry")
    provider_aliases = string_map(
        data.get("provider_aliases", {}), "profile table 'provider_aliases'"
    )
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
        "needs_cache_key",
        "default_ttl_depends",
        "durable_seconds",
    }
)
_OPTIONAL = frozenset(
    {"note", "prewarm", "needs_cache_key", "default_ttl_depends", "durable_seconds"}
)


class _Fields:
    """One profile entry's fields (all of `_FIELDS`, those in `_OPTIONAL` optional), each
    read as its kind: a field of another kind is a ConfigurationError naming the entry, the
    field and what it must be."""

    def __init__(self, where: str, value: Mapping[str, object]) -> None:
        unknown = set(value) - _FIELDS
        missing = _FIELDS - set(value) - _OPTIONAL
        if unknown or missing:
            raise ConfigurationError(
                f"{where}: unknown fields {sorted(unknown)}, missing fields {sorted(missing)}"
            )
        self.where = where
        self.value = value

    def _wrong(self, name: str, what: str) -> ConfigurationError:
        return ConfigurationError(f"{self.where}: {name!r} must be {what}")

    def choice(self, name: str, options: Collection[T], what: str) -> T:
        """The option the field names (`what` says which there are)."""
        found = self.value[name]
        if found in options:
            return next(option for option in options if option == found)
        raise self._wrong(name, what)

    def flag(self, name: str) -> bool:
        found = self.value[name]
        if isinstance(found, bool):
            return found
        raise self._wrong(name, "true or false")

    def count(self, name: str, low: int) -> int:
        found = self.value[name]
        if _is_int(found) and found >= low:
            return found
        raise self._wrong(name, f"an integer >= {low}")

    def optional_count(self, name: str, low: int) -> int | None:
        """A count, or None (null) where the provider has no such limit."""
        return None if self.value[name] is None else self.count(name, low)

    def rate(self, name: str) -> float:
        found = self.value[name]
        if _is_rate(found):
            return float(found)
        raise self._wrong(name, "a non-negative number")

    def text(self, name: str) -> str:
        found = self.value[name]
        if _is_text(found):
            return found
        raise self._wrong(name, "a non-empty string")

    def note(self, name: str = "note") -> str:
        found = self.value.get(name, "")
        if isinstance(found, str):
            return found
        raise self._wrong(name, "a string")

    def optional_seconds(self, name: str) -> float | None:
        """A positive number of seconds, or None where the field is absent or null."""
        found = self.value.get(name)
        if found is None:
            return None
        if _is_rate(found) and found > 0:
            return float(found)
        raise self._wrong(name, "a positive number of seconds or null")

    def table(self, name: str) -> Mapping[str, object]:
        found = self.value[name]
        if isinstance(found, dict) and found:
            return found
        raise self._wrong(name, "a non-empty object")


def _profile(key: str, provider: str, value: Mapping[str, object]) -> CacheProfile:
    where = f"profile entry {key!r}"
    read = _Fields(where, value)
    mode = read.choice("mode", MODES, f"one of {MODES}")
    matching = read.choice("matching", MATCHINGS, f"one of {MATCHINGS}")
    persists_common_prefix = read.flag("persists_common_prefix")
    writes_billed = read.flag("writes_billed")
    prewarm = read.flag("prewarm") if "prewarm" in value else False
    needs_key = read.flag("needs_cache_key") if "needs_cache_key" in value else False
    read_multiplier = read.rate("read_multiplier")
    source, as_of_text = read.text("source"), read.text("as_of")
    note = read.note()
    try:
        as_of = date.fromisoformat(as_of_text)
    except ValueError as exc:
        raise ConfigurationError(f"{where}: 'as_of' must be a YYYY-MM-DD date") from exc
    retentions, default_ttl = _retentions(read)
    if not writes_billed and any(r.write_multiplier != 1.0 for r in retentions):
        raise ConfigurationError(f"{where}: unbilled writes need write_multiplier 1.0")
    profile = CacheProfile(
        model="",
        provider=provider,
        entry=key,
        mode=mode,
        matching=matching,
        persists_common_prefix=persists_common_prefix,
        context_window=read.count("context_window", 1),
        min_cacheable_tokens=read.count("min_cacheable_tokens", 0),
        increment_tokens=read.count("increment_tokens", 1),
        max_breakpoints=read.optional_count("max_breakpoints", 1),
        lookback_blocks=read.optional_count("lookback_blocks", 1),
        writes_billed=writes_billed,
        read_multiplier=read_multiplier,
        retentions=retentions,
        ttl=default_ttl,
        source=source,
        as_of=as_of,
        note=note,
        prewarm=prewarm,
        needs_cache_key=needs_key,
        default_ttl_depends=read.note("default_ttl_depends"),
        durable_seconds=read.optional_seconds("durable_seconds"),
    )
    if mode == "explicit" and (profile.max_breakpoints is None or profile.lookback_blocks is None):
        raise ConfigurationError(f"{where}: explicit caching needs max_breakpoints and lookback")
    return profile


def _retentions(read: _Fields) -> tuple[tuple[Retention, ...], str]:
    """The retentions an entry offers (`ttls`) and the one it uses by default."""
    ttls = read.table("ttls")
    retentions = tuple(_retention(read.where, name, rule) for name, rule in ttls.items())
    return retentions, read.choice("default_ttl", ttls, "the name of one of its ttls")


def _retention(where: str, name: str, rule: object) -> Retention:
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


def _lifetime(where: str, value: object, name: str) -> float:
    if value is None:
        return math.inf
    if not _is_rate(value) or value <= 0:
        raise ConfigurationError(f"{where}: {name!r} must be positive seconds or null (never)")
    return float(value)


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_rate(value: object) -> TypeGuard[int | float]:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


def _is_text(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and bool(value.strip())
