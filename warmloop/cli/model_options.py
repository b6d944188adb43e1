"""What `--model SPEC` is sent with: `--base-url`, `--option KEY=VALUE`, `--n-ctx` and
`--context-window` as the keyword options of `resolve_model`."""

from __future__ import annotations

import json
from typing import Any

from warmloop.errors import ConfigurationError
from warmloop.providers.local_models import DEFAULT_MODEL, MODELS
from warmloop.providers.redact import redact_spec
from warmloop.providers.registry import provider_of

LOCAL_HELP = (
    f"`local` is the embedded {MODELS[DEFAULT_MODEL].title}; other embedded models: "
    + ", ".join(f"local:{name}" for name in MODELS if name != DEFAULT_MODEL)
    + "."
)
"""What `--model` help says about the embedded models (the README names the same)."""


def model_options(
    spec: str,
    pairs: tuple[str, ...] = (),
    *,
    base_url: str | None = None,
    n_ctx: int | None = None,
    context_window: int | None = None,
) -> dict[str, Any]:
    """The keyword options for model `spec`: `--option KEY=VALUE` pairs (VALUE as JSON
    when it parses, else text), then the flags that were given. `--n-ctx` is refused for a
    model that is not local, before any model is made."""
    chosen: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip().isidentifier():
            raise ConfigurationError(f"--option {pair!r} must be KEY=VALUE, e.g. timeout=30")
        try:
            chosen[key.strip()] = json.loads(raw)
        except ValueError:
            chosen[key.strip()] = raw
    if base_url is not None:
        chosen["base_url"] = base_url
    if n_ctx is not None:
        record = provider_of(spec)
        if record is None or not record.in_process:
            raise ConfigurationError(
                f"--n-ctx applies to local models only, not {redact_spec(spec)!r}"
            )
        chosen["n_ctx"] = n_ctx
    if context_window is not None:
        chosen["context_window"] = context_window
    return chosen
