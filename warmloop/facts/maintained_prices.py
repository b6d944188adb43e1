"""Prices from the maintained `genai-prices` package, in the price table's entry format.

`prices.json` names the models it takes from genai-prices (its `genai_prices` section:
table key -> the package's model id) and how the package's fields map to the retentions
warmloop bills (`cache_write_mtok` is Anthropic's 5-minute write, OpenAI's 30-minute one).
The table itself keeps only what the package lacks (a 12-hour write, a long-context tier),
each with its source and date, or an entry marked `overrides` with the documented reason
where the provider's page disagrees with the package.

A price that depends on the time of day (DeepSeek's peak hours) is taken at its dearest,
so an estimate is an upper bound; one that changes on a date is the one in effect on `day`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, date, datetime, time
from decimal import Decimal
from importlib.metadata import version
from typing import TYPE_CHECKING, NotRequired, TypedDict

from warmloop.errors import ConfigurationError
from warmloop.facts.model_names import split_model_name
from warmloop.facts.table_file import string_map

if TYPE_CHECKING:
    # Imported where used: reading the package's data takes a few hundred milliseconds,
    # which only a lookup of a price should pay, not every `import warmloop`.
    from genai_prices.types import ModelInfo, ModelPrice, TieredPrices

PACKAGE = "genai-prices"
SOURCE = "https://github.com/pydantic/genai-prices"
_SECTION_KEYS = frozenset({"about", "as_of", "provider_ids", "write_retentions", "models"})
# The package's fields warmloop reads; others (audio, web searches) are not modelled.
_RATE_FIELDS = {"input": "input_mtok", "cache_read": "cache_read_mtok", "output": "output_mtok"}
_WRITE_FIELDS = ("cache_write_mtok", "cache_write_1h_mtok")


class TierEntry(TypedDict):
    """A long-context tier in the `prices.json` entry format: the prompt size it applies
    above and its rates (USD per million tokens; `cache_write` by retention)."""

    above_prompt_tokens: int
    input: float
    cache_read: float
    output: float
    cache_write: NotRequired[dict[str, float]]


class PriceEntry(TypedDict):
    """A table entry in the `prices.json` format, as the package's prices make one."""

    input: float
    cache_read: float
    output: float
    cache_write: NotRequired[dict[str, float]]
    long_context: NotRequired[TierEntry]
    source: str
    as_of: str
    note: NotRequired[str]


def with_maintained(table: object, day: date) -> dict[str, object]:
    """The shipped table (`prices.json`, parsed) with its `genai_prices` section resolved:
    each model it names gets the package's rates plus the table's own additions, or the
    table's entry alone where that entry `overrides` the package (with its reason)."""
    if not isinstance(table, dict) or not isinstance(table.get("models", {}), dict):
        raise ConfigurationError("prices.json needs a top-level object with a 'models' object")
    section = table.get("genai_prices", {})
    if not isinstance(section, dict):
        raise ConfigurationError(f"prices.json: {PACKAGE!r} must be an object")
    models: dict[str, object] = dict(table.get("models", {}))
    for key, derived in maintained_entries(section, day).items():
        own = models.get(key)
        if own is None:
            models[key] = derived
        elif not isinstance(own, dict):
            raise ConfigurationError(f"price table, entry {key!r}: must be an object")
        elif "overrides" in own:
            if not isinstance(own["overrides"], str) or not own["overrides"].strip():
                raise ConfigurationError(f"price table entry {key!r}: 'overrides' needs a reason")
            models[key] = {k: v for k, v in own.items() if k != "overrides"}
        else:
            models[key] = _supplemented(derived, own, key)
    return {k: v for k, v in table.items() if k != "genai_prices"} | {"models": models}


