"""Anthropic prompt-cache breakpoints: where they go, and the rule a warm session must keep.

Anthropic caches only at explicit `cache_control` breakpoints (at most 4 per request), and a
breakpoint finds an earlier write only by looking back a limited number of content blocks
("the system checks at most 20 blocks before each explicit breakpoint for a cache hit",
Prompt caching > Cache limitations / lookback). Blocks are counted in prompt order: tool
definitions, system blocks, then every message's content blocks.

The placement keeps every request reading the previous one's cache however many blocks a
step adds (parallel tool calls add two per call): one breakpoint after the tools, one after
the system prompt, one on the last block of the newest turn (this request's write) and one
on the last block of the user turn the previous request ended with (exactly where the
previous request wrote, so its read is found at distance zero).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from warmloop.errors import ConfigurationError
from warmloop.messages import JsonValue

MAX_BREAKPOINTS = 4
LOOKBACK_BLOCKS = 20
CacheTTL = Literal["5m", "1h"]
CACHE_TTLS: tuple[CacheTTL, ...] = ("5m", "1h")


def cache_control(ttl: str) -> dict[str, JsonValue]:
    """The `cache_control` marker for a TTL (`5m` is the API default and is left implicit)."""
    if ttl not in CACHE_TTLS:
        raise ConfigurationError(f"cache_ttl must be '5m' or '1h', got {ttl!r}")
    return {"type": "ephemeral"} if ttl == "5m" else {"type": "ephemeral", "ttl": "1h"}


def _mark_last(blocks: Sequence[Any], control: Mapping[str, JsonValue]) -> list[Any]:
    """A copy of `blocks` whose last block carries the marker (the original is untouched)."""
    *head, last = blocks
    return [*head, {**last, "cache_control": dict(control)}]


def message_breakpoints(messages: Sequence[Mapping[str, Any]]) -> list[int]:
    """Indices of the messages to mark: the user turn the previous request ended with (the
    one just before the newest assistant turn) and the newest turn, when it is a user turn.

    Assistant turns are never marked: their last block may be a thinking block, which cannot
    carry `cache_control`.
    """
    chosen: list[int] = []
    last_assistant = next(
        (i for i in range(len(messages) - 1, -1, -1) if messages[i]["role"] == "assistant"), -1
    )
    if last_assistant > 0 and messages[last_assistant - 1]["role"] == "user":
        chosen.append(last_assistant - 1)
    if messages and messages[-1]["role"] == "user" and len(messages) - 1 not in chosen:
        chosen.append(len(messages) - 1)
    return chosen


def place_breakpoints(
    payload: Mapping[str, Any], control: Mapping[str, JsonValue]
) -> dict[str, Any]:
    """A copy of an unmarked request with its (at most 4) breakpoints placed.

    Only the containers on the way to a marked block are copied, so the memoised wire
    messages a renderer keeps are never changed.
    """
    out = dict(payload)
    for key in ("tools", "system"):
        if payload.get(key):
            out[key] = _mark_last(payload[key], control)
    messages = list(payload.get("messages", ()))
    for index in message_breakpoints(messages):
        if messages[index]["content"]:
            marked = _mark_last(messages[index]["content"], control)
            messages[index] = {**messages[index], "content": marked}
    out["messages"] = messages
    return out


def _blocks(payload: Mapping[str, Any]) -> list[Any]:
    """Every cacheable block of a request body, in prompt order (a string counts as one)."""
    found: list[Any] = list(payload.get("tools") or ())
    system = payload.get("system")
    if isinstance(system, str):
        found.append(system)
    elif system:
        found.extend(system)
    for message in payload.get("messages", ()):
        content = message["content"]
        if isinstance(content, str):
            found.append(content)
        else:
            found.extend(content)
    return found


def breakpoint_positions(payload: Mapping[str, Any]) -> list[int]:
    """Positions (0-based, in prompt order) of the blocks that carry `cache_control`."""
    return [
        i
        for i, block in enumerate(_blocks(payload))
        if isinstance(block, Mapping) and "cache_control" in block
    ]


def reads_write(write: int, breakpoints: Sequence[int]) -> bool:
    """Whether some breakpoint finds a cache entry written at block `write`.

    A breakpoint at block `b` looks at `b` and the blocks before it, at most
    `LOOKBACK_BLOCKS` positions in all (the stricter reading of "at most 20 blocks before
    each explicit breakpoint"): found iff `0 <= b - write < LOOKBACK_BLOCKS`.
    """
    return any(0 <= b - write < LOOKBACK_BLOCKS for b in breakpoints)


def with_ttl(payload: Mapping[str, Any], ttl: str) -> dict[str, Any]:
    """`payload` with every cache breakpoint marked `ttl` (the API requires longer TTLs
    before shorter ones; `1h` is kept an hour, at 2x instead of 1.25x)."""
    remarked: dict[str, Any] = _remark(payload, cache_control(ttl))
    return remarked


def _remark(value: Any, control: Mapping[str, Any]) -> Any:
    if isinstance(value, Mapping):
        return {
            k: (dict(control) if k == "cache_control" else _remark(v, control))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_remark(v, control) for v in value]
    return value


def placed_where_none(body: Mapping[str, Any], profile: object = None) -> dict[str, Any] | None:
    """A client's Messages body with warmloop's breakpoints placed (`place_breakpoints`,
    5-minute markers), or None: it carries markers of its own (the client placed them), or
    it is not shaped as the API takes it (the upstream answers that with its own error). A
    string `system` or a string message content that gets a marker becomes the one text
    block it stands for (the API's documented equivalent); what was only rewritten as
    blocks and got no marker goes as the client sent it. Every Claude model takes them, so
    the model's profile is not asked."""
    del profile
    if not _messages_shaped(body) or "cache_control" in body or breakpoint_positions(body):
        return None
    out = dict(body)
    system = body.get("system")
    if isinstance(system, str):
        if system:
            out["system"] = [{"type": "text", "text": system}]
        else:
            del out["system"]
    messages = list(body["messages"])
    for index in message_breakpoints(messages):
        content = messages[index]["content"]
        if isinstance(content, str):
            blocks = [{"type": "text", "text": content}] if content else []
            messages[index] = {**messages[index], "content": blocks}
    out["messages"] = messages
    placed = place_breakpoints(out, cache_control("5m"))
    if isinstance(system, str) and not system:
        placed["system"] = system
    for index in message_breakpoints(messages):
        if placed["messages"][index]["content"] == []:
            placed["messages"][index] = body["messages"][index]
    return placed


def _messages_shaped(body: Mapping[str, Any]) -> bool:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return False
    for message in messages:
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            return False
        content = message.get("content")
        if not isinstance(content, str) and not _block_list(content):
            return False
    tools, system = body.get("tools"), body.get("system")
    return (tools is None or _block_list(tools)) and (
        system is None or isinstance(system, str) or _block_list(system)
    )


def _block_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(block, Mapping) for block in value)
