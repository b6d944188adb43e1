"""Model selection by a string such as `anthropic:claude-sonnet-4-5` or `local`.

Provider modules are imported lazily, so an SDK that is not installed only matters when
its provider is asked for.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from warmloop.errors import ConfigurationError
from warmloop.providers.base import Model
from warmloop.providers.redact import redact_spec

# prefix -> (module, class, needs a model name: True, False, or None for optional). Each
# class takes the model name first.
_PROVIDERS: dict[str, tuple[str, str, bool | None]] = {
    "anthropic": ("warmloop.providers.anthropic", "AnthropicModel", True),
    "openai": ("warmloop.providers.openai_responses", "OpenAIResponsesModel", True),
    "openai-chat": ("warmloop.providers.openai_compatible", "OpenAIChatModel", True),
    "gemini": ("warmloop.providers.gemini", "GeminiModel", True),
    "deepseek": ("warmloop.providers.openai_compatible", "DeepSeekModel", True),
    "xai": ("warmloop.providers.openai_compatible", "XAIModel", True),
    "openai-compatible": ("warmloop.providers.openai_compatible", "OpenAICompatibleModel", True),
    "local": ("warmloop.providers.local", "LocalModel", None),
}
EXTRAS = {"anthropic": "anthropic", "gemini": "gemini", "local": "local"}
"""The pip extra each provider's SDK comes with (the others need only the base install)."""

EXAMPLES = (
    "local, anthropic:claude-sonnet-4-5, openai:gpt-5, openai-chat:gpt-5, "
    "gemini:gemini-2.5-flash, deepseek:deepseek-chat, xai:grok-4, "
    "openai-compatible:http://host:port/v1"
)


def options_of(cls: type) -> list[str]:
    """The keyword options a model class takes (its constructor's keyword parameters)."""
    parameters = list(inspect.signature(cls).parameters.values())[1:]  # after the name
    return [p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]


def resolve_model(spec: str, **options: Any) -> Model:
    """Build the model a selection string names, with keyword options for its provider
    (the same names everywhere: `base_url`, `api_key`, `timeout`, `max_retries`, and the
    provider's own such as `cache_ttl`, `prompt_cache_retention`, `text_protocol`,
    `n_ctx`). A bad string or an option the provider does not take is a
    ConfigurationError naming what it takes."""
    prefix, _, rest = spec.strip().partition(":")
    entry = _PROVIDERS.get(prefix)
    shown = redact_spec(spec)
    if entry is None:
        raise ConfigurationError(f"unknown model {shown!r}; use one of: {EXAMPLES}")
    module_name, class_name, needs_name = entry
    if needs_name and not rest:
        raise ConfigurationError(f"model {shown!r} needs a name after the colon, e.g. {EXAMPLES}")
    if needs_name is False and rest:
        raise ConfigurationError(f"model {prefix!r} takes no name; use {prefix!r} alone")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        extra = EXTRAS.get(prefix, "all")
        raise ConfigurationError(
            f"model {prefix!r} needs an optional dependency that is not installed "
            f"({exc.name}); install it with: pip install 'warmloop[{extra}]'"
        ) from exc
    cls = getattr(module, class_name)
    accepted = options_of(cls)
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise ConfigurationError(
            f"model {prefix!r} takes no option {', '.join(map(repr, unknown))}; "
            f"its options are: {', '.join(accepted)}"
        )
    try:
        model: Model = cls(rest, **options) if needs_name or rest else cls(**options)
    except TypeError as exc:  # a value of the wrong kind, as the constructor found it
        raise ConfigurationError(f"model {prefix!r}: bad option value ({exc})") from exc
    return model
