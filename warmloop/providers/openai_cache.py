"""OpenAI's explicit prompt-cache controls (GPT-5.6 and later), from the prompt caching guide
(https://developers.openai.com/api/docs/guides/prompt-caching, "Prompt cache breakpoints"):

- the implicit breakpoint sits at the newest message and matches whole entries only, so a
  new session whose task differs reads nothing from an earlier one, however long the shared
  opening; an explicit `prompt_cache_breakpoint` on the block that ends the stable opening
  (tools and instructions) lets every session of an agent read it;
- `prompt_cache_options.ttl` sets the minimum lifetime of what a request writes: `30m` (the
  default) or `12h` (Responses only), billed at different write rates. The SDK's reference
  (openai 3.57, `PromptCacheOptions.ttl`): "the minimum lifetime applied to every implicit
  and explicit cache breakpoint written by the request": a request's writes, not its
  prompt, so the agent may choose it per request (`keepalive/request.with_cache_ttl`).

- `prompt_cache_options.prewarm` "prepares the prompt cache without generating output"
  (the SDK's reference, `PromptCacheOptions.prewarm`; it "overrides the `generate` field to
  `false`"): a keep-alive or a warm-up that reads or writes the prefix and pays for no
  answer (`with_prewarm`).

Before GPT-5.6 a longer retention costs nothing more (`prompt_cache_retention="24h"`: writes
are not billed), so a model whose table entry sells one asks for it by default
(`free_retention`), the same on every request of a session.

Which models take them comes from `facts/profiles.json` (a profile with `max_breakpoints`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from warmloop.facts.profiles import CacheProfile, profile_table
from warmloop.messages import JsonValue

BREAKPOINT: dict[str, JsonValue] = {"mode": "explicit"}
TTLS = ("30m", "12h")
"""Retentions set through `prompt_cache_options.ttl` rather than `prompt_cache_retention`."""


def with_ttl(payload: Mapping[str, Any], ttl: str) -> dict[str, Any]:
    """`payload` with `prompt_cache_options.ttl` set (`12h` at 2.5x instead of 1.25x on
    GPT-5.6), the other options kept."""
    options = payload.get("prompt_cache_options")
    merged = {**(options if isinstance(options, Mapping) else {}), "ttl": ttl}
    return {**payload, "prompt_cache_options": merged}


def with_prewarm(payload: Mapping[str, Any]) -> dict[str, Any]:
    """`payload` as a request that prepares the cache and generates nothing
    (`prompt_cache_options.prewarm`), the other options kept. Like the TTL, it is no part of
    the prompt."""
    options = payload.get("prompt_cache_options")
    merged = {**(options if isinstance(options, Mapping) else {}), "prewarm": True}
    return {**payload, "prompt_cache_options": merged}


def takes_breakpoints(profile: CacheProfile) -> bool:
    """Whether a model accepts explicit cache breakpoints (its profile has a limit)."""
    return profile.max_breakpoints is not None


def free_retention(spec: str) -> str | None:
    """The retention a model selected as `spec` asks for when its user names none: the
    longest its table entry sells where writes are not billed and it outlives the default
    (GPT-5's `24h`: an entry lives longer at no extra price). None, the provider's own
    default, where writes are billed (GPT-5.6: the longer TTL is priced per request), nothing
    longer is sold, or the table has no entry for the model (an unlisted model may refuse the
    parameter)."""
    profile, listed = profile_table().find(spec)
    if not listed or profile.writes_billed:
        return None
    longest = max(profile.retentions, key=lambda retention: retention.seconds)
    return longest.name if longest.seconds > profile.retention.seconds else None


def retention_params(profile: CacheProfile, retention: str | None) -> dict[str, JsonValue]:
    """Request parameters for a chosen retention: `prompt_cache_options.ttl` on models with
    breakpoints (`30m`, `12h`), `prompt_cache_retention` (`in_memory`, `24h`) before them."""
    if retention is None:
        return {}
    if retention in TTLS and takes_breakpoints(profile):
        return {"prompt_cache_options": {"ttl": retention}}
    return {"prompt_cache_retention": retention}


def marked_text(text: str, kind: str) -> list[JsonValue]:
    """`text` as one content block of type `kind` carrying the explicit breakpoint."""
    return [{"type": kind, "text": text, "prompt_cache_breakpoint": dict(BREAKPOINT)}]