def _supplemented(derived: PriceEntry, own: Mapping[str, object], key: str) -> dict[str, object]:
    """`derived` with what the table adds: write retentions, a long-context tier, a note."""
    where = f"price table entry {key!r}"
    extra = sorted(set(own) - {"cache_write", "long_context", "source", "as_of", "note"})
    if extra:
        raise ConfigurationError(
            f"{where}: {PACKAGE} has this model, so the table may only add what it lacks "
            f"(cache_write retentions, long_context), not {extra[0]!r}; or mark the entry "
            "'overrides' with the documented reason"
        )
    source, as_of = own.get("source"), own.get("as_of")
    if not isinstance(source, str) or not isinstance(as_of, str):
        raise ConfigurationError(f"{where}: needs its own 'source' and 'as_of' strings")
    merged: dict[str, object] = dict(derived)
    for field in ("cache_write", "long_context"):
        if field not in own:
            continue
        if field == "long_context" and "long_context" in derived:
            tier = own["long_context"]
            if not isinstance(tier, dict) or set(tier) != {"cache_write"}:
                raise ConfigurationError(f"{where}: {PACKAGE} has its long-context tier")
            theirs = derived["long_context"]
            merged["long_context"] = {
                **theirs,
                "cache_write": _added(theirs.get("cache_write"), tier, where),
            }
        elif field == "cache_write":
            merged["cache_write"] = _added(derived.get("cache_write"), own, where)
        else:
            merged["long_context"] = own["long_context"]
    merged["source"] = f"{derived['source']}; the rest: {source}"
    # The older of the two checks dates the entry as a whole.
    merged["as_of"] = min(derived["as_of"], as_of)
    if "note" in own:
        merged["note"] = own["note"]
    return merged


def _added(theirs: Mapping[str, float] | None, own: Mapping[str, object], where: str) -> object:
    """The table's cache-write retentions added to the package's (a clash is refused)."""
    ours = own["cache_write"]
    if not isinstance(ours, dict):
        return ours  # the entry parser names the mistake
    clash = sorted(set(ours) & set(theirs or {}))
    if clash:
        raise ConfigurationError(
            f"{where}: {PACKAGE} already prices the {clash[0]!r} cache write; remove it "
            "from the table or mark the entry 'overrides' with the documented reason"
        )
    return dict(theirs or {}) | ours


def maintained_entries(section: Mapping[str, object], day: date) -> dict[str, PriceEntry]:
    """Table entries (`prices.json` format) for the models `section` takes from the
    package, with the prices in effect on `day`."""
    where = f"prices.json {PACKAGE!r} section"
    unknown = sorted(set(section) - _SECTION_KEYS)
    if unknown:
        raise ConfigurationError(f"{where}: unknown field {unknown[0]!r}")
    as_of = section.get("as_of")
    if not isinstance(as_of, str):
        raise ConfigurationError(f"{where}: needs the 'as_of' date its figures were checked on")
    provider_ids = string_map(section.get("provider_ids", {}), f"{where}: 'provider_ids'")
    retentions = _write_retentions(section.get("write_retentions", {}), where)
    source = f"{SOURCE} ({PACKAGE} {version(PACKAGE)}"
    entries: dict[str, PriceEntry] = {}
    for key, model_id in string_map(section.get("models", {}), f"{where}: 'models'").items():
        provider = split_model_name(key)[0]
        model = _model(provider_ids.get(provider, provider), model_id, key)
        dated = (f"{source}, {model_id})", as_of)
        entry = _entry(_prices_on(model, day), retentions.get(provider, {}), key, dated)
        if model.price_comments:
            entry["note"] = model.price_comments
        entries[key] = entry
    return entries


def matched_entry(
    section: Mapping[str, object], provider: str, model: str, day: date
) -> PriceEntry | None:
    """A table entry for a model the table does not list, where the package prices it by
    its own matching rules (a dated snapshot, `-latest`, a version suffix: `gpt-4o-2024-08-06`
    is its `gpt-4o`); None where the package has no such model, or the provider is not one
    whose cache writes the section maps (`write_retentions`), or not one it names at all.
    The table's own entries come first (`PriceTable.lookup`): where the two disagree, the
    provider's page, which the table follows, wins."""
    import genai_prices.data_snapshot as snapshot

    where = f"prices.json {PACKAGE!r} section"
    provider_ids = string_map(section.get("provider_ids", {}), f"{where}: 'provider_ids'")
    retentions = _write_retentions(section.get("write_retentions", {}), where)
    names = string_map(section.get("models", {}), f"{where}: 'models'")
    if not any(split_model_name(key)[0] == provider for key in names):
        return None  # a provider the section takes nothing from (its ids are another's)
    try:
        _, found = snapshot.get_snapshot().find_provider_model(
            model, None, provider_ids.get(provider, provider), None
        )
    except LookupError:
        return None
    source = f"{SOURCE} ({PACKAGE} {version(PACKAGE)}, {found.id}, matched from {model!r})"
    try:
        entry = _entry(
            _prices_on(found, day),
            retentions.get(provider, {}),
            f"{provider}:{model}",
            (source, str(section.get("as_of", day.isoformat()))),
        )
    except ConfigurationError:
        return None  # a shape warmloop does not read (several tiers): no price, not a guess
    entry["note"] = (
        f"Not in warmloop's table: {PACKAGE} prices {model!r} as its {found.id!r}. "
        + (found.price_comments or "")
    ).strip()
    return entry


