"""Model selection by a string such as `anthropic:claude-sonnet-4-5` or `local`.

Provider modules are imported lazily, so an SDK that is not installed only matters when
its provider is asked for.
"""

from __future__ import annotations

import importlib
import os

from warmloop.errors import ConfigurationError
from warmloop.providers.base import Model

# prefix -> (module, class, needs a model name: True, False, or None for optional). Each
# class takes the model name first.
_PROVIDERS: dict[str, tuple[str, str, bool | None]] = {
    "anthropic": ("warmloop.providers.anthropic", "AnthropicModel", True),
    "openai": ("warmloop.providers.openai_responses", "OpenAIResponsesModel", True),
    "openai-chat": ("warmloop.providers.openai_compatible", "OpenAIChatModel", True),
    "gemini": ("warmloop.providers.gemini", "GeminiModel", True),
    "deepseek": ("warmloop.providers.openai_compatible", "DeepSeekModel", True),
    "openai-compatible": ("warmloop.providers.openai_compatible", "OpenAICompatibleModel", True),
    "local": ("warmloop.providers.local", "LocalModel", None),
}

EXAMPLES = (
    "local, anthropic:claude-sonnet-4-5, openai:gpt-5, openai-chat:gpt-5, "
    "gemini:gemini-2.5-flash, deepseek:deepseek-chat, openai-compatible:http://host:port/v1"
)


def resolve_model(spec: str) -> Model:
    """Build the model a selection string names; a bad string is a ConfigurationError."""
    prefix, _, rest = spec.strip().partition(":")
    entry = _PROVIDERS.get(prefix)
    if entry is None:
        raise ConfigurationError(f"unknown model {spec!r}; use one of: {EXAMPLES}")
    module_name, class_name, needs_name = entry
    if needs_name and not rest:
        raise ConfigurationError(f"model {spec!r} needs a name after the colon, e.g. {EXAMPLES}")
    if needs_name is False and rest:
        raise ConfigurationError(f"model {prefix!r} takes no name; use {prefix!r} alone")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigurationError(
            f"model {prefix!r} needs an optional dependency that is not installed "
            f"({exc.name}); install it with: pip install 'warmloop[all]'"
        ) from exc
    cls = getattr(module, class_name)
    model: Model = cls(rest) if needs_name or rest else cls()
    return model


def api_key(variable: str) -> str:
    """The API key in environment variable `variable`, or a clear error naming it."""
    value = os.environ.get(variable, "").strip()
    if not value:
        raise ConfigurationError(f"no API key: set the environment variable {variable}")
    return value
