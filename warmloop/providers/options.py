"""Each provider's own options, typed: one `TypedDict` per provider, the keyword options its
model class takes (`resolve_model(name, **options)`).

Write them as a typed dict and an editor completes them and `mypy --strict` checks them:
`options: AnthropicOptions = {"cache_ttl": "1h"}; resolve_model("anthropic:...", **options)`.
`resolve_model` checks every value against its provider's dict (`check_options`), so a
value of the wrong type, from Python or from the CLI's `--option KEY=VALUE`, is a
ConfigurationError naming the option before the model is made. A record names its dict
(`ProviderRecord.options`); nothing here imports an SDK (`client` is any client).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import pydantic
from typing_extensions import TypedDict

from warmloop.errors import ConfigurationError
from warmloop.messages import JsonValue


class _Common(TypedDict, total=False):
    api_key: str | None
    """The API key (else the provider's key variable)."""
    client: Any
    """An SDK client built by the caller, used as given on every event loop; or a function
    that makes one, called once per event loop (docs/guides/concurrency.md)."""
    base_url: str | None
    """Send requests here instead of the provider's own endpoint."""
    timeout: float | None
    """Seconds one request may take."""
    context_window: int | None
    """The model's window in tokens, when the tables do not know it."""


class AnthropicOptions(_Common, total=False):
    """`anthropic:` (`AnthropicModel`)."""

    max_tokens: int
    cache_ttl: Literal["5m", "1h"]
    thinking: Mapping[str, JsonValue] | None
    max_retries: int | None
    diagnose: bool


class OpenAIOptions(_Common, total=False):
    """`openai:`, the Responses API (`OpenAIResponsesModel`)."""

    prompt_cache_retention: str | None
    reasoning: dict[str, JsonValue] | None
    max_retries: int | None
    diagnose: bool
    cache_key: bool | None


class ChatOptions(_Common, total=False):
    """`deepseek:` and `xai:` (Chat Completions hosts)."""

    max_retries: int
    text_protocol: bool
    params: Mapping[str, JsonValue] | None


class OpenAIChatOptions(ChatOptions, total=False):
    """`openai-chat:` (`OpenAIChatModel`)."""

    prompt_cache_retention: str | None


class OpenAICompatibleOptions(ChatOptions, total=False):
    """`openai-compatible:` (vLLM, SGLang, llama.cpp server, Ollama, gateways)."""

    cache_key: bool
    session_header: str | None
    cache_rules: str | None


class GeminiOptions(_Common, total=False):
    """`gemini:` (`GeminiModel`)."""

    max_retries: int
    retry_delay: float
    thinking_budget: int | None
    include_thoughts: bool


class LocalOptions(TypedDict, total=False):
    """`local` (`LocalModel`, in process)."""

    model_path: str | Path | None
    n_ctx: int
    max_tokens: int
    seed: int
    n_threads: int
    context_window: int | None
    openings: Any


_ADAPTERS: dict[type, pydantic.TypeAdapter[Any]] = {}


def check_options(prefix: str, typed: type, options: Mapping[str, Any]) -> None:
    """Raise a ConfigurationError naming the first option of `options` whose value is not of
    the type `typed` (a provider's options dict) gives it. Values are checked, never
    converted: the model gets them as given."""
    adapter = _ADAPTERS.get(typed)
    if adapter is None:
        adapter = _ADAPTERS[typed] = pydantic.TypeAdapter(typed)
    try:
        adapter.validate_python(dict(options), strict=True)
    except pydantic.ValidationError as exc:
        error = exc.errors()[0]
        name = str(error["loc"][0]) if error["loc"] else "?"
        kind = error["type"].partition("_")[0]
        says = _SAYS.get(kind) or error["msg"].replace("Input should be", "must be")
        raise ConfigurationError(
            f"model {prefix!r}: option {name} {says}, got {options.get(name)!r}"
        ) from None


_SAYS = {
    "bool": "must be true or false",
    "int": "must be an integer",
    "float": "must be a number",
    "string": "must be a string",
    "dict": "must be a JSON object",
    "mapping": "must be a JSON object",
}
"""What a value of the wrong kind must be, as warmloop's other messages say it."""
