"""The keep-alive request: the last request's payload, byte for byte, with the smallest
answer its API allows, so the provider reads the cached prefix (and refreshes it) and
bills one read and a token or so of output.

Only the answer's size changes, and it is no part of the prompt: Anthropic's cache key is
tools, system and messages (thinking settings and `tool_choice` included, so they are
kept as sent); OpenAI and Gemini match the prompt's tokens. `check_payload` is the wire
guard's view with the answer's size left out, as the audit reads requests.

Minimums: Anthropic `max_tokens` 1, and above `thinking.budget_tokens` when thinking is on
(the API requires it; the thinking settings are part of the cache key, so they stay);
Chat Completions `max_completion_tokens` 1; Responses `max_output_tokens` 16 (the API's
floor); Gemini `config.max_output_tokens` 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from warmloop.providers.anthropic_cache import cache_control
from warmloop.providers.base import Rendered
from warmloop.providers.openai_cache import TTLS
from warmloop.wire.stream import (
    ANTHROPIC,
    CHAT,
    GEMINI_SDK,
    RESPONSES,
    WireLayout,
    WireStream,
    canonical_stream,
    without_paths,
)

ANSWER_LIMITS: Mapping[str, tuple[tuple[str, ...], int]] = {
    "anthropic": (("max_tokens",), 1),
    "openai-chat": (("max_completion_tokens",), 1),
    "openai-responses": (("max_output_tokens",), 16),
    "gemini": (("config", "max_output_tokens"), 1),
}
"""Per wire format: where the answer's size is set, and the least a keep-alive asks for."""
LAYOUTS: Mapping[str, WireLayout] = {
    layout.name: layout for layout in (ANTHROPIC, CHAT, RESPONSES, GEMINI_SDK)
}


def answer_tokens(rendered: Rendered) -> int | None:
    """The answer a keep-alive of `rendered` asks for, or None for a format without one."""
    found = ANSWER_LIMITS.get(rendered.wire_format)
    if found is None:
        return None
    least = found[1]
    thinking = rendered.payload.get("thinking") if rendered.wire_format == "anthropic" else None
    if isinstance(thinking, Mapping) and isinstance(thinking.get("budget_tokens"), int):
        least = max(least, thinking["budget_tokens"] + 1)
    return least


def keepalive_request(rendered: Rendered) -> Rendered | None:
    """`rendered` as a keep-alive: the same payload with the smallest answer, or None
    where the wire format is not known here (a local engine: nothing to keep alive)."""
    least = answer_tokens(rendered)
    if least is None:
        return None
    path, _ = ANSWER_LIMITS[rendered.wire_format]
    payload: dict[str, Any] = dict(rendered.payload)
    node = payload
    for key in path[:-1]:
        node[key] = node = dict(node.get(key) or {})
    node[path[-1]] = least
    return replace(rendered, payload=payload, keepalive=True)


def check_payload(rendered: Rendered) -> WireStream:
    """What the wire guard compares of a payload: its canonical stream with the answer's
    size left out (it is no part of the prompt)."""
    path, _ = ANSWER_LIMITS[rendered.wire_format]
    payload = without_paths(rendered.payload, [path])
    return canonical_stream(payload, LAYOUTS[rendered.wire_format])


def per_request(wire_format: str, ttl: str) -> bool:
    """Whether a request in `wire_format` can be written for `ttl` on its own, leaving the
    prompt the same: Anthropic's `cache_control` markers (`5m`, `1h`), and OpenAI
    Responses' `prompt_cache_options.ttl` (`30m`, `12h`: GPT-5.6 and later; Chat
    Completions sells no `12h`). Elsewhere a retention is the model's, one per session
    (`prompt_cache_retention`)."""
    if wire_format == "anthropic":
        return True
    return wire_format == "openai-responses" and ttl in TTLS


def with_cache_ttl(rendered: Rendered, ttl: str) -> Rendered:
    """`rendered` with what it writes kept for `ttl` where `per_request` allows it; the
    same request elsewhere. Anthropic: every cache breakpoint marked `ttl` (the API
    requires longer TTLs before shorter ones; `1h` is kept an hour, at 2x instead of
    1.25x). Responses: `prompt_cache_options.ttl` (`12h` at 2.5x instead of 1.25x on
    GPT-5.6). Neither is part of the canonical stream, so the guard sees the same prompt."""
    if not per_request(rendered.wire_format, ttl):
        return rendered
    if rendered.wire_format == "openai-responses":
        options = rendered.payload.get("prompt_cache_options")
        merged = {**(options if isinstance(options, Mapping) else {}), "ttl": ttl}
        return replace(rendered, payload={**rendered.payload, "prompt_cache_options": merged})
    control = cache_control(ttl)
    return replace(rendered, payload=_remark(rendered.payload, control))


def _remark(value: Any, control: Mapping[str, Any]) -> Any:
    if isinstance(value, Mapping):
        return {
            k: (dict(control) if k == "cache_control" else _remark(v, control))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_remark(v, control) for v in value]
    return value
