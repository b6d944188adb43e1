"""What warmloop reads of an Anthropic Messages exchange, for the record: its usage object,
its cache diagnostics as a verdict, whether a body has its shape, the blocks its lookback
counts, the TTL a body writes for, and a body in one form where two read alike.

Usage ("Messages > Usage"): `input_tokens` counts only what follows the last breakpoint;
`cache_creation_input_tokens` and `cache_read_input_tokens` the rest, with the 1h writes
apart in `cache_creation.ephemeral_1h_input_tokens`.

Cache diagnostics ("Cache diagnostics",
https://platform.claude.com/docs/en/build-with-claude/cache-diagnostics; beta header
`cache-diagnosis-2026-04-07`, `anthropic` SDK 2.13 `types/diagnostics.py` and
`types/cache_miss_*.py`): the request carries `diagnostics.previous_message_id` (null on a
first turn, to opt in); the response's `diagnostics.cache_miss_reason.type` is
`model_changed`, `system_changed`, `tools_changed`, `messages_changed` (each with
`cache_missed_input_tokens`), `previous_message_not_found` (the API holds no record of that
request: "this doesn't mean that this request changed") or `unavailable`; a null reason
means the comparison was still running; `diagnostics: null` on a request that named a
previous message means no divergence was found.
"""

from __future__ import annotations

from collections.abc import Mapping

from warmloop.facts.usage import Usage, count_at
from warmloop.wire.pieces import Pieces, marker_ttl, piece_text
from warmloop.wire.verdict import (
    LOST,
    MESSAGES,
    MODEL,
    PENDING,
    SYSTEM,
    TOOLS,
    UNAVAILABLE,
    UNCHANGED,
    ProviderVerdict,
    missed_count,
)

BETA = "cache-diagnosis-2026-04-07"
"""The beta header value Anthropic's cache diagnostics are asked for with."""
PROVIDER = "anthropic"
SPEAKER = "Anthropic"

_REASONS = {
    "model_changed": MODEL,
    "system_changed": SYSTEM,
    "tools_changed": TOOLS,
    "messages_changed": MESSAGES,
    "previous_message_not_found": LOST,
    "unavailable": UNAVAILABLE,
}
_OWN_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking"})


def read_usage(raw: Mapping[str, object]) -> Usage:
    """Anthropic's `usage`: its `input_tokens` counts only what follows the last breakpoint
    (the uncached part of the prompt)."""
    written = count_at(raw, "cache_creation_input_tokens")
    return Usage.of_parts(
        count_at(raw, "input_tokens"),
        count_at(raw, "cache_read_input_tokens"),
        written,
        count_at(raw, "output_tokens"),
        cache_write_1h_tokens=min(
            count_at(raw, "cache_creation", "ephemeral_1h_input_tokens"), written
        ),
    )


def claims_usage(raw: Mapping[str, object]) -> int:
    """Any usage object no other format claims is read as Anthropic's (the last resort)."""
    del raw
    return 0


def read_verdict(
    diagnostics: Mapping[str, object] | None, compared_with: str | None = None
) -> ProviderVerdict | None:
    """Anthropic's `diagnostics` object as a verdict (None when it carries none). A request
    that named a previous message and got `diagnostics: null` back gets `no divergence`:
    pass `diagnostics={}` for it."""
    if diagnostics is None:
        return None
    if not diagnostics:
        return _verdict("no divergence", UNCHANGED, None, compared_with)
    reason = diagnostics.get("cache_miss_reason")
    if reason is None:
        return _verdict("pending", PENDING, None, compared_with)
    if not isinstance(reason, Mapping) or not isinstance(reason.get("type"), str):
        return None
    word = reason["type"]
    missed = missed_count(reason.get("cache_missed_input_tokens"))
    return _verdict(word, _REASONS.get(word, UNAVAILABLE), missed, compared_with)


def _verdict(
    reason: str, kind: str, missed: int | None, compared_with: str | None
) -> ProviderVerdict:
    return ProviderVerdict(PROVIDER, reason, kind, missed, compared_with, speaker=SPEAKER)


