"""What warmloop reads of an OpenAI exchange (Chat Completions and Responses), for their
records: the usage objects, Responses' cache diagnostics as a verdict, whether a body or a
usage object has each format's shape, and the TTL a body writes for.

Cache diagnostics ("Prompt cache diagnostics",
https://developers.openai.com/api/docs/guides/prompt-caching/diagnostics; Responses API,
GPT-5.6 and later; `openai` SDK 3.57 `types/responses/response.py`): the request carries
`prompt_cache_options.comparison_response_id`; the response's
`prompt_cache_diagnostics.type` is `cache_hit`, `cache_miss` (with `reason`:
`model_changed`, `prompt_cache_key_changed`, `tools_changed`, `text_format_changed`,
`reasoning_effort_changed`, `verbosity_changed`, `context_compacted`, `input_changed`,
`service_tier_changed`; and `cache_missed_tokens`), `comparison_response_not_found` or
`unavailable`. `input_changed` covers the instructions and the input alike (`PROMPT`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from warmloop.facts.usage import Usage, count_at, prompt_split
from warmloop.wire.pieces import Pieces
from warmloop.wire.verdict import (
    LOST,
    MESSAGES,
    MODEL,
    PARAMETERS,
    PROMPT,
    ROUTING,
    TOOLS,
    UNAVAILABLE,
    UNCHANGED,
    ProviderVerdict,
    missed_count,
)

PROVIDER = "openai"
SPEAKER = "OpenAI"

_TYPES = {
    "cache_hit": UNCHANGED,
    "comparison_response_not_found": LOST,
    "unavailable": UNAVAILABLE,
}
_REASONS = {
    "model_changed": MODEL,
    "prompt_cache_key_changed": ROUTING,
    "tools_changed": TOOLS,
    "text_format_changed": PARAMETERS,
    "reasoning_effort_changed": PARAMETERS,
    "verbosity_changed": PARAMETERS,
    "service_tier_changed": PARAMETERS,
    "context_compacted": MESSAGES,
    "input_changed": PROMPT,
}


def chat_usage(raw: Mapping[str, Any]) -> Usage:
    """Chat Completions' `usage` (DeepSeek's hit and miss counts where it gives them)."""
    if "prompt_cache_hit_tokens" in raw:  # DeepSeek
        hit = count_at(raw, "prompt_cache_hit_tokens")
        miss = count_at(raw, "prompt_cache_miss_tokens")
        return Usage.of_parts(miss, hit, 0, count_at(raw, "completion_tokens"))
    uncached, read, write = prompt_split(
        count_at(raw, "prompt_tokens"),
        count_at(raw, "prompt_tokens_details", "cached_tokens"),
        count_at(raw, "prompt_tokens_details", "cache_write_tokens"),
    )
    return Usage.of_parts(uncached, read, write, count_at(raw, "completion_tokens"))


def responses_usage(raw: Mapping[str, Any]) -> Usage:
    """OpenAI Responses' `usage`."""
    uncached, read, write = prompt_split(
        count_at(raw, "input_tokens"),
        count_at(raw, "input_tokens_details", "cached_tokens"),
        count_at(raw, "input_tokens_details", "cache_write_tokens"),
    )
    return Usage.of_parts(uncached, read, write, count_at(raw, "output_tokens"))


def claims_chat_usage(raw: Mapping[str, Any]) -> int:
    """2 for a usage object with Chat Completions' `prompt_tokens`, -1 otherwise."""
    return 2 if "prompt_tokens" in raw else -1


def claims_responses_usage(raw: Mapping[str, Any]) -> int:
    """1 for a usage object with Responses' `input_tokens_details` or `total_tokens` (and
    no `prompt_tokens`, which Chat claims higher), -1 otherwise."""
    return 1 if "input_tokens_details" in raw or "total_tokens" in raw else -1


def detect_chat(body: Mapping[str, Any]) -> int:
    """Any body is a Chat Completions body when no other format claims it (the shape most
    hosts speak): 0, the least claim."""
    del body
    return 0


def detect_responses(body: Mapping[str, Any]) -> int:
    """2 for a Responses body (an `input` and no `messages`), -1 otherwise."""
    return 2 if "input" in body and "messages" not in body else -1


def read_verdict(
    diagnostics: Mapping[str, Any] | None, compared_with: str | None = None
) -> ProviderVerdict | None:
    """Responses' `prompt_cache_diagnostics` object as a verdict (None when absent)."""
    if not diagnostics or not isinstance(diagnostics.get("type"), str):
        return None
    word = diagnostics["type"]
    if word == "cache_miss":
        reason = diagnostics.get("reason")
        reason = reason if isinstance(reason, str) else "unknown"
        missed = missed_count(diagnostics.get("cache_missed_tokens"))
        kind = _REASONS.get(reason, UNAVAILABLE)
        return ProviderVerdict(PROVIDER, reason, kind, missed, compared_with, speaker=SPEAKER)
    kind = _TYPES.get(word, UNAVAILABLE)
    return ProviderVerdict(PROVIDER, word, kind, None, compared_with, speaker=SPEAKER)


def written_ttl(body: Mapping[str, Any], found: Pieces) -> str | None:
    """The TTL a logged body writes for: `prompt_cache_options.ttl` (GPT-5.6 and later),
    else `prompt_cache_retention`; None: the model's default."""
    del found
    options = body.get("prompt_cache_options")
    if isinstance(options, Mapping) and isinstance(options.get("ttl"), str):
        return str(options["ttl"])
    retention = body.get("prompt_cache_retention")
    return retention if isinstance(retention, str) else None
