"""What `--model SPEC` is sent with: `--base-url`, `--option KEY=VALUE`, `--n-ctx` and
`--context-window` as the keyword options of `resolve_model`."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import click

from warmloop.errors import ConfigurationError
from warmloop.facts.model_facts import MIN_WINDOW
from warmloop.providers.model_settings import SETTINGS
from warmloop.providers.records import load
from warmloop.providers.redact import redact_spec
from warmloop.providers.registry import provider_of, providers


def model_help() -> str:
    """What `--model` help says of the providers beyond their examples (the embedded
    models: docs/guides/models.md names the same), from their records."""
    return " ".join(record.about for record in providers() if record.about)


Command = TypeVar("Command", bound=Callable[..., Any])

_FLAGS = (
    click.option(
        "--base-url",
        metavar="URL",
        help="Send requests here instead of the provider's own endpoint (a gateway or proxy).",
    ),
    click.option(
        "--option",
        "options",
        metavar="KEY=VALUE",
        multiple=True,
        help="A model option, e.g. timeout=30, cache_ttl=1h, text_protocol=true, n_ctx=16384, "
        "or a model setting, e.g. temperature=0.2, max_tokens=2000, thinking_budget=1024 "
        "(VALUE is read as JSON when it is JSON, else as text). Repeatable.",
    ),
    click.option(
        "--n-ctx",
        type=click.IntRange(min=512),
        help="Context window of a local model, in tokens [default: the one --model's help names].",
    ),
    click.option(
        "--context-window",
        type=click.IntRange(min=MIN_WINDOW),
        metavar="TOKENS",
        help="The model's context window, when neither the tables nor the server say it "
        "(a self-hosted server is asked; an unknown window is never acted on).",
    ),
)


def model_option_flags(command: Command) -> Command:
    """`--base-url`, `--option`, `--n-ctx` and `--context-window`, declared once for every
    verb that makes a model (`run`, `resume`)."""
    for flag in reversed(_FLAGS):
        command = flag(command)
    return command


def model_options(
    spec: str,
    pairs: tuple[str, ...] = (),
    *,
    base_url: str | None = None,
    n_ctx: int | None = None,
    context_window: int | None = None,
) -> dict[str, Any]:
    """The keyword options for model `spec`: `--option KEY=VALUE` pairs (VALUE as JSON
    when it parses, else text; a `ModelSettings` name the provider has no option of goes
    into `model_settings`), then the flags that were given. `--n-ctx` is refused for a
    model that is not local, before any model is made."""
    chosen: dict[str, Any] = {}
    own = provider_options(spec)
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip().isidentifier():
            raise ConfigurationError(f"--option {pair!r} must be KEY=VALUE, e.g. timeout=30")
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        if key.strip() in SETTINGS and key.strip() not in own:  # checked as model_settings=
            chosen.setdefault("model_settings", {})[key.strip()] = value
        else:
            chosen[key.strip()] = value
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


def provider_options(spec: str) -> frozenset[str]:
    """The names of the keyword options the provider of `spec` takes (its typed options;
    none for an unknown provider, whose error `resolve_model` gives)."""
    record = provider_of(spec)
    if record is None or record.options is None:
        return frozenset()
    return frozenset(load(record.options).__annotations__)