def detect(body: Mapping[str, object]) -> int:
    """1 for a body of Anthropic's shape (a top-level system, Anthropic-only content blocks,
    else a Claude model), -1 otherwise; any Chat-only trait (a system, developer or tool
    role, tool_calls) rules it out."""
    own_blocks = "system" in body
    messages = body.get("messages")
    for message in messages if isinstance(messages, list) else ():
        if not isinstance(message, dict):
            continue
        if message.get("role") in {"system", "developer", "tool"} or "tool_calls" in message:
            return -1
        content = message.get("content")
        if isinstance(content, list) and any(
            isinstance(block, dict) and block.get("type") in _OWN_BLOCKS for block in content
        ):
            own_blocks = True
    model = body.get("model")
    return 1 if own_blocks or (isinstance(model, str) and "claude" in model.lower()) else -1


def lookback_pieces(body: Mapping[str, object], head: str) -> Pieces:
    """The blocks Anthropic counts for its lookback, each with the marker the client sent:
    each tool, each system block and each content block of each message (a top-level
    `cache_control` marks the last block)."""
    texts: list[str] = [head]
    marks: list[str | None] = [None]
    tools = body.get("tools")
    for tool in tools if isinstance(tools, list) else ():
        texts.append("tool|" + piece_text(tool))
        marks.append(marker_ttl(tool))
    system = body.get("system")
    for block in system if isinstance(system, list) else ([system] if system else []):
        texts.append("system|" + piece_text(block))
        marks.append(marker_ttl(block))
    messages = body.get("messages")
    for message in messages if isinstance(messages, list) else ():
        role = message.get("role") if isinstance(message, Mapping) else None
        content = message.get("content") if isinstance(message, Mapping) else message
        blocks = content if isinstance(content, list) else [content]
        for number, block in enumerate(blocks):
            # The message boundary is part of the key: [A][B] is not [A, B] on the wire.
            texts.append(f"{role}|{number}|" + piece_text(block))
            marks.append(marker_ttl(block))
    if marker_ttl(body) is not None and len(texts) > 1:
        marks[-1] = marker_ttl(body)
    return Pieces(tuple(texts), tuple(marks))


def written_ttl(body: Mapping[str, object], found: Pieces) -> str | None:
    """The TTL a logged body writes for: its last cache marker's; None: the default."""
    del body
    marks = [mark for mark in found.marks if mark is not None]
    return marks[-1] if marks else None


SERVER_TOOLS = ("web_search_", "web_fetch_", "code_execution_", "tool_search_tool_")
"""Anthropic's server tools ("Server tools": web search, web fetch, code execution, tool
search), typed by a dated name and run by the API, their results billed as the request's
input. Client tools (no type, or Anthropic-defined ones the client runs: bash, text editor,
computer, memory) come back in the next request's text."""


def server_tools(tools: object) -> bool:
    """Whether a Messages request's tools include one the API runs (`SERVER_TOOLS`)."""
    return isinstance(tools, list) and any(
        isinstance(tool, Mapping)
        and isinstance(tool.get("type"), str)
        and str(tool["type"]).startswith(SERVER_TOOLS)
        for tool in tools
    )


def normal_form(body: Mapping[str, object]) -> dict[str, object]:
    """`body` with each part the model reads alike written one way: a `system` or message
    content that is one text block (its cache marker aside, which no reading of the prompt
    counts) as the string it stands for ("Messages > Create a Message": a string is
    shorthand for an array of one text block). A client may send one form and then the
    other: Claude Code sends the message it marks as a block, and as a string once it marks
    a later one. The string is the form logs mostly hold, so their sizes read as before.
    Anything else is kept as it is."""
    out = dict(body)
    out["system"] = _shorthand(body.get("system"))
    if "system" not in body:
        del out["system"]
    messages = body.get("messages")
    if isinstance(messages, list):
        out["messages"] = [
            {**m, "content": _shorthand(m.get("content"))} if isinstance(m, Mapping) else m
            for m in messages
        ]
    return out


BLOCK_KEYS = frozenset({"type", "text", "cache_control"})
"""A text block's keys that leave it the same as its string (`normal_form`)."""


def _shorthand(content: object) -> object:
    if isinstance(content, list) and len(content) == 1:
        (block,) = content
        if (
            isinstance(block, Mapping)
            and block.get("type") == "text"
            and isinstance(block.get("text"), str)
            and set(block) <= BLOCK_KEYS
        ):
            return block["text"]
    return content
