"""Which wire format a logged request is in, its model, its routing key, its cache profile.

The format comes from the endpoint path when the log has it (each registered wire format's
`endpoint`: `/v1/messages`, `/chat/completions`, `/responses`, `:generateContent`), else
from the body's shape. Each format's logged layout (`logged_layout`) is read with the keys
that never reach the prompt (streaming switches, output budgets, sampling, Anthropic's
`diagnostics`, OpenAI's `prompt_cache_options.comparison_response_id`) added to the keys
the canonical stream leaves out, so switching them is not reported as a bust.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from functools import cache
from typing import Any

from warmloop.errors import ConfigurationError
from warmloop.facts.profiles import CacheProfile, profile_for
from warmloop.providers.records import WireFormat
from warmloop.providers.registry import providers, wire_format, wire_formats
from warmloop.wire.stream import ANTHROPIC, CHAT, GEMINI_SDK, RESPONSES, WireLayout

NOT_IN_PROMPT = frozenset(
    {
        "stream",
        "stream_options",
        "diagnostics",
        "max_tokens",
        "max_completion_tokens",
        "max_output_tokens",
        "temperature",
        "top_p",
        "top_k",
        "n",
        "seed",
        "stop",
        "stop_sequences",
        "store",
        "service_tier",
        "background",
        "include",
        "prompt_cache_retention",
        "logprobs",
        "top_logprobs",
    }
)
"""Request keys that choose how a reply is sampled or delivered, not what the prompt is."""

_ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking"})


@cache
def logged_layout(wire: WireFormat) -> WireLayout:
    """How the audit reads a logged body of this format: its HTTP layout, with the keys
    that are no part of the prompt added to the ones the canonical stream leaves out."""
    layout = wire.logged_layout or wire.layout
    return replace(
        layout,
        routing=layout.routing | NOT_IN_PROMPT,
        unprompted=(*layout.unprompted, *wire.logged_unprompted),
    )


def format_from_path(path: str) -> WireFormat | None:
    """The format an endpoint path speaks, or None for paths that are not model requests."""
    path = path.split("?", 1)[0].rstrip("/")
    return next((fmt for fmt in wire_formats() if fmt.endpoint_match(path)), None)


def _looks_anthropic(body: Mapping[str, Any]) -> bool:
    """Anthropic's shape: a top-level system, Anthropic-only content blocks, else a Claude
    model; any Chat-only trait (a system, developer or tool role, tool_calls) rules it out."""
    anthropic_blocks = "system" in body
    for message in body.get("messages") or ():
        if not isinstance(message, dict):
            continue
        if message.get("role") in {"system", "developer", "tool"} or "tool_calls" in message:
            return False
        content = message.get("content")
        if isinstance(content, list) and any(
            isinstance(block, dict) and block.get("type") in _ANTHROPIC_BLOCKS for block in content
        ):
            anthropic_blocks = True
    model = body.get("model")
    return anthropic_blocks or (isinstance(model, str) and "claude" in model.lower())


def detect_format(body: Mapping[str, Any], path: str = "") -> WireFormat:
    """The wire format of a request body (the path decides when it names an endpoint).
    Without such a path the format is truly unknown and is guessed from the body's shape:
    the guess is this function's alone, and only such a request's usage is read by its
    keys (`responses.normalise_usage`)."""
    found = format_from_path(path) if path else None
    if found is not None:
        return found
    if "contents" in body:
        return wire_format(GEMINI_SDK.name)
    if "input" in body and "messages" not in body:
        return wire_format(RESPONSES.name)
    return wire_format(ANTHROPIC.name if _looks_anthropic(body) else CHAT.name)


def model_name(body: Mapping[str, Any], path: str = "") -> str:
    """The model a request asked for: the body's `model`, else the one in a Gemini path."""
    model = body.get("model")
    if isinstance(model, str) and model:
        return model.removeprefix("models/")
    path = path.split("?", 1)[0].rstrip("/")
    for fmt in wire_formats():
        found = fmt.endpoint_match(path)
        if found is not None and found.groups() and found.group(1):
            return found.group(1)
    return ""


def model_spec(wire: WireFormat, model: str) -> str:
    """A selection string (`anthropic:claude-sonnet-4-6`) for the model's provider; a model
    served on another provider's wire format (DeepSeek over Chat Completions) keeps its own."""
    lowered = model.lower()
    provider = next(
        (p.prefix for p in providers() if any(map(lowered.startswith, p.families))),
        wire.provider,
    )
    return f"{provider}:{model}" if model else f"{provider}:"


def own_profile(wire: WireFormat, model: str) -> CacheProfile:
    """The cache profile of the model a log used (the provider's defaults when unknown)."""
    try:
        return profile_for(model_spec(wire, model))
    except ConfigurationError:
        return profile_for(f"{wire.provider}:")


def routing_key(body: Mapping[str, Any]) -> str | None:
    """The key a client used to keep a conversation together (`prompt_cache_key`,
    Anthropic's `metadata.user_id`, OpenAI's `user`), or None."""
    for key in ("prompt_cache_key", "user", "safety_identifier"):
        value = body.get(key)
        if isinstance(value, str) and value:
            return f"{key}={value}"
    metadata = body.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("user_id"), str):
        return f"metadata.user_id={metadata['user_id']}"
    return None
