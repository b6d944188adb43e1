"""The providers and wire formats warmloop knows, registered one way for all.

Each built-in provider folder's `record` module registers its wire formats and providers
through `register_wire_format` and `register_provider`, the same calls a third party makes
(docs/adding-a-provider.md); the registry imports those modules by name the first time it
is asked anything (`BUILT_IN`), so nothing is loaded before a provider is needed and
nothing outside a provider's folder imports from it. A selection string is split into
prefix and name by `facts.model_names.split_model_name`, the one splitter.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterator

from warmloop.errors import ConfigurationError
from warmloop.facts.model_names import split_model_name
from warmloop.providers.records import ProviderRecord, WireFormat

BUILT_IN = (
    "warmloop.providers.local.record",
    "warmloop.providers.anthropic.record",
    "warmloop.providers.openai.record",
    "warmloop.providers.gemini.record",
    "warmloop.providers.scripted",
)
"""The built-in providers' registering modules, in the order their providers are listed."""

_providers: dict[str, ProviderRecord] = {}
_by_alias: dict[str, ProviderRecord] = {}
_formats: dict[str, WireFormat] = {}
_loaded = False
_ready = False
_loading = threading.RLock()
"""Held while the built-ins load: another thread's first lookup waits for all of them (a
proxy's first two requests arrive together), while a lookup the loading thread itself makes
from inside a record module sees what is registered so far."""


def _built_in() -> None:
    """Register the built-in providers, once (each module registers itself on import; one a
    user imported first has registered already), then check that every provider's wire
    format is registered: a registration made before this one may name a built-in's."""
    global _loaded, _ready
    if _ready:
        return
    with _loading:
        if _loaded:  # done by another thread, or this one is loading them now
            return
        _loaded = True
        for module in BUILT_IN:
            importlib.import_module(module)
        _ready = True
        for record in _providers.values():
            _check_format(record)


def _check_format(record: ProviderRecord) -> None:
    if record.wire_format is not None and record.wire_format not in _formats:
        raise ConfigurationError(
            f"provider {record.prefix!r} speaks wire format {record.wire_format!r}, which is "
            "not registered; call register_wire_format first"
        )


def _rank(record: ProviderRecord) -> int:
    """Where a provider is listed: the built-ins in `BUILT_IN`'s order, whichever module was
    imported first, then every other in the order it was registered."""
    for number, module in enumerate(BUILT_IN):
        if record.model.startswith(module.removesuffix(".record") + "."):
            return number
    return len(BUILT_IN)


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
    yet, is a ConfigurationError (once the built-ins are registered: one registered
    before them may speak a built-in format)."""
    for name in (record.prefix, *record.aliases):
        if name in _by_alias:
            raise ConfigurationError(
                f"provider prefix {name!r} is already registered; choose another prefix"
            )
        if not name or ":" in name:
            raise ConfigurationError(f"provider prefix {name!r} must be non-empty, without ':'")
    if _ready:
        _check_format(record)
    _providers[record.prefix] = record
    for name in (record.prefix, *record.aliases):
        _by_alias[name] = record
    return record


def find_provider(prefix: str) -> ProviderRecord | None:
    """The provider a prefix (or alias) selects, or None."""
    _built_in()
    return _by_alias.get(prefix)


def provider_record(prefix: str) -> ProviderRecord:
    """The provider a prefix (or alias) selects; an unknown one is a ConfigurationError."""
    _built_in()
    found = _by_alias.get(prefix)
    if found is None:
        raise ConfigurationError(f"unknown provider {prefix!r}; register_provider it first")
    return found


def provider_of(spec: str) -> ProviderRecord | None:
    """The provider a selection string or model name (`anthropic:claude-x`) belongs to."""
    return find_provider(split_model_name(spec)[0])


def providers() -> Iterator[ProviderRecord]:
    """Every registered provider a selection string builds: the built-ins in `BUILT_IN`'s
    order, then the others in registration order."""
    _built_in()
    listed = sorted((r for r in _providers.values() if r.listed), key=_rank)
    return iter(tuple(listed))


def find_wire_format(name: str) -> WireFormat | None:
    """The wire format of this name, or None (a local engine's prompt has none)."""
    _built_in()
    return _formats.get(name)


def wire_format(name: str) -> WireFormat:
    """The wire format of this name; an unknown one is a ConfigurationError."""
    _built_in()
    found = _formats.get(name)
    if found is None:
        raise ConfigurationError(f"unknown wire format {name!r}; registered: {', '.join(_formats)}")
    return found


def wire_formats() -> Iterator[WireFormat]:
    """Every registered wire format, in registration order."""
    _built_in()
    return iter(tuple(_formats.values()))
