"""How a selection string names an entry of the dated tables (cache rules, prices): one rule.

`anthropic:Claude-Sonnet-4-5-20250929` is looked up as `anthropic:claude-sonnet-4-5-20250929`,
then without its dated snapshot suffix; at each key an entry first, then an alias (a name
that stands for another entry). A provider alias swaps the provider first
(`openai-chat:gpt-5` is `openai:gpt-5`, the same model on another API).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TypeVar

T = TypeVar("T")

# Snapshot ids: `claude-sonnet-4-5-20250929` (Anthropic), `gpt-5-2025-08-07` (OpenAI).
DATED_SUFFIX = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2})$")


def split_model_name(spec: str) -> tuple[str, str]:
    """A selection string's provider prefix and model name (`anthropic:claude-x` ->
    `("anthropic", "claude-x")`; `local` -> `("local", "")`), surrounding space removed:
    the one place a selection string is split."""
    prefix, _, name = spec.strip().partition(":")
    return prefix, name


def split_spec(spec: str, provider_aliases: Mapping[str, str]) -> tuple[str, str]:
    """(provider, model) of a selection string: trimmed, lower-cased, provider alias applied."""
    provider, model = split_model_name(spec.lower())
    return provider_aliases.get(provider, provider), model


def table_keys(provider: str, model: str) -> tuple[str, ...]:
    """The keys to try, in order: `provider:model`, then without a dated snapshot suffix."""
    key = f"{provider}:{model}"
    undated = DATED_SUFFIX.sub("", key)
    return (key,) if undated == key else (key, undated)


def find_entry(
    entries: Mapping[str, T], aliases: Mapping[str, str], keys: tuple[str, ...]
) -> T | None:
    """The first entry a key names, directly or through an alias; None if none does."""
    for key in keys:
        found = entries.get(key)
        if found is None and key in aliases:
            found = entries.get(aliases[key])
        if found is not None:
            return found
    return None
