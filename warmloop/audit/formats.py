"""Which wire format a logged request is in, its model, its routing key, its cache profile.

The format comes from the endpoint path when the log has it (`/v1/messages`,
`/chat/completions`, `/responses`, `:generateContent`), else from the body's shape. Each
format's `WireLayout` comes from `wire.stream`, with the keys that never reach the prompt
(streaming switches, output budgets, sampling, Anthropic's `diagnostics`, OpenAI's
`prompt_cache_options.comparison_response_id`) added to the keys
the canonical stream leaves out, so switching them is not reported as a bust.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from warmloop.errors import ConfigurationError
from warmloop.facts.profiles import CacheProfile, profile_for
from warmloop.wire.stream import ANTHROPIC, CHAT, GEMINI_HTTP, RESPONSES, WireLayout

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
COMPARISON = ("prompt_cache_options", "comparison_response_id")
"""OpenAI's cache-diagnostics baseline: which response to compare with, not the prompt."""

_ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking"})
_GEMINI_PATH = re.compile(r"/models/([^/:]+):(?:stream)?[gG]enerateContent")
_FAMILIES = (
    ("claude", "anthropic"),
    ("gemini", "gemini"),
    ("deepseek", "deepseek"),
    ("gpt", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("codex", "openai"),
)


@dataclass(frozen=True)
class WireFormat:
    """A wire format: its name, its layout for the audit, and the provider it belongs to."""

    name: str
    layout: WireLayout
    provider: str


def _audit_layout(layout: WireLayout) -> WireLayout:
    return replace(layout, routing=layout.routing | NOT_IN_PROMPT)


ANTHROPIC_FORMAT = WireFormat("anthropic", _audit_layout(ANTHROPIC), "anthropic")
CHAT_FORMAT = WireFormat("openai-chat", _audit_layout(CHAT), "openai")
RESPONSES_FORMAT = WireFormat(
    "openai-responses",
    replace(_audit_layout(RESPONSES), unprompted=(*RESPONSES.unprompted, COMPARISON)),
    "openai",
)
GEMINI_FORMAT = WireFormat("gemini", _audit_layout(GEMINI_HTTP), "gemini")
FORMATS = (ANTHROPIC_FORMAT, CHAT_FORMAT, RESPONSES_FORMAT, GEMINI_FORMAT)


def format_from_path(path: str) -> WireFormat | None:
    """The format an endpoint path speaks, or None for paths that are not model requests."""
    path = path.split("?", 1)[0].rstrip("/")
    if _GEMINI_PATH.search(path):
        return GEMINI_FORMAT
    if path.endswith("/chat/completions"):
        return CHAT_FORMAT
    if path.endswith("/responses"):
        return RESPONSES_FORMAT
    if path.endswith("/messages"):
        return ANTHROPIC_FORMAT
    return None


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
    """The wire format of a request body (the path decides when it names an endpoint)."""
    found = format_from_path(path) if path else None
    if found is not None:
        return found
    if "contents" in body:
        return GEMINI_FORMAT
    if "input" in body and "messages" not in body:
        return RESPONSES_FORMAT
    return ANTHROPIC_FORMAT if _looks_anthropic(body) else CHAT_FORMAT


def model_name(body: Mapping[str, Any], path: str = "") -> str:
    """The model a request asked for: the body's `model`, else the one in a Gemini path."""
    model = body.get("model")
    if isinstance(model, str) and model:
        return model.removeprefix("models/")
    found = _GEMINI_PATH.search(path)
    return found.group(1) if found else ""


def model_spec(wire: WireFormat, model: str) -> str:
    """A selection string (`anthropic:claude-sonnet-4-6`) for the model's provider; a model
    served on another provider's wire format (DeepSeek over Chat Completions) keeps its own."""
    lowered = model.lower()
    provider = next((p for prefix, p in _FAMILIES if lowered.startswith(prefix)), wire.provider)
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
