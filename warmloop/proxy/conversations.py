"""The live proxy's conversations: which conversation each request belongs to, as it comes.

Each request is filed from its own content and keys, never from what came before it on
the wire (`exchange.identity`), so a thousand clients at once are filed as they would be
one after another. It is filed as the model reads it (`WireFormat.normal_form`): a
Messages content of one text block and the string it stands for are the same, as Claude
Code sends the message it marks in one form and then in the other.
- its scope: the format and the routing key the client sent (`prompt_cache_key`,
  `metadata.user_id`, `user`); without one, its system prompt too, so tenants whose system
  prompts differ anywhere never share a conversation;
- the request it extends, looked up exactly by the hashes of its own leading items (an
  agent's step; under one key, a request whose system prompt differs continues a request
  only by extending it);
- else, the request it carries on by the continuation measure (`exchange.continuation`:
  a rebuilt prompt, a compaction, a summary, a volatile value written first), among the
  candidates the anchor index offers in its scope: the same conversation, its bust named;
- else it opens a conversation. Under a key it joins the key's lineage: Claude Code's
  sub-agents share their parent's `metadata.user_id`, and each is a conversation of its
  own whose parent is the lineage's first, not a bust of the parent's.

Each conversation gets an id of its own (`wl-` and 16 hex digits), the routing key the
proxy sends for it where a fix asks for one (`exchange.identity.lineage_key`, taken when it
opens), and its latest requests, for the live guard.
A request that continues one that was already continued is a fork (a branch of the same
conversation, compared with the request it continues). Where a request moves the prefix,
the conversation's `reach` says how much still stays put (`providers.records.Reach`), so
the proxy writes no marker nothing will read; `CLEAN_TO_RESET` clean requests in a row
restore it (a compaction moves the prefix once, a framework that rebuilds its prompt every
time). A new key-less conversation whose request carries on one of a live conversation under
another system prompt (a sibling: another step of one program over the same messages) starts
with that conversation's reach: its first marker is a bet that it comes back, priced by what
the proxy has seen of those messages, never a join (tenants stay apart).

Memory is bounded: a conversation idle for `idle_seconds` is forgotten, and past `limit`
conversations the least recently used one is; each keeps only its latest `KEEP` requests.
The anchor index is rebuilt from the requests still held once more than half its entries
name forgotten ones.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from warmloop.exchange.anchors import AnchorIndex, anchors, loose_anchors
from warmloop.exchange.formats import read_stream, routing_key
from warmloop.exchange.grouping import Entry, best_parent
from warmloop.exchange.identity import item_chain, lineage_key, opening, scope
from warmloop.exchange.log import LoggedRequest
from warmloop.facts.usage import Usage
from warmloop.providers.records import FULL_REACH, Reach, WireFormat
from warmloop.wire.guard import PrefixCheck, compare

IDLE_SECONDS = 3600.0
"""A conversation with no request for this long is forgotten (past every cache's TTL but
Anthropic's and OpenAI's longest, whose conversations resume as new ones)."""
LIMIT = 10_000
"""Conversations held at most; past it the least recently used is forgotten."""
KEEP = 4
"""Requests held per conversation: the newest, and the ones before it a fork or a parallel
step (several requests continuing one) may continue."""
CLEAN_TO_RESET = 2
"""Requests in a row that extend the one before them, after which a conversation's reach
is whole again."""

Rungs = tuple[list[int], list[int], list[int]]
"""A request's rungs in the anchor index: exact, loose, and among its siblings."""


@dataclass
class LiveConversation:
    """One live conversation: its id, what it was keyed by, its lineage, its newest
    requests, and its running figures for the status page."""

    id: str
    wire: WireFormat
    key: str | None
    seen: float
    lineage: str = ""
    """The id of the first conversation of its key (its own where it is the first, or has
    no key): a parent and its sub-agents share it."""
    parent: str | None = None
    """The conversation it branched from (its lineage's first), or None."""
    routing: str = ""
    """The routing key the proxy sends for it (`exchange.identity.lineage_key`)."""
    agent: int = 0
    """Its agent: the hash of its first request's system prompt
    (`exchange.identity.opening`), whose pauses price a new conversation's
    (`proxy.returns`)."""
    requests: int = 0
    busts: int = 0
    forks: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    saved_usd: float = 0.0
    """What the breakpoints the proxy placed saved, against the same requests without
    them (no cache at all on a wire that caches only at markers); the write premium of a
    conversation's first request counts against it."""
    priced: bool = False
    """Whether any saving was priced (the model has prices in the table)."""
    reach: Reach = FULL_REACH
    """How much of its prompt stays put from one request to the next (see the module)."""
    clean: int = 0
    """Requests in a row that extended the one before them."""
    held: list[int] = field(default_factory=list)
    """The numbers of its requests still held, oldest first."""


