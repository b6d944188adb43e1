"""The proxy's live guard for misses: a request whose prefix held (no bust), yet whose
answer's usage shows it read less than the request it continues left, named as it is
answered with the kind the audit gives such a miss (`wire.miss_kinds.miss_cause`) and the
dollars it cost, from what live traffic shows, read as the audit reads a log
(`exchange.reuse`):

- `no-cache-key`: a model that matches through `prompt_cache_key` (GPT-5.6 and later)
  and a request that went upstream without one (the client sent none, and the proxy added
  none: another host, or `--no-cache-key`);
- `affinity`: a miss after a pause past the router's documented affinity window
  (`--affinity SECONDS`), though inside the TTL; without one, the conversation's own returns
  show it (`miss_kinds.affinity_window`: every return after a longer pause missed, every
  one after a shorter pause read), and its evictions are then named `affinity`;
- `opening-rewritten`: a conversation's first request wrote again the opening an earlier
  conversation of the same agent (the same tools and system prompt) had in the cache
  within the TTL: sub-agents and forks that each write their own copy;
- server-side tool results (web search, code execution) billed as input are never a
  reusable prefix: the shared text is sized as text;
- the others as the audit names them: below the minimum, idle, a marker, a write not yet
  landed (sent before the answer it continues), a TTL switched, routed, evicted only where
  the timing and the billed tokens support it, else unexplained.

Times are the proxy's clock: when a request arrived and when its answer's last byte went
out. Each miss's dollars are what the request cost above the same usage with the shortfall
read from the cache (its writes of it not made), under the model's prices; None where the
model has none. Memory is bounded: the newest `KEEP` requests per conversation, the newest
`OPENINGS` openings, a conversation's figures dropped when it is forgotten.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import TypedDict

from warmloop.exchange.formats import model_name, model_spec, own_profile, written_ttl
from warmloop.exchange.grouping import Entry
from warmloop.exchange.log import LoggedRequest
from warmloop.exchange.reuse import (
    KEY_FIELD,
    marker_cause,
    pieces,
    reusable_tokens,
    reuse_facts,
    rewrites_opening,
    server_tools,
)
from warmloop.facts.price_table import prices_for
from warmloop.facts.pricing import cost
from warmloop.facts.profiles import CacheProfile
from warmloop.facts.usage import Usage
from warmloop.wire.guard import common_prefix_length
from warmloop.wire.miss_kinds import (
    OPENING_REWRITTEN,
    ReuseFacts,
    affinity_window,
    miss_cause,
)
from warmloop.wire.pieces import Pieces
from warmloop.wire.stream import WireStream

KEEP = 4
"""Requests kept per conversation, as the conversations keep them (`proxy.conversations`):
a fork's parent, and the ones a routing check reads. Each is kept without its body: its
stream is the one its conversation holds."""
OPENINGS = 64
"""Openings kept (a conversation's first request, by agent): as the audit's lookback."""
RETURNS = 64
"""Returns kept per conversation for its affinity window (the newest)."""


class MissFigures(TypedDict):
    """One kind of miss in a conversation, as the status page shows it."""

    requests: int
    lost_usd: float | None
    """None where a request of the kind is unpriced."""


@dataclass(eq=False)
class _Request:
    """A request the guard saw go upstream, and, once answered, what the miss rules know."""

    conversation: str
    entry: Entry
    pieces: Pieces
    at: float
    keyed: bool
    ttl: str | None
    shared: int
    """Characters of its prefix it shares with the request it continues (0: none)."""
    parent: int | None
    profile: CacheProfile
    model: str
    server: bool
    """It offered tools the server runs (`exchange.reuse.server_tools`), read once."""
    tokens: int = 0
    facts: ReuseFacts | None = None


@dataclass
class _Figures:
    """One conversation's misses: per kind, the requests and the dollars (None: unpriced),
    its returns inside the TTL, and its evictions (re-named `affinity` where its returns
    show a window)."""

    requests: list[int] = field(default_factory=list)
    kinds: dict[str, tuple[int, float | None]] = field(default_factory=dict)
    returns: list[tuple[float, bool]] = field(default_factory=list)
    opening: int | None = None
    """The opening it is filed under (its first request's number), if any."""


@dataclass(frozen=True)
class LiveMiss:
    """A miss the guard named: `kind` and `cause` as the audit names them, the tokens it
    could read and did, and what it cost (None: the model has no prices)."""

    conversation: str
    kind: str
    cause: str
    reusable: int
    cached: int
    lost_usd: float | None

    def __str__(self) -> str:
        dollars = f", ${self.lost_usd:.4f}" if self.lost_usd is not None else ""
        return (
            f"conversation {self.conversation}: cache miss ({self.kind}{dollars}): read "
            f"{self.cached:,} of {self.reusable:,} reusable tokens; {self.cause}"
        )


@dataclass
class _Opening:
    """A conversation's first request, for later conversations of its agent to compare."""

    conversation: str
    request: _Request
    used: float
    billed: int


class LiveMisses:
    """The live guard's misses across the proxy's conversations; safe across threads.
    `affinity`: the router's documented affinity window in seconds, where known."""

    def __init__(self, affinity: float | None = None) -> None:
        self.affinity = affinity
        self._lock = threading.Lock()
        self._requests: dict[int, _Request] = {}
        self._figures: dict[str, _Figures] = {}
        self._openings: OrderedDict[int, _Opening] = OrderedDict()

    def sent(
        self,
        conversation: str,
        entry: Entry,
        numbers: tuple[int, int | None],
        shared: int | None,
        at: float,
        added: tuple[str, ...] = (),
        ttl: str | None = None,
    ) -> None:
        """A request going upstream: its conversation, entry, number and parent's number
        (`numbers`), the characters it shares with its parent (None: a bust, nothing to
        name), when it arrived, what the fixes added (a `prompt_cache_key` is a key sent)
        and the TTL the proxy wrote it for (None: the client's own)."""
        number, parent = numbers
        if shared is None:
            return
        found = pieces(entry)
        model = model_name(entry.record.body, entry.record.path)
        with self._lock:
            before = self._requests.get(parent if parent is not None else -1)
        # Its pieces as strings already held: memory holds a shared head once.
        found = _reused(before.pieces if before is not None else None, found, entry)
        keyed = (entry.key or "").startswith(KEY_FIELD) or KEY_FIELD[:-1] in added
        request = _Request(
            conversation,
            replace(entry, record=LoggedRequest(0, {})),  # what is read of the body is read
            found,
            at,
            keyed,
            ttl or written_ttl(entry.wire, entry.record.body, found),
            shared,
            parent,
            own_profile(entry.wire, model),
            model,
            server_tools(entry),
        )
        with self._lock:
            self._requests[number] = request
            held = self._figures.setdefault(conversation, _Figures()).requests
            held.append(number)
            while len(held) > KEEP:
                self._requests.pop(held.pop(0), None)

    def answered(self, number: int, usage: Usage, answered_at: float) -> LiveMiss | None:
        """A request's answer: its usage, when its last byte went out. The miss it shows,
        named and priced, or None."""
        with self._lock:
            request = self._requests.get(number)
            if request is None:
                return None
            request.tokens = usage.prompt_tokens
            times = (request.at, answered_at)
            request.facts = reuse_facts(
                request.entry,
                request.pieces,
                times,
                usage,
                request.ttl,
                request.keyed,
                request.server,
            )
            figures = self._figures[request.conversation]
            if request.parent is None:
                found = self._opening(number, request, usage)
            else:
                found = self._continued(request, figures, usage)
            self._used(figures, request, usage)
            if found is not None:
                count, usd = figures.kinds.get(found.kind, (0, 0.0))
                total = None if usd is None or found.lost_usd is None else usd + found.lost_usd
                figures.kinds[found.kind] = (count + 1, total)
            return found

    def _continued(self, request: _Request, figures: _Figures, usage: Usage) -> LiveMiss | None:
        """The miss on a request that extends its parent, or None."""
        parent = self._requests.get(request.parent if request.parent is not None else -1)
        held = [self._requests[n] for n in figures.requests if n in self._requests]
        answered = [r for r in held if r.facts is not None]
        if parent is None or parent not in answered or request not in answered:
            return None
        profile = request.profile
        limit = min(parent.tokens, request.tokens)
        server = request.server or parent.server
        length = request.entry.stream.length
        reusable = reusable_tokens(request.shared, request.tokens, length, limit, server)
        idle = request.at - parent.at
        cause = miss_cause(
            profile,
            [r.facts for r in answered if r.facts is not None],
            answered.index(request),
            answered.index(parent),
            reusable,
            idle,
            _marker(request, parent),
            self.affinity,
        )
        if reusable >= profile.min_cacheable_tokens and (cause is None or cause[0] == "evicted"):
            figures.returns = [*figures.returns[-RETURNS + 1 :], (idle, cause is not None)]
        if cause is None:
            return None
        lost = _lost_usd(request, usage, reusable - usage.cache_read_tokens)
        return LiveMiss(request.conversation, *cause, reusable, usage.cache_read_tokens, lost)

    def _opening(self, number: int, request: _Request, usage: Usage) -> LiveMiss | None:
        """The `opening-rewritten` miss on a conversation's first request, or None; it is
        kept for later conversations of its agent to compare."""
        found: LiveMiss | None = None
        best = 0
        for earlier in self._openings.values():
            other = earlier.request
            if other.entry.wire is not request.entry.wire:
                continue
            if other.entry.stream.head != request.entry.stream.head:
                continue  # another agent, or its tools or system prompt changed
            chars = _shared_chars(other.entry.stream, request.entry.stream)
            server = request.server or other.server
            length = request.entry.stream.length
            shared = reusable_tokens(chars, request.tokens, length, request.tokens, server)
            since = request.at - earlier.used
            cached = usage.cache_read_tokens
            if shared <= best or not rewrites_opening(
                request.profile, shared, cached, since, earlier.billed
            ):
                continue
            best = shared
            cause = (
                f"the opening it shares with conversation {earlier.conversation} "
                f"({shared:,} tokens, used there {since / 60:.1f} min before, inside the TTL) "
                "was written again instead of read: give sub-agents and forks the parent's "
                "routing key, and a cache breakpoint where the shared opening ends"
            )
            lost = _lost_usd(request, usage, shared - cached)
            found = LiveMiss(request.conversation, OPENING_REWRITTEN, cause, shared, cached, lost)
        self._openings[number] = _Opening(request.conversation, request, request.at, 0)
        self._figures[request.conversation].opening = number
        while len(self._openings) > OPENINGS:
            self._openings.popitem(last=False)
        return found

    def _used(self, figures: _Figures, request: _Request, usage: Usage) -> None:
        """Note a conversation's use of its opening: when, and the most billed as written
        and read in one request."""
        opening = self._openings.get(figures.opening if figures.opening is not None else -1)
        if opening is None:
            return
        opening.used = max(opening.used, request.at)
        billed = usage.cache_read_tokens + usage.cache_write_tokens
        opening.billed = max(opening.billed, billed)

    def forget(self, conversation: str) -> None:
        """Drop what a forgotten conversation held."""
        with self._lock:
            figures = self._figures.pop(conversation, None)
            for number in figures.requests if figures is not None else ():
                self._requests.pop(number, None)

    def figures(self, conversation: str) -> dict[str, MissFigures]:
        """A conversation's misses per kind for the status page: requests and `lost_usd`
        (None where unpriced), its evictions named `affinity` where its returns show a
        window."""
        with self._lock:
            figures = self._figures.get(conversation)
            if figures is None:
                return {}
            kinds = dict(figures.kinds)
            if self.affinity is None and affinity_window(figures.returns) and "evicted" in kinds:
                moved = kinds.pop("evicted")
                count, usd = kinds.get("affinity", (0, 0.0))
                total = None if usd is None or moved[1] is None else usd + moved[1]
                kinds["affinity"] = (count + moved[0], total)
        return {
            kind: MissFigures(requests=count, lost_usd=round(usd, 6) if usd is not None else None)
            for kind, (count, usd) in sorted(kinds.items())
        }


def _reused(before: Pieces | None, found: Pieces, entry: Entry) -> Pieces:
    """`found` with each leading piece equal to `before`'s (the request it continues) as
    `before`'s own string, and a first request's head pieces interned, so the requests and
    conversations of one agent hold their shared head (a system prompt, the tools) once."""
    texts = list(found.texts)
    if before is None:
        head = len(entry.stream.head)
        return Pieces((*map(sys.intern, texts[:head]), *texts[head:]), found.marks)
    for n, (old, new) in enumerate(zip(before.texts, texts, strict=False)):
        if old != new:
            break
        texts[n] = old
    return Pieces(tuple(texts), found.marks)


def _shared_chars(before: WireStream, after: WireStream) -> int:
    """The characters two streams with the same head share from their start, measured
    item by item (`WireStream.text` would keep a joined copy of every stream measured)."""
    shared = before.head_length
    for old, new in zip(before.items, after.items, strict=False):
        if old != new:
            return shared + common_prefix_length(old, new)
        shared += len(old)
    return shared


def _marker(request: _Request, parent: _Request) -> str | None:
    """Why explicit breakpoints could not read the parent's write, where the format reads
    only at markers."""
    lookback = request.profile.lookback_blocks if request.profile.mode == "explicit" else None
    if not request.entry.wire.explicit_breakpoints or not lookback:
        return None
    return marker_cause(parent.pieces, request.pieces, lookback)


def _lost_usd(request: _Request, usage: Usage, shortfall: int) -> float | None:
    """What the request cost above the same usage with `shortfall` more tokens read from
    the cache and not written again, under its model's prices (None: unpriced)."""
    prices = prices_for(model_spec(request.entry.wire, request.model))
    if prices is None or shortfall <= 0:
        return None if prices is None else 0.0
    read = min(usage.cache_read_tokens + shortfall, usage.input_tokens)
    written = max(0, min(usage.cache_write_tokens - shortfall, usage.input_tokens - read))
    one_hour = min(usage.cache_write_1h_tokens, written)
    twelve = min(usage.cache_write_12h_tokens, written - one_hour)
    ideal = replace(
        usage,
        cache_read_tokens=read,
        cache_write_tokens=written,
        cache_write_1h_tokens=one_hour,
        cache_write_12h_tokens=twelve,
    )
    return max(cost(usage, prices) - cost(ideal, prices), 0.0)
