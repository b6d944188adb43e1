"""A shared opening written more than once in one lineage: sub-agents, forks and sibling
tasks of one agent that each write their own copy of the opening they share.

Conversations of one agent open alike (the same tools and system prompt, often the same
first instructions). The first request of a later conversation could read that opening from
the entry an earlier conversation wrote, while it lives (the earlier conversation used it
within the TTL); one that read less than it shares wrote it again. Users meet this as
"every sub-agent pays for the whole system prompt again" (a fork or sub-agent with its own
routing key lands on another machine; a breakpoint after the changing first turn only, so
the opening is never an entry of its own; a whole-entry cache with no breakpoint at the
opening's end). Only openings that cover the whole head (tools and system prompt) of both
requests and reach the model's minimum count: what one agent shares with itself. Tokens a
server-side tool fetched (web search results) are billed as input but are in no request's
text: the shared opening is then sized as text, never as a share of the bill. Under explicit
caching the earlier conversation must have billed the opening as written or read: where
nothing was written there was no copy to read (Anthropic without markers caches nothing).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from warmloop.audit.analysis import prompt_tokens, request_times
from warmloop.exchange.formats import model_name, own_profile
from warmloop.exchange.grouping import Conversation, Entry
from warmloop.exchange.reuse import reusable_tokens, rewrites_opening, server_tools
from warmloop.wire.guard import common_prefix_length
from warmloop.wire.miss_kinds import OPENING_REWRITTEN

KIND = OPENING_REWRITTEN
LOOKBACK = 64
"""Earlier conversations compared with each new one (the latest): an opening lives for a TTL,
and a log's conversations that close together in time are close together in it."""


@dataclass(frozen=True)
class Rewritten:
    """A conversation's first request wrote again `shared` tokens of the opening that
    conversation `earlier` had in the cache `since` seconds before."""

    shared: int
    earlier: int
    since: float

    @property
    def cause(self) -> str:
        return (
            f"the opening it shares with conversation {self.earlier} ({self.shared:,} tokens, "
            f"used there {self.since / 60:.1f} min before, inside the TTL) was written again "
            "instead of read: give sub-agents and forks the parent's routing key, and a "
            "cache breakpoint where the shared opening ends"
        )


def rewritten_openings(conversations: Sequence[Conversation]) -> dict[int, Rewritten]:
    """Per conversation number, where its first request wrote again an opening an earlier
    conversation of the log had in the cache (see the module docstring)."""
    found: dict[int, Rewritten] = {}
    for i, conversation in enumerate(conversations):
        best = _best_earlier(conversation, conversations[max(0, i - LOOKBACK) : i])
        if best is not None:
            found[conversation.number] = best
    return found


def _best_earlier(conversation: Conversation, earlier: Sequence[Conversation]) -> Rewritten | None:
    first = conversation.entries[0]
    at = first.record.at
    if at is None or not earlier:
        return None
    tokens, usage = prompt_tokens(first)
    cached = usage.cache_read_tokens if usage is not None else 0
    profile = own_profile(first.wire, model_name(first.record.body, first.record.path))
    best: Rewritten | None = None
    for other in earlier:
        opening = other.entries[0]
        if opening.wire is not first.wire or opening.stream.head != first.stream.head:
            continue  # another agent, or its tools or system prompt changed: a bust, not this
        times = zip(request_times(other.entries), other.entries, strict=True)
        used = [t for t, e in times if e.record.at is not None]
        last = max((t for t in used if t <= at), default=None)
        if last is None:
            continue
        chars = common_prefix_length(opening.stream.text, first.stream.text)
        server = server_tools(first) or server_tools(opening)
        shared = reusable_tokens(chars, tokens, first.stream.length, tokens, server)
        if not rewrites_opening(profile, shared, cached, at - last, _billed(other.entries, at)):
            continue
        if best is None or shared > best.shared:
            best = Rewritten(shared, other.number, at - last)
    return best


def _billed(entries: Sequence[Entry], at: float) -> int | None:
    """The most an earlier conversation's requests up to `at` billed as written and read in
    one request, or None where none of them logged its usage."""
    billed = None
    for entry in entries:
        _, usage = prompt_tokens(entry)
        sent = entry.record.at
        if usage is None or sent is None or sent > at:
            continue
        billed = max(billed or 0, usage.cache_read_tokens + usage.cache_write_tokens)
    return billed