@dataclass(frozen=True)
class Placed:
    """Where a request went: its conversation, and how it extends the request before it
    (None for a conversation's first); its entry, its number and the number of the request
    it continues (for the live guard's misses)."""

    conversation: LiveConversation
    check: PrefixCheck | None
    fork: bool = False
    entry: Entry | None = None
    number: int = -1
    parent: int | None = None


@dataclass
class _Held:
    """A request still held: its entry, conversation, scope and system prompt's hash, the
    exact keys it is filed under, and whether a later one continued it."""

    entry: Entry
    home: LiveConversation
    scope: Hashable
    system: int
    keys: tuple[Hashable, ...]
    continued: bool = False
    number: int = -1


class LiveConversations:
    """The proxy's conversations; safe across the server's threads."""

    def __init__(
        self,
        clock: Callable[[], float],
        *,
        idle_seconds: float = IDLE_SECONDS,
        limit: int = LIMIT,
        on_forget: Callable[[str], None] | None = None,
    ) -> None:
        self.clock = clock
        self.on_forget = on_forget
        """Told each forgotten conversation's id (the keep-alive drops what it held)."""
        self.idle_seconds = idle_seconds
        self.limit = limit
        self._lock = threading.Lock()
        self._live: OrderedDict[str, LiveConversation] = OrderedDict()  # least recent first
        self._lineages: dict[tuple[str, str], tuple[str, int]] = {}  # key -> (first, live)
        self._entries: dict[int, _Held] = {}
        self._exact: dict[Hashable, int] = {}
        self._index = AnchorIndex()
        self._filed = 0  # entries filed in the index, forgotten ones included
        self._next = 0

    def __len__(self) -> int:
        return len(self._live)

    def snapshot(self) -> list[LiveConversation]:
        """The live conversations, most recent first (copies of their figures)."""
        with self._lock:
            return [replace(c, held=[]) for c in reversed(self._live.values())]

    def place(self, wire: WireFormat, body: Mapping[str, Any]) -> Placed | None:
        """File a request body (as the client sent it) in its conversation; None for a
        body not shaped as its format (it goes upstream as sent, for the API's own error)."""
        try:
            stream = read_stream(body, wire)
        except (TypeError, KeyError, AttributeError, ValueError, RecursionError):
            return None
        key = routing_key(body)
        entry = Entry(LoggedRequest(0, {}), wire, stream, key)
        items = entry.conversation_items
        chain = item_chain(items)
        where = scope(wire.name, key, stream)
        system = opening(stream)
        rungs = _rungs(where, wire.name, key is not None, "".join(items))
        with self._lock:
            now = self.clock()
            self._expire(now)
            number = self._next
            self._next += 1
            parent = self._extended(where, system, chain, items, key is not None)
            if parent is None:
                parent = self._measured(entry, where, system, rungs)
            if parent is None:
                home, check, fork = self._open(wire, key, now), None, False
                home.agent = system
                home.routing = lineage_key(wire.name, key, stream)
                if key is None:
                    home.reach = self._sibling_reach(entry, system, rungs[2])
            else:
                home, fork = parent.home, parent.continued
                parent.continued = True
                check = compare(parent.entry.stream, stream)
            self._count(home, check, fork, now)
            keys = ((where, system, chain[-1]), (where, chain[-1]))
            self._hold(_Held(entry, home, where, system, keys, number=number), number, rungs)
            before = parent.number if parent is not None else None
            return Placed(home, check, fork, entry, number, before)

    def _extended(
        self, where: Hashable, system: int, chain: list[int], items: tuple[str, ...], keyed: bool
    ) -> _Held | None:
        """The held request this one extends (or repeats), found by its own leading items:
        the longest such of the same system prompt; under a key, else the longest one it
        strictly extends whatever its system prompt (a tool set or a prompt changed
        mid-conversation, reported as its bust)."""
        for k in range(len(chain) - 1, -1, -1):
            found = self._exact_at((where, system, chain[k]), items[:k])
            if found is not None:
                return found
        if not keyed:
            return None
        for k in range(len(chain) - 2, 0, -1):
            found = self._exact_at((where, chain[k]), items[:k])
            if found is not None:
                return found
        return None

    def _exact_at(self, key: Hashable, items: tuple[str, ...]) -> _Held | None:
        number = self._exact.get(key)
        held = self._entries.get(number) if number is not None else None
        if held is None or held.entry.conversation_items != items:
            return None  # forgotten, or a hash collision
        return held

    def _measured(self, entry: Entry, where: Hashable, system: int, rungs: Rungs) -> _Held | None:
        """The held request of the same scope and system prompt that `entry` carries on by
        the continuation measure (`best_parent`), among those the anchor index offers on
        the exact rungs, else on the loose ones."""
        seen: set[int] = set()
        for found in rungs[:2]:
            offered = [
                held
                for n in self._index.candidates(found)
                if n not in seen
                and (held := self._entries.get(n)) is not None
                and held.scope == where
                and held.system == system
            ]
            seen.update(self._index.candidates(found))
            chosen = best_parent(entry, [held.entry for held in offered])
            if chosen is not None:
                return offered[chosen]
        return None

    def _sibling_reach(self, entry: Entry, system: int, wide: list[int]) -> Reach:
        """The reach a new key-less conversation starts with. Its first marker is a bet
        that it comes back; where it carries on the request of a live key-less conversation
        under another system prompt (a sibling: the same messages read by another step of
        one program, as DSPy's extraction reads its loop's trajectory), that conversation's
        reach is what the proxy has learned of where these messages move, so the bet goes
        no further. The sibling is never joined (tenants stay apart), only its reach read;
        without one, the reach is whole."""
        offered = [
            held
            for n in self._index.candidates(wide)
            if (held := self._entries.get(n)) is not None
            and held.home.key is None
            and held.system != system
        ]
        chosen = best_parent(entry, [held.entry for held in offered])
        return offered[chosen].home.reach if chosen is not None else FULL_REACH

    def _count(
        self, home: LiveConversation, check: PrefixCheck | None, fork: bool, now: float
    ) -> None:
        """Add a request to `home`'s figures: a bust narrows its reach, clean requests in a
        row restore it."""
        home.seen = now
        home.requests += 1
        home.forks += fork
        bust = check.bust if check is not None else None
        if bust is not None:
            home.busts += 1
            home.reach = home.reach.within(Reach.before(bust.section))
            home.clean = 0
        elif check is not None:
            home.clean += 1
            if home.clean >= CLEAN_TO_RESET:
                home.reach = FULL_REACH
        self._live.move_to_end(home.id)

    def answered(self, conversation: LiveConversation, usage: Usage, saved: float | None) -> None:
        """Add one answered request's prompt tokens, the part read from cache, and what the
        proxy's breakpoints saved on it (None: not priced)."""
        with self._lock:
            conversation.prompt_tokens += usage.prompt_tokens
            conversation.cached_tokens += usage.cache_read_tokens
            if saved is not None:
                conversation.saved_usd += saved
                conversation.priced = True

    def _open(self, wire: WireFormat, key: str | None, now: float) -> LiveConversation:
        opened = LiveConversation(f"wl-{secrets.token_hex(8)}", wire, key, now)
        opened.lineage = opened.id
        if key is not None:
            first, live = self._lineages.get((wire.name, key), (opened.id, 0))
            self._lineages[(wire.name, key)] = (first, live + 1)
            opened.lineage = first
            opened.parent = first if first != opened.id else None
        self._live[opened.id] = opened
        while len(self._live) > self.limit:
            self._forget(next(iter(self._live.values())))
        return opened

    def _hold(self, held: _Held, number: int, rungs: Rungs) -> None:
        home = held.home
        self._entries[number] = held
        for key in held.keys:
            self._exact[key] = number
        home.held.append(number)
        while len(home.held) > KEEP:
            self._drop(home.held.pop(0))
        self._index.add([rung for found in rungs for rung in found], number)
        self._filed += 1
        if self._filed > 2 * len(self._entries) + 64:
            self._reindex()

    def _drop(self, number: int) -> None:
        held = self._entries.pop(number, None)
        if held is None:
            return
        for key in held.keys:
            if self._exact.get(key) == number:
                del self._exact[key]

    def _expire(self, now: float) -> None:
        while self._live:
            oldest = next(iter(self._live.values()))
            if now - oldest.seen < self.idle_seconds:
                return
            self._forget(oldest)

    def _forget(self, conversation: LiveConversation) -> None:
        del self._live[conversation.id]
        if conversation.key is not None:
            lineage = (conversation.wire.name, conversation.key)
            first, live = self._lineages.get(lineage, (conversation.lineage, 1))
            if live <= 1:
                self._lineages.pop(lineage, None)
            else:
                self._lineages[lineage] = (first, live - 1)
        for number in conversation.held:
            self._drop(number)
        if self.on_forget is not None:
            self.on_forget(conversation.id)

    def _reindex(self) -> None:
        index = AnchorIndex()
        for number in sorted(self._entries):
            held = self._entries[number]
            text = "".join(held.entry.conversation_items)
            rungs = _rungs(held.scope, held.home.wire.name, held.home.key is not None, text)
            index.add([rung for found in rungs for rung in found], number)
        self._index = index
        self._filed = len(self._entries)


def _rungs(where: Hashable, wire: str, keyed: bool, text: str) -> Rungs:
    """The rungs a request is filed and looked up under: exact and loose ones in its
    scope, and, without a key, its rungs among every key-less request of its format, where
    a sibling under another system prompt is found (`LiveConversations._sibling_reach`)."""
    wide = [] if keyed else anchors(("siblings", wire), text)
    return anchors(where, text), loose_anchors(where, text), wide
