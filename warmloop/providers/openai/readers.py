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


def chat_usage(raw: Mapping[str, object]) -> Usage:
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


def responses_usage(raw: Mapping[str, object]) -> Usage:
    """OpenAI Responses' `usage`."""
    uncached, read, write = prompt_split(
        count_at(raw, "input_tokens"),
        count_at(raw, "input_tokens_details", "cached_tokens"),
        count_at(raw, "input_tokens_details", "cache_write_tokens"),
    )
    return Usage.of_parts(uncached, read, write, count_at(raw, "output_tokens"))


def claims_chat_usage(raw: Mapping[str, object]) -> int:
    """2 for a usage object with Chat Completions' `prompt_tokens`, -1 otherwise."""
    return 2 if "prompt_tokens" in raw else -1


def claims_responses_usage(raw: Mapping[str, object]) -> int:
    """1 for a usage object with Responses' `input_tokens_details` or `total_tokens` (and
    no `prompt_tokens`, which Chat claims higher), -1 otherwise."""
    return 1 if "input_tokens_details" in raw or "total_tokens" in raw else -1


def detect_chat(body: Mapping[str, object]) -> int:
    """Any body is a Chat Completions body when no other format claims it (the shape most
    hosts speak): 0, the least claim."""
    del body
    return 0


def detect_responses(body: Mapping[str, object]) -> int:
    """2 for a Responses body (an `input` and no `messages`), -1 otherwise."""
    return 2 if "input" in body and "messages" not in body else -1


def read_verdict(
    diagnostics: Mapping[str, object] | None, compared_with: str | None = None
) -> ProviderVerdict | None:
    """Responses' `prompt_cache_diagnostics` object as a verdict (None when absent)."""
    word = diagnostics.get("type") if diagnostics else None
    if diagnostics is None or not isinstance(word, str):
        return None
    if word == "cache_miss":
        reason = diagnostics.get("reason")
        reason = reason if isinstance(reason, str) else "unknown"
        missed = missed_count(diagnostics.get("cache_missed_tokens"))
        kind = _REASONS.get(reason, UNAVAILABLE)
        return ProviderVerdict(PROVIDER, reason, kind, missed, compared_with, speaker=SPEAKER)
    kind = _TYPES.get(word, UNAVAILABLE)
    return ProviderVerdict(PROVIDER, word, kind, None, compared_with, speaker=SPEAKER)


def written_ttl(body: Mapping[str, object], found: Pieces) -> str | None:
    """The TTL a logged body writes for: `prompt_cache_options.ttl` (GPT-5.6 and later),
    else `prompt_cache_retention`; None: the model's default."""
    del found
    options = body.get("prompt_cache_options")
    if isinstance(options, Mapping) and isinstance(options.get("ttl"), str):
        return str(options["ttl"])
    retention = body.get("prompt_cache_retention")
    return retention if isinstance(retention, str) else None


HOSTED_TOOLS = ("web_search", "file_search", "code_interpreter", "image_generation", "mcp")
"""Responses tool types OpenAI runs itself ("Tools": web search, file search, code
interpreter, image generation, remote MCP), their results billed as the request's input;
`web_search` covers `web_search_preview` and the dated variants. A `function` or `custom`
tool, local shell and computer use run on the client: their results come in the next
request, as its text."""


def server_tools(tools: object) -> bool:
    """Whether a Responses request's tools include one OpenAI runs (`HOSTED_TOOLS`)."""
    return isinstance(tools, list) and any(
        isinstance(tool, Mapping)
        and isinstance(tool.get("type"), str)
        and str(tool["type"]).startswith(HOSTED_TOOLS)
        for tool in tools
    )
