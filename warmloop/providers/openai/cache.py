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

from collections.abc import Callable, Mapping
from typing import Any

from warmloop.facts.profiles import CacheProfile, profile_table
from warmloop.messages import JsonValue
from warmloop.providers.records import FULL_REACH, Reach

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


BREAKPOINT_FIELD = "prompt_cache_breakpoint"
OPENING_ROLES = frozenset({"system", "developer"})


def opening_breakpoint(items: str, part: str) -> Callable[..., dict[str, Any] | None]:
    """The proxy's placement for one wire format whose conversation is the key `items`
    (`messages` for Chat Completions, `input` for Responses) and whose text part is `part`
    (`text`, `input_text`): `opening_marked`, for models that take breakpoints."""

    def placed(
        body: Mapping[str, Any], profile: CacheProfile | None, reach: Reach = FULL_REACH
    ) -> dict[str, Any] | None:
        if profile is None or profile.max_breakpoints is None:
            return None
        return opening_marked(body, items, part, profile.max_breakpoints, reach)

    return placed


def opening_marked(
    body: Mapping[str, Any],
    items: str,
    part: str,
    limit: int = 4,
    reach: Reach = FULL_REACH,
) -> dict[str, Any] | None:
    """An OpenAI body with the explicit breakpoint on its opening, where every session of
    an agent can read it, or None. The opening is the leading run of system and developer
    items; items without content in it (Codex's `additional_tools`, a developer item that
    lists tools) are part of it but cannot carry a marker, so the breakpoint goes on the
    last one that has content, after them. None: the opening already carries a breakpoint,
    the client's own breakpoints (counted wherever they are) fill `limit`, `reach` says the
    opening does not stay put, there is no opening, or the body is shaped otherwise. A
    string content becomes the one text part (`part`) it stands for. A Responses request
    whose opening is its `instructions` (a string, which no breakpoint can mark) goes as
    sent: moving the instructions into a message would change what the model reads."""
    messages = body.get(items)
    if not isinstance(messages, list) or not messages:
        return None
    run = 0
    while (
        run < len(messages)
        and isinstance(messages[run], Mapping)
        and messages[run].get("role") in OPENING_ROLES
    ):
        run += 1
    carrying = [i for i in range(run) if _content_of(messages[i]) is not None]
    if not carrying or _count_breakpoints(messages) >= limit:
        return None
    index = carrying[-1]
    if not reach.allows(index) or _count_breakpoints(messages[:run]):
        return None
    first = messages[index]
    content = _content_of(first)
    if isinstance(content, str):
        marked: Any = marked_text(content, part)
    else:
        assert content is not None
        marked = [*content[:-1], {**content[-1], BREAKPOINT_FIELD: dict(BREAKPOINT)}]
    return {
        **body,
        items: [*messages[:index], {**first, "content": marked}, *messages[index + 1 :]],
    }


def _content_of(item: Any) -> str | list[Any] | None:
    """An item's content when a breakpoint can go on it (a non-empty string or list of
    parts), else None."""
    content = item.get("content") if isinstance(item, Mapping) else None
    if isinstance(content, str) and content:
        return content
    if _block_list(content) and content:
        return list(content)
    return None


def _count_breakpoints(value: Any) -> int:
    """The explicit breakpoints in `value`, at any depth."""
    count = 0
    stack = [value]
    while stack:
        found = stack.pop()
        if isinstance(found, Mapping):
            count += BREAKPOINT_FIELD in found
            stack.extend(found.values())
        elif isinstance(found, list):
            stack.extend(found)
    return count


def _block_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(block, Mapping) for block in value)