def _write_retentions(value: object, where: str) -> dict[str, dict[str, str]]:
    """Per provider, the retention each of the package's cache-write fields sells."""
    if not isinstance(value, dict):
        raise ConfigurationError(f"{where}: 'write_retentions' must be an object per provider")
    return {
        provider: string_map(names, f"{where}: 'write_retentions' of {provider!r}")
        for provider, names in value.items()
    }


def _model(provider_id: str, model_id: str, key: str) -> ModelInfo:
    import genai_prices.data_snapshot as snapshot

    try:
        _, model = snapshot.get_snapshot().find_provider_model(model_id, None, provider_id, None)
    except LookupError as exc:
        raise ConfigurationError(
            f"price table entry {key!r}: {PACKAGE} {version(PACKAGE)} has no model "
            f"{provider_id}/{model_id} ({exc}); install the version warmloop names in its "
            "dependencies, or give the entry its own rates in prices.json"
        ) from exc
    return model


def _prices_on(model: ModelInfo, day: date) -> ModelPrice:
    """The package's prices on `day`, at the dearest hour when they vary with the hour."""
    from genai_prices.types import ModelPrice, TimeOfDateConstraint

    hours = {time(0, 0)}
    if not isinstance(model.prices, ModelPrice):
        hours |= {
            c.constraint.start_time.replace(tzinfo=None)
            for c in model.prices
            if isinstance(c.constraint, TimeOfDateConstraint)
        }
    candidates = [model.get_prices(datetime.combine(day, hour, UTC)) for hour in sorted(hours)]
    return max(candidates, key=lambda p: _base(p.input_mtok) or Decimal(0))


def _entry(
    price: ModelPrice, retentions: Mapping[str, str], key: str, dated: tuple[str, str]
) -> PriceEntry:
    """The package's `price` as a table entry (`dated`: its source and as_of)."""
    fields = {name: getattr(price, field) for name, field in _RATE_FIELDS.items()}
    writes = {}
    for field in _WRITE_FIELDS:
        value = getattr(price, field)
        if value is None:
            continue
        if field not in retentions:
            raise ConfigurationError(
                f"price table entry {key!r}: {PACKAGE} bills {field}, which prices.json's "
                "write_retentions does not name; add the retention it sells"
            )
        writes[retentions[field]] = value
    missing = [name for name, value in fields.items() if value is None]
    if missing:
        raise ConfigurationError(f"price table entry {key!r}: {PACKAGE} has no {missing[0]} rate")
    tiered = {t.tiers[0].start for t in [*fields.values(), *writes.values()] if _is_tiered(t)}
    if len(tiered) > 1:
        raise ConfigurationError(f"price table entry {key!r}: {PACKAGE} has several tier starts")
    base = {name: _float(_base(v)) for name, v in fields.items()}
    entry = PriceEntry(
        input=base["input"],
        cache_read=base["cache_read"],
        output=base["output"],
        source=dated[0],
        as_of=dated[1],
    )
    if writes:
        entry["cache_write"] = {r: _float(_base(v)) for r, v in writes.items()}
    if tiered:
        top = {name: _float(_top(v)) for name, v in fields.items()}
        tier = TierEntry(
            above_prompt_tokens=tiered.pop(),
            input=top["input"],
            cache_read=top["cache_read"],
            output=top["output"],
        )
        if writes:
            tier["cache_write"] = {r: _float(_top(v)) for r, v in writes.items()}
        entry["long_context"] = tier
    return entry


def _is_tiered(value: Decimal | TieredPrices | None) -> bool:
    from genai_prices.types import TieredPrices

    if isinstance(value, TieredPrices) and len(value.tiers) > 1:
        raise ConfigurationError(f"{PACKAGE} has more than one price tier; warmloop reads one")
    return isinstance(value, TieredPrices) and bool(value.tiers)


def _base(value: Decimal | TieredPrices | None) -> Decimal | None:
    return value if value is None or isinstance(value, Decimal) else value.base


def _top(value: Decimal | TieredPrices | None) -> Decimal | None:
    if value is None or isinstance(value, Decimal):
        return value
    return value.tiers[0].price if value.tiers else value.base


def _float(value: Decimal | None) -> float:
    return float(value or 0)
