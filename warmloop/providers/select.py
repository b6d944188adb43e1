"""Model selection by a string such as `anthropic:claude-sonnet-4-5` or `local`.

Provider modules are imported lazily, so an SDK that is not installed only matters when
its provider is asked for.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from warmloop.errors import ConfigurationError
from warmloop.facts.model_names import split_model_name
from warmloop.keywords import described
from warmloop.providers.applied_settings import with_settings
from warmloop.providers.base import Model
from warmloop.providers.model_settings import SETTINGS, ModelSettings
from warmloop.providers.option_check import check_options
from warmloop.providers.records import load
from warmloop.providers.redact import redact_spec
from warmloop.providers.registry import find_provider, providers


def examples() -> str:
    """Every registered provider's example selection string, for error messages."""
    return ", ".join(record.example or f"{record.prefix}:NAME" for record in providers())


def options_of(cls: type) -> list[str]:
    """The keyword options a model class takes (its constructor's keyword parameters)."""
    parameters = list(inspect.signature(cls).parameters.values())[1:]  # after the name
    return [p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]


def resolve_model(
    spec: str, *, model_settings: ModelSettings | None = None, **options: Any
) -> Model:
    """Build the model a selection string names, with keyword options for its provider
    (the same names everywhere: `base_url`, `api_key`, `timeout`, `max_retries`, and the
    provider's own such as `cache_ttl`, `prompt_cache_retention`, `text_protocol`,
    `n_ctx`), sending `model_settings` with every request. A bad string, an option the
    provider does not take or a setting it does not is a ConfigurationError naming what it
    takes (and the option it most likely meant)."""
    prefix, rest = split_model_name(spec)
    record = find_provider(prefix)
    shown = redact_spec(spec)
    if record is None or not record.listed:
        raise ConfigurationError(f"unknown model {shown!r}; use one of: {examples()}")
    module_name, _, class_name = record.model.partition(":")
    needs_name = record.needs_name
    if needs_name and not rest:
        raise ConfigurationError(f"model {shown!r} needs a name after the colon, e.g. {examples()}")
    if needs_name is False and rest:
        raise ConfigurationError(f"model {prefix!r} takes no name; use {prefix!r} alone")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        extra = record.extra
        raise ConfigurationError(
            f"model {prefix!r} needs an optional dependency that is not installed "
            f"({exc.name}); install it with: pip install 'warmloop[{extra}]'"
        ) from exc
    cls = getattr(module, class_name)
    accepted = options_of(cls)
    unknown = sorted(set(options) - set(accepted))
    settings = [name for name in unknown if name in SETTINGS]
    if settings:
        given = ", ".join(f"{name!r}: {options[name]!r}" for name in settings)
        raise ConfigurationError(
            f"{', '.join(settings)} for model {prefix!r} is a model setting, not an option: "
            f"pass model_settings={{{given}}} (to resolve_model, Agent or run)"
        )
    if unknown:
        raise ConfigurationError(
            f"model {prefix!r} takes no option "
            f"{', '.join(described(name, accepted) for name in unknown)}; "
            f"its options are: {', '.join(accepted)}"
        )
    if record.options is not None:
        check_options(prefix, load(record.options), options)
    try:
        model: Model = cls(rest, **options) if needs_name or rest else cls(**options)
    except TypeError as exc:  # a value of the wrong kind, as the constructor found it
        raise ConfigurationError(f"model {prefix!r}: bad option value ({exc})") from exc
    return with_settings(model, model_settings)
