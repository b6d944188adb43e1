"""The live proxy's conversations: which conversation each request belongs to, as it comes.

Grouped as the audit groups a log (`exchange.grouping`): a request with a routing key
(`prompt_cache_key`, `metadata.user_id`, `user`) belongs to the conversation of that key
and format; one without continues the earlier request it carries on (the anchor index
offers the candidates, `best_parent` measures them), else it opens a conversation. Each
conversation gets an id of its own (`wl-` and 16 hex digits), the routing key the proxy
sends for it where a fix asks for one, and the last request it saw, for the live guard.

Memory is bounded: a conversation idle for `idle_seconds` is forgotten, and past `limit`
conversations the least recently used one is; each keeps only its latest `KEEP` requests.
The anchor index is rebuilt from the requests still held once more than half its entries
name forgotten ones.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from warmloop.exchange.anchors import AnchorIndex, anchors
from warmloop.exchange.formats import logged_layout, routing_key
from warmloop.exchange.grouping import Entry, best_parent
from warmloop.exchange.log import LoggedRequest
from warmloop.facts.usage import Usage
from warmloop.providers.records import WireFormat
from warmloop.wire.guard import PrefixCheck, compare
from warmloop.wire.stream import canonical_stream

IDLE_SECONDS = 3600.0
"""A conversation with no request for this long is forgotten (past every cache's TTL but
Anthropic's and OpenAI's longest, whose conversations resume as new ones)."""
LIMIT = 10_000
"""Conversations held at most; past it the least recently used is forgotten."""
KEEP = 2
"""Requests held per conversation: the newest, and the one before it for a fork."""


@dataclass
class LiveConversation:
    """One live conversation: its id, what it was keyed by, its newest requests, and its
    running figures for the status page."""

    id: str
    wire: WireFormat
    key: str | None
    seen: float
    requests: int = 0
    busts: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    saved_usd: float = 0.0
    """What the breakpoints the proxy placed saved, against the same requests without
    them (no cache at all on a wire that caches only at markers); the write premium of a
    conversation's first request counts against it."""
    priced: bool = False
    """Whether any saving was priced (the model has prices in the table)."""
    held: list[int] = field(default_factory=list)
    """The numbers of its requests still held, oldest first."""


@dataclass(frozen=True)
class Placed:
    """Where a request went: its conversation, and how it extends the request before it
    (None for a conversation's first)."""

    conversation: LiveConversation
    check: PrefixCheck | None


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
        self._keyed: dict[tuple[str, str], str] = {}
        self._entries: dict[int, tuple[Entry, LiveConversation]] = {}
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
            stream = canonical_stream(body, logged_layout(wire))
        except (TypeError, KeyError, AttributeError, ValueError, RecursionError):
            return None
        key = routing_key(body)
        with self._lock:
            now = self.clock()
            self._expire(now)
            number = self._next
            self._next += 1
            entry = Entry(LoggedRequest(number, {}), wire, stream, key)
            rungs = anchors((wire.name, key), "".join(entry.conversation_items))
            offered = [n for n in self._index.candidates(rungs) if n in self._entries]
            parent = self._parent(entry, offered)
            home: LiveConversation | None = None
            if key is not None:
                found = self._keyed.get((wire.name, key))
                home = self._live.get(found) if found is not None else None
                if home is None:
                    home = self._open(wire, key, now)
                    self._keyed[(wire.name, key)] = home.id
                if parent is None or parent[1] is not home:
                    newest = home.held[-1] if home.held else None
                    parent = self._entries[newest] if newest is not None else None
            elif parent is not None:
                home = parent[1]
            else:
                home = self._open(wire, None, now)
            check = compare(parent[0].stream, stream) if parent is not None else None
            home.seen = now
            home.requests += 1
            if check is not None and check.bust is not None:
                home.busts += 1
            self._live.move_to_end(home.id)
            self._hold(home, entry, number, rungs)
            return Placed(home, check)

    def _parent(self, entry: Entry, offered: list[int]) -> tuple[Entry, LiveConversation] | None:
        """The held request `entry` continues: the first offered one it extends whole (the
        deepest shared anchor first, so the longest; an agent's common case, found without
        measuring the rest), else the one `best_parent` measures best."""
        mine = entry.conversation_items
        for number in offered:
            theirs = self._entries[number][0].conversation_items
            if theirs and len(theirs) <= len(mine) and mine[: len(theirs)] == theirs:
                return self._entries[number]
        chosen = best_parent(entry, [self._entries[n][0] for n in offered])
        return self._entries[offered[chosen]] if chosen is not None else None

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
        self._live[opened.id] = opened
        while len(self._live) > self.limit:
            self._forget(next(iter(self._live.values())))
        return opened

    def _hold(self, home: LiveConversation, entry: Entry, number: int, rungs: list[int]) -> None:
        self._entries[number] = (entry, home)
        home.held.append(number)
        while len(home.held) > KEEP:
            self._entries.pop(home.held.pop(0), None)
        self._index.add(rungs, number)
        self._filed += 1
        if self._filed > 2 * len(self._entries) + 64:
            self._reindex()

    def _expire(self, now: float) -> None:
        while self._live:
            oldest = next(iter(self._live.values()))
            if now - oldest.seen < self.idle_seconds:
                return
            self._forget(oldest)

    def _forget(self, conversation: LiveConversation) -> None:
        del self._live[conversation.id]
        if conversation.key is not None:
            self._keyed.pop((conversation.wire.name, conversation.key), None)
        for number in conversation.held:
            self._entries.pop(number, None)
        if self.on_forget is not None:
            self.on_forget(conversation.id)

    def _reindex(self) -> None:
        index = AnchorIndex()
        for number in sorted(self._entries):
            entry, _ = self._entries[number]
            scope = (entry.wire.name, entry.key)
            index.add(anchors(scope, "".join(entry.conversation_items)), number)
        self._index = index
        self._filed = len(self._entries)
