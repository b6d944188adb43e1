"""Each wire format's usage object read as warmloop's `Usage`, one reader per format.

A format's record holds its reader (`WireFormat.read_usage`), so a request whose format is
known (the audit's logged path, a model's own wire) is read by that format's rules alone.
Counts are loosely typed JSON: a missing, negative, non-integer or absurd count is 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from warmloop.facts.usage import Usage, prompt_split

MAX_COUNT = 10**12
"""More tokens than any request has held: a larger count in a log is damage, read as none
(10^400 would overflow every price computed from it)."""


def count_at(raw: Mapping[str, Any], *path: str) -> int:
    """The count at a key path of a usage object (0 when absent, junk or absurd)."""
    value: Any = raw
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int):
        return 0
    return value if 0 <= value <= MAX_COUNT else 0


def gemini_usage(raw: Mapping[str, Any]) -> Usage:
    """Gemini's `usageMetadata` (camelCase over REST, snake_case from the SDK)."""
    camel = "promptTokenCount" in raw
    prompt = count_at(raw, "promptTokenCount" if camel else "prompt_token_count")
    cached = count_at(raw, "cachedContentTokenCount" if camel else "cached_content_token_count")
    output = count_at(raw, "candidatesTokenCount" if camel else "candidates_token_count")
    thoughts = count_at(raw, "thoughtsTokenCount" if camel else "thoughts_token_count")
    # Tool-use prompt tokens are input too, as the provider's own parser counts them.
    tool_use = count_at(raw, "toolUsePromptTokenCount" if camel else "tool_use_prompt_token_count")
    return Usage(max(prompt - cached, 0) + tool_use, cached, 0, output + thoughts)


def chat_usage(raw: Mapping[str, Any]) -> Usage:
    """Chat Completions' `usage` (DeepSeek's hit and miss counts where it gives them)."""
    if "prompt_cache_hit_tokens" in raw:  # DeepSeek
        hit = count_at(raw, "prompt_cache_hit_tokens")
        miss = count_at(raw, "prompt_cache_miss_tokens")
        return Usage(miss, hit, 0, count_at(raw, "completion_tokens"))
    uncached, read, write = prompt_split(
        count_at(raw, "prompt_tokens"),
        count_at(raw, "prompt_tokens_details", "cached_tokens"),
        count_at(raw, "prompt_tokens_details", "cache_write_tokens"),
    )
    return Usage(uncached, read, write, count_at(raw, "completion_tokens"))


def responses_usage(raw: Mapping[str, Any]) -> Usage:
    """OpenAI Responses' `usage`."""
    uncached, read, write = prompt_split(
        count_at(raw, "input_tokens"),
        count_at(raw, "input_tokens_details", "cached_tokens"),
        count_at(raw, "input_tokens_details", "cache_write_tokens"),
    )
    return Usage(uncached, read, write, count_at(raw, "output_tokens"))


def anthropic_usage(raw: Mapping[str, Any]) -> Usage:
    """Anthropic's `usage`: `input_tokens` counts only what follows the last breakpoint."""
    written = count_at(raw, "cache_creation_input_tokens")
    return Usage(
        count_at(raw, "input_tokens"),
        count_at(raw, "cache_read_input_tokens"),
        written,
        count_at(raw, "output_tokens"),
        min(count_at(raw, "cache_creation", "ephemeral_1h_input_tokens"), written),
    )


def guessed_usage(raw: Mapping[str, Any]) -> Usage:
    """A usage object of a format not known, read by the reader its keys point to. Only
    for a request whose format was itself guessed from its shape: where the format is
    known, read with that format's `read_usage`."""
    if "promptTokenCount" in raw or "prompt_token_count" in raw:
        return gemini_usage(raw)
    if "prompt_tokens" in raw:
        return chat_usage(raw)
    if "input_tokens_details" in raw or "total_tokens" in raw:
        return responses_usage(raw)
    return anthropic_usage(raw)
