"""Checking a provider's own options: each provider's folder has one `TypedDict` per
provider, the keyword options its model class takes (`resolve_model(name, **options)`), most
built on `CommonOptions`.

Write them as a typed dict and an editor completes them and `mypy --strict` checks them:
`options: AnthropicOptions = {"cache_ttl": "1h"}; resolve_model("anthropic:...", **options)`
(`from warmloop.providers.anthropic.options import AnthropicOptions`).
`resolve_model` checks every value against its provider's dict (`check_options`), so a
value of the wrong type, from Python or from the CLI's `--option KEY=VALUE`, is a
ConfigurationError naming the option before the model is made. A record names its dict
(`ProviderRecord.options`); nothing here imports an SDK (`client` is any client).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pydantic
from typing_extensions import TypedDict

from warmloop.errors import ConfigurationError


class CommonOptions(TypedDict, total=False):
    """The options every SDK provider's model takes."""

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
