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

The proxy places the same markers beside a client's own (`placed_for_client`): the client's
are counted wherever they are and never moved, and only the ones they leave unused are
added, where they are read (`records.Reach`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from warmloop.errors import ConfigurationError
from warmloop.messages import JsonValue
from warmloop.providers.records import FULL_REACH, Reach

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


def client_markers(payload: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    """Each `cache_control` a client put in a body, at any depth (a marker inside a
    `tool_result`'s content counts as much as one on a block), with the position of the
    block that holds it (`_blocks`' order) and the marker itself."""
    found: list[tuple[int, Mapping[str, Any]]] = []
    for position, block in enumerate(_blocks(payload)):
        stack: list[Any] = [block]
        while stack:
            value = stack.pop()
            if isinstance(value, Mapping):
                control = value.get("cache_control")
                if isinstance(control, Mapping):
                    found.append((position, control))
                stack.extend(v for k, v in value.items() if k != "cache_control")
            elif isinstance(value, list):
                stack.extend(value)
    return found


def placed_for_client(
    body: Mapping[str, Any], profile: object = None, reach: Reach = FULL_REACH
) -> dict[str, Any] | None:
    """A client's Messages body with warmloop's breakpoints added where the client's own
    leave room and reach, or None when none is added.

    The client's markers are counted wherever they are (`client_markers`) and never moved:
    of the `MAX_BREAKPOINTS`, the ones it left unused go, in this order, on the newest
    turn (this request's write), on the turn the previous request ended with unless a
    client marker within `LOOKBACK_BLOCKS` after it already finds that write, and after
    the system prompt and the tools (the opening every session shares) where the client
    placed none. Only where `reach` says the next request will read them: a conversation
    seen rebuilding its prompt gets no marker past where it rebuilds. Each added marker
    takes the TTL of the client's next marker after it (the API wants longer TTLs first),
    else the 5-minute default. A top-level `cache_control` (automatic caching) or a body
    not shaped as the API takes it is left as sent. A string `system` or message content
    that gets a marker becomes the one text block it stands for (the API's documented
    equivalent). Every Claude model takes them, so the model's profile is not asked."""
    del profile
    if not _messages_shaped(body) or "cache_control" in body:
        return None
    theirs = client_markers(body)
    free = MAX_BREAKPOINTS - len(theirs)
    if free <= 0:
        return None
    out = _as_blocks(body, reach)
    starts = _starts(out)
    own = {position for position, _ in theirs}
    marked = set(own)
    chosen: list[tuple[str, int]] = []
    for where, index in _wanted(out, reach):
        position = _position(starts, where, index)
        if position is None or position in marked:
            continue
        if where == "read" and any(0 < b - position < LOOKBACK_BLOCKS for b in own):
            continue
        chosen.append((where, index))
        marked.add(position)
        if len(chosen) == free:
            break
    if not chosen:
        return None
    for where, index in chosen:
        position = _position(starts, where, index)
        assert position is not None
        later = [control for at, control in sorted(theirs, key=lambda t: t[0]) if at > position]
        control = dict(later[0]) if later else cache_control("5m")
        out = _marked(out, where, index, control)
    return _unblocked(out, body)


def _wanted(body: Mapping[str, Any], reach: Reach) -> list[tuple[str, int]]:
    """Where warmloop's markers would go, most useful first: ("write" | "read", message
    index), ("system", -1), ("tools", -1); only what `reach` says is read later."""
    messages = body["messages"]
    chosen = message_breakpoints(messages)
    wanted: list[tuple[str, int]] = []
    newest = len(messages) - 1
    for index in reversed(chosen):
        if reach.allows(index):
            wanted.append(("write" if index == newest else "read", index))
    if reach.system and body.get("system"):
        wanted.append(("system", -1))
    if reach.tools and body.get("tools"):
        wanted.append(("tools", -1))
    return wanted


def _starts(body: Mapping[str, Any]) -> dict[str, int]:
    """Where each part's blocks start in `_blocks`' order (`tools`, `system`, `m<i>`)."""
    starts = {"tools": 0}
    at = len(body.get("tools") or ())
    starts["system"] = at
    system = body.get("system")
    at += 1 if isinstance(system, str) else len(system or ())
    for index, message in enumerate(body["messages"]):
        starts[f"m{index}"] = at
        content = message["content"]
        at += 1 if isinstance(content, str) else len(content)
    starts["end"] = at
    return starts


def _position(starts: Mapping[str, int], where: str, index: int) -> int | None:
    """The block a marker at (`where`, `index`) lands on: the last of its part."""
    if where in ("tools", "system"):
        after = "system" if where == "tools" else "m0" if "m0" in starts else "end"
        last = starts[after] - 1
        return last if last >= starts[where] else None
    following = f"m{index + 1}" if f"m{index + 1}" in starts else "end"
    last = starts[following] - 1
    return last if last >= starts[f"m{index}"] else None


def _marked(
    body: dict[str, Any], where: str, index: int, control: Mapping[str, JsonValue]
) -> dict[str, Any]:
    """`body` with `control` on the last block of the part (`where`, `index`)."""
    if where in ("tools", "system"):
        return {**body, where: _mark_last(body[where], control)}
    messages = list(body["messages"])
    messages[index] = {
        **messages[index],
        "content": _mark_last(messages[index]["content"], control),
    }
    return {**body, "messages": messages}


def _as_blocks(body: Mapping[str, Any], reach: Reach) -> dict[str, Any]:
    """`body` with a string system prompt and the string contents of the messages that may
    be marked as the one text block each stands for (an empty one as no block)."""
    out = dict(body)
    system = body.get("system")
    if isinstance(system, str):
        out["system"] = [{"type": "text", "text": system}] if system else []
    messages = list(body["messages"])
    for index in message_breakpoints(messages):
        content = messages[index]["content"]
        if isinstance(content, str) and reach.allows(index):
            blocks = [{"type": "text", "text": content}] if content else []
            messages[index] = {**messages[index], "content": blocks}
    out["messages"] = messages
    return out


def _unblocked(placed: dict[str, Any], body: Mapping[str, Any]) -> dict[str, Any]:
    """`placed` with what was only rewritten as blocks and got no marker as the client
    sent it: a string stays a string unless it carries a marker."""
    out = dict(placed)
    if isinstance(body.get("system"), str) and not any(
        isinstance(b, Mapping) and "cache_control" in b for b in out["system"]
    ):
        out["system"] = body["system"]
    messages = list(out["messages"])
    for index, message in enumerate(body["messages"]):
        if isinstance(message["content"], str) and messages[index] is not message:
            blocks = messages[index]["content"]
            if not any("cache_control" in b for b in blocks):
                messages[index] = message
    out["messages"] = messages
    return out


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
