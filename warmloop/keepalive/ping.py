"""The keep-alive request: the last request's payload, byte for byte, with the smallest
answer its API allows, so the provider reads the cached prefix (and refreshes it) and
bills one read and a token or so of output.

Only the answer's size changes, and it is no part of the prompt: Anthropic's cache key is
tools, system and messages (thinking settings and `tool_choice` included, so they are
kept as sent); OpenAI and Gemini match the prompt's tokens. `check_payload` is the wire
guard's view with the answer's size left out, as the audit reads requests.

Where the answer's size goes and its least value are the wire format's record
(`providers.records.WireFormat`), as are its per-request TTLs. Where the model prepares its
cache without generating (`CacheProfile.prewarm`: OpenAI's `prompt_cache_options.prewarm`,
GPT-5.6 and later) and the format carries it (`WireFormat.prewarm`), the keep-alive asks
for no answer at all: the same prompt, marked `prewarm`, billed for its input only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from warmloop.facts.profiles import CacheProfile
from warmloop.providers.base import Rendered
from warmloop.providers.registry import find_wire_format, wire_format
from warmloop.wire.stream import WireStream, canonical_stream, without_paths


def prewarms(rendered: Rendered, profile: CacheProfile) -> bool:
    """Whether a keep-alive of `rendered` can prepare the cache without generating: the
    model takes `prewarm` (its profile) and the wire format carries it."""
    fmt = find_wire_format(rendered.wire_format)
    return profile.prewarm and fmt is not None and fmt.prewarm is not None


def answer_tokens(rendered: Rendered, profile: CacheProfile | None = None) -> int | None:
    """The answer a keep-alive of `rendered` asks for (0 where it prewarms under
    `profile`), or None for a format without one."""
    fmt = find_wire_format(rendered.wire_format)
    if fmt is None:
        return None
    if profile is not None and prewarms(rendered, profile):
        return 0
    least = fmt.least_answer
    if fmt.thinking_budget is not None:
        *parents, budget = fmt.thinking_budget
        node: object = rendered.payload
        for key in parents:
            node = node.get(key) if isinstance(node, Mapping) else None
        if isinstance(node, Mapping) and isinstance(node.get(budget), int):
            least = max(least, node[budget] + 1)
    return least


def keepalive_request(rendered: Rendered, profile: CacheProfile | None = None) -> Rendered | None:
    """`rendered` as a keep-alive: the same payload with the smallest answer (under a
    `profile` that prewarms, the same payload marked `prewarm`, its answer's size as sent),
    or None where the wire format is not known here (a local engine: nothing to keep
    alive)."""
    least = answer_tokens(rendered, profile)
    if least is None:
        return None
    fmt = wire_format(rendered.wire_format)
    if least == 0 and fmt.prewarm is not None:
        return replace(rendered, payload=fmt.prewarm(rendered.payload), keepalive=True)
    path = fmt.answer
    payload: dict[str, object] = dict(rendered.payload)
    node = payload
    for key in path[:-1]:
        child = node.get(key)
        node[key] = node = dict(child) if isinstance(child, Mapping) else {}
    node[path[-1]] = least
    return replace(rendered, payload=payload, keepalive=True)


def check_payload(rendered: Rendered) -> WireStream:
    """What the wire guard compares of a payload: its canonical stream with the answer's
    size left out (it is no part of the prompt)."""
    fmt = wire_format(rendered.wire_format)
    payload = without_paths(rendered.payload, [fmt.answer])
    return canonical_stream(payload, fmt.layout)


def per_request(wire_format_name: str, ttl: str) -> bool:
    """Whether a request in this wire format can be written for `ttl` on its own, leaving
    the prompt the same: Anthropic's `cache_control` markers (`5m`, `1h`), and OpenAI
    Responses' `prompt_cache_options.ttl` (`30m`, `12h`: GPT-5.6 and later; Chat
    Completions sells no `12h`). Elsewhere a retention is the model's, one per session
    (`prompt_cache_retention`)."""
    fmt = find_wire_format(wire_format_name)
    return fmt is not None and fmt.takes_ttl(ttl)


def with_cache_ttl(rendered: Rendered, ttl: str) -> Rendered:
    """`rendered` with what it writes kept for `ttl` where `per_request` allows it; the
    same request elsewhere. Anthropic: every cache breakpoint marked `ttl` (`1h` at 2x
    instead of 1.25x). Responses: `prompt_cache_options.ttl` (`12h` at 2.5x instead of
    1.25x on GPT-5.6). Neither is part of the canonical stream, so the guard sees the same
    prompt."""
    fmt = find_wire_format(rendered.wire_format)
    if fmt is None or fmt.write_ttl is None or not fmt.takes_ttl(ttl):
        return rendered
    return replace(rendered, payload=fmt.write_ttl(rendered.payload, ttl))
