"""The providers and wire formats warmloop knows, registered one way for all.

The built-ins (`providers.builtin`) are registered here through `register_provider` and
`register_wire_format`, the same calls a third party makes (docs/adding-a-provider.md).
`split_model_name` is the one place a selection string is split into prefix and name.
"""

from __future__ import annotations

from collections.abc import Iterator

from warmloop.errors import ConfigurationError
from warmloop.facts.price_table import never_price
from warmloop.providers.builtin import PROVIDERS, WIRE_FORMATS
from warmloop.providers.records import ProviderRecord, WireFormat
from warmloop.wire.verdict import name_speaker

_providers: dict[str, ProviderRecord] = {}
_by_alias: dict[str, ProviderRecord] = {}
_formats: dict[str, WireFormat] = {}


def split_model_name(spec: str) -> tuple[str, str]:
    """A selection string's provider prefix and model name (`anthropic:claude-x` ->
    `("anthropic", "claude-x")`; `local` -> `("local", "")`), surrounding space removed."""
    prefix, _, name = spec.strip().partition(":")
    return prefix, name


def register_wire_format(fmt: WireFormat) -> WireFormat:
    """Add a wire format; a name already registered is a ConfigurationError."""
    if fmt.name in _formats:
        raise ConfigurationError(
            f"wire format {fmt.name!r} is already registered; give the new one its own name"
        )
    _formats[fmt.name] = fmt
    return fmt


def register_provider(record: ProviderRecord) -> ProviderRecord:
    """Add a provider; a prefix or alias already taken, or a wire format not registered
    yet, is a ConfigurationError."""
    for name in (record.prefix, *record.aliases):
        if name in _by_alias:
            raise ConfigurationError(
                f"provider prefix {name!r} is already registered; choose another prefix"
            )
        if not name or ":" in name:
            raise ConfigurationError(f"provider prefix {name!r} must be non-empty, without ':'")
    if record.wire_format is not None and record.wire_format not in _formats:
        raise ConfigurationError(
            f"provider {record.prefix!r} speaks wire format {record.wire_format!r}, which is "
            "not registered; call register_wire_format first"
        )
    _providers[record.prefix] = record
    if record.display_name:
        name_speaker(record.prefix, record.display_name)
    if not record.priced:
        never_price(record.prefix)
    for name in (record.prefix, *record.aliases):
        _by_alias[name] = record
    return record


def find_provider(prefix: str) -> ProviderRecord | None:
    """The provider a prefix (or alias) selects, or None."""
    return _by_alias.get(prefix)


def provider_record(prefix: str) -> ProviderRecord:
    """The provider a prefix (or alias) selects; an unknown one is a ConfigurationError."""
    found = _by_alias.get(prefix)
    if found is None:
        raise ConfigurationError(f"unknown provider {prefix!r}; register_provider it first")
    return found


def provider_of(spec: str) -> ProviderRecord | None:
    """The provider a selection string or model name (`anthropic:claude-x`) belongs to."""
    return find_provider(split_model_name(spec)[0])


def providers() -> Iterator[ProviderRecord]:
    """Every registered provider a selection string builds, in registration order."""
    return iter(tuple(record for record in _providers.values() if record.listed))


def find_wire_format(name: str) -> WireFormat | None:
    """The wire format of this name, or None (a local engine's prompt has none)."""
    return _formats.get(name)


def wire_format(name: str) -> WireFormat:
    """The wire format of this name; an unknown one is a ConfigurationError."""
    found = _formats.get(name)
    if found is None:
        raise ConfigurationError(f"unknown wire format {name!r}; registered: {', '.join(_formats)}")
    return found


def wire_formats() -> Iterator[WireFormat]:
    """Every registered wire format, in registration order."""
    return iter(tuple(_formats.values()))


for _fmt in WIRE_FORMATS:
    register_wire_format(_fmt)
for _record in PROVIDERS:
    register_provider(_record)
