"""What the miss rules (`wire.miss_kinds`) know of one request, read the same way from a
log (the audit) and from live traffic (the proxy's guard).

- its pieces (`pieces`): the blocks a provider's cache counts, with the markers the client
  sent (for a format that reads at markers, its record's `WireFormat.pieces`), else the
  wire stream's head sections and items;
- whether it carried the routing key its provider matches on (`prompt_cache_key`);
- whether it offered a tool the provider runs (web search, code execution: `server_tools`),
  whose results are billed as its input but are in no request's text: the prefix it shares
  with another is then sized as text, never as a share of the bill (`reusable_tokens`);
- why explicit breakpoints could not read the request it continues (`marker_cause`);
- whether a conversation's first request wrote again an opening an earlier conversation of
  the same agent had in the cache (`rewrites_opening`: the `opening-rewritten` kind).
"""

from __future__ import annotations

import json

from warmloop.exchange.grouping import Entry
from warmloop.facts.profiles import CacheProfile
from warmloop.facts.usage import Usage
from warmloop.wire.miss_kinds import TOLERANCE, ReuseFacts
from warmloop.wire.pieces import Pieces

CHARS_PER_TOKEN = 4
KEY_FIELD = "prompt_cache_key="
"""How `exchange.formats.routing_key` names a key sent as `prompt_cache_key`."""


def estimate_tokens(chars: int) -> int:
    """Tokens of `chars` characters of prompt text, when no usage was logged (about four
    characters a token for English and JSON)."""
    return -(-chars // CHARS_PER_TOKEN)


def pieces(entry: Entry) -> Pieces:
    """The blocks of one request."""
    stream = entry.stream
    if entry.wire.pieces is not None:
        if entry.blocks is not None:
            return Pieces(*entry.blocks)
        return entry.wire.pieces(entry.record.body, stream.head[0][1])
    texts = (*(f"{label}|{text}" for label, text in stream.head), *stream.items)
    return Pieces(texts, (None,) * len(texts))


def server_tools(entry: Entry) -> bool:
    """Whether the request offered a tool its provider runs (web search, code execution):
    then its billed input holds what that tool fetched, which is in no request's text."""
    read = entry.wire.server_tools
    text = next((t for label, t in entry.stream.head if label == "tools"), "")
    if read is None or not text:
        return False
    try:
        return read(json.loads(text))
    except ValueError:
        return False


def reusable_tokens(shared: int, tokens: int, length: int, limit: int, server: bool) -> int:
    """The tokens of a request's prefix of `shared` characters (of its `length`, billed as
    `tokens`), never past `limit` (the fewer tokens of it and the request it continues):
    a share of its bill, or, where a server-side tool's results are in the bill (`server`),
    the text's own size."""
    if server:
        return min(estimate_tokens(shared), limit)
    return min(round(shared * tokens / max(length, 1)), limit)


def reuse_facts(
    entry: Entry,
    current: Pieces,
    times: tuple[float | None, float | None],
    usage: Usage,
    ttl: str | None,
    keyed: bool | None = None,
    server: bool | None = None,
) -> ReuseFacts:
    """What the miss rules know of one request: when it was sent and answered (`times`),
    the TTL it writes for, what it read and wrote, its pieces, whether it carried a cache
    key (`keyed`: the key as it went, where not the entry's own), and whether it offered
    tools the server runs (`server`, where the caller read it already)."""
    if keyed is None:
        keyed = entry.key is not None and entry.key.startswith(KEY_FIELD)
    return ReuseFacts(
        times[0],
        times[1],
        ttl,
        usage.cache_read_tokens,
        current.texts,
        keyed=keyed,
        written=usage.cache_write_tokens,
        server_tools=server_tools(entry) if server is None else server,
    )


def marker_cause(previous: Pieces, current: Pieces, lookback: int) -> str | None:
    """Why explicit breakpoints could not read the previous request's write, or None."""
    marks = [i for i, mark in enumerate(current.marks) if mark is not None]
    if not marks:
        return "no cache marker on this request: nothing is read or written (add cache_control)"
    common = previous.common(current)
    writes = [w for w, mark in enumerate(previous.marks) if mark is not None and w < common]
    if not writes:
        return (
            "cache marker moved: the previous request wrote no entry inside the prefix this "
            "request shares with it"
        )
    if any(0 <= b - w < lookback for b in marks for w in writes):
        return None
    gap = min(b - max(writes) for b in marks if b > max(writes)) if max(marks) > max(writes) else 0
    if gap >= lookback:
        return (
            f"cache marker past the {lookback}-block lookback: the nearest marker is {gap} "
            "blocks after the previous write (add a marker near the previous request's end)"
        )
    return "cache marker moved before the previous write: the entry it wrote is never read"


def rewrites_opening(
    profile: CacheProfile, shared: int, cached: int, since: float, billed: int | None
) -> bool:
    """Whether a conversation's first request wrote again the `shared` tokens of opening an
    earlier conversation of its agent last used `since` seconds before: inside the TTL, at
    least the minimum, and it read less of them (`cached`). Under explicit caching the
    earlier conversation must have billed that much as written or read in one request
    (`billed`, None where its usage is unknown): without a marker nothing was written to
    read; implicit caching writes every prefix past its minimum, which usage never says."""
    if since > profile.ttl_seconds or shared < max(profile.min_cacheable_tokens, 1):
        return False
    if cached >= (1 - TOLERANCE) * shared:
        return False
    if profile.mode != "explicit":
        return True
    return billed is not None and billed >= (1 - TOLERANCE) * shared
