"""Group logged requests into conversations, and find the request each one continues.

A request continues the earlier request whose conversation part (the canonical items after
the system prompt) it carries on, at the character level (`continuation`): it extends it,
or keeps at least 80% of it as a prefix plus a tail found again further on (a rebuilt user
message that grows in the middle, a trailing instruction that moves below each new step, a
sliding window that drops the oldest turns). Of the candidates the anchor index offers
(`anchors`: never a scan of every conversation), the one it keeps most of, less what it
drops, wins: the longest one it extends, when it extends one (a fork that continues one
conversation twice continues the request both branches extend). Its parent's conversation
is its own: the requests one request tree holds, branches included, are one conversation,
and each request is measured against its parent, never against whatever request of another
branch came just before it.

A request with a routing key (`prompt_cache_key`, `metadata.user_id`, `user`) belongs to
the conversation of that key and format, whatever it shares; inside it, it continues the
request it carries on, else the latest one of the key. Without a key, a request that
continues nothing opens a new conversation, so two tasks behind the same system prompt and
tools are two conversations; one that only shares whole leading messages (the task, with a
summary in place of the turns after it) continues the request it shares most of them with,
so a compaction is reported as a bust inside its conversation.
Two runs of the very same task without a key read as one conversation (a fork): send a
routing key to tell them apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from warmloop.exchange.anchors import AnchorIndex, anchors, loose_anchors
from warmloop.exchange.continuation import Continuation, continuation
from warmloop.exchange.identity import shown_key
from warmloop.exchange.log import LoggedRequest
from warmloop.providers.records import WireFormat
from warmloop.wire.guard import compare
from warmloop.wire.stream import WireStream


@dataclass(frozen=True)
class Entry:
    """A logged request with its format, canonical stream and routing key. The record may
    hold only the facts of its body the audit reads later (`log.slim`), and `blocks` the
    Anthropic blocks (texts, cache markers) taken from the whole body before it went."""

    record: LoggedRequest
    wire: WireFormat
    stream: WireStream
    key: str | None
    blocks: tuple[tuple[str, ...], tuple[str | None, ...]] | None = None
    format_known: bool = False
    """Whether the log's endpoint path named the format (not guessed from the body's
    shape): its usage is then read by that format's own reader."""

    @property
    def conversation_items(self) -> tuple[str, ...]:
        """The canonical items after the system prompt: what tells conversations apart."""
        return tuple(self.stream.items[self.stream.system_items :])


@dataclass
class Conversation:
    """The entries of one conversation, in log order, and the one each continues."""

    number: int
    wire: WireFormat
    key: str | None
    entries: list[Entry] = field(default_factory=list)
    parents: list[int | None] = field(default_factory=list)
    """Per entry, the index in `entries` of the request it continues (None: the first)."""

    @property
    def label(self) -> str:
        """How people see it: its number and its key, when it has one, hashed as the
        proxy's status page shows it (`identity.shown_key`: Claude Code's
        `metadata.user_id` holds a device and a session id)."""
        return f"conversation {self.number}" + (f" ({shown_key(self.key)})" if self.key else "")

    def add(self, entry: Entry, parent: int | None) -> int:
        """Append `entry` continuing entry `parent` (None or -1: none); returns its index."""
        self.entries.append(entry)
        self.parents.append(parent if parent is not None and parent >= 0 else None)
        return len(self.entries) - 1


def _score(found: Continuation) -> tuple[int, int] | None:
    if found.continues:  # an extension scores its whole size: the longest one wins
        return 2, found.kept - found.lost
    if found.items:
        return 1, found.items  # same task, middle replaced: a compaction
    return None


def best_parent(entry: Entry, candidates: Sequence[Entry]) -> int | None:
    """The index in `candidates` of the request `entry` continues, or None: the one it keeps
    most of less what it drops (the longest one it extends, when it extends one), else (a
    compaction) the one it shares most whole leading messages with; a tie goes to the
    earliest index (candidates come latest first)."""
    mine = entry.conversation_items
    best: tuple[int, int] | None = None
    chosen: int | None = None
    for number, candidate in enumerate(candidates):
        score = _score(continuation(candidate.conversation_items, mine))
        if score is not None and (best is None or score > best):
            best, chosen = score, number
    return chosen


def rewrites(entry: Entry, trunk: Entry, tip: Entry) -> bool:
    """Whether `entry`, which carries on `trunk`, rewrites the newest request `tip` of the
    line that already continues `trunk` (a compaction, a cleared tool result, a sliding
    window), rather than forking a second line from `trunk`: it shares more whole messages
    with the tip than the trunk has, keeps more than half of what the tip added after the
    trunk, or puts a summary in place of the tip's turns."""
    base = trunk.conversation_items
    found = continuation(tip.conversation_items, entry.conversation_items)
    trunk_size = sum(len(item) for item in base)
    if found.items > len(base) or found.kept - trunk_size > (found.size - trunk_size) / 2:
        return True
    bust = compare(tip.stream, entry.stream).bust
    return bust is not None and bust.kind == "messages-summarised"


class _Placed:
    """Where each grouped entry went, and which request each line continues newest."""

    def __init__(self) -> None:
        self.at: list[tuple[Conversation, int]] = []  # per entry: conversation and index
        self.newest: dict[tuple[int, int], int] = {}  # (conversation, entry) -> continuation
        self._tips: dict[tuple[int, int], int] = {}  # the tip found last, to walk on from

    def tip(self, conversation: Conversation, at: int) -> int:
        """The newest request down the line that continues entry `at` (a line only grows,
        so the walk goes on from the tip found last time: no line is walked twice)."""
        start = (conversation.number, at)
        at = self._tips.get(start, at)
        while (following := self.newest.get((conversation.number, at))) is not None:
            at = following
        self._tips[start] = at
        return at

    def parent(self, entry: Entry, number: int | None) -> tuple[Conversation, int] | None:
        """Where the request `entry` continues (grouped entry `number`) really is: that
        request, or the newest of its line when `entry` rewrites that line."""
        if number is None:
            return None
        home, trunk = self.at[number]
        if (home.number, trunk) in self.newest:  # a branch: a fork, unless it rewrites
            tip = self.tip(home, trunk)
            if rewrites(entry, home.entries[trunk], home.entries[tip]):
                return home, tip
        return home, trunk

    def add(self, home: Conversation, entry: Entry, at: int) -> None:
        mine = home.add(entry, at)
        if at >= 0:
            self.newest[(home.number, at)] = mine
        self.at.append((home, mine))


def group(entries: Sequence[Entry]) -> list[Conversation]:
    """Conversations in order of their first request, each entry with its parent."""
    conversations: list[Conversation] = []
    keyed: dict[tuple[str, str], Conversation] = {}
    placed = _Placed()
    index = AnchorIndex()
    for number, entry in enumerate(entries):
        text = "".join(entry.conversation_items)
        rungs = anchors((entry.wire.name, entry.key), text)
        loose = loose_anchors((entry.wire.name, entry.key), text)
        offered = index.candidates(rungs)
        chosen = best_parent(entry, [entries[n] for n in offered])
        if chosen is None:  # a value written first (an iteration number): the loose rungs
            offered = [n for n in index.candidates(loose) if n not in offered]
            chosen = best_parent(entry, [entries[n] for n in offered])
        parent = placed.parent(entry, offered[chosen] if chosen is not None else None)
        if entry.key is not None:
            found = keyed.get((entry.wire.name, entry.key))
            if found is None:
                found = Conversation(len(conversations) + 1, entry.wire, entry.key)
                keyed[(entry.wire.name, entry.key)] = found
                conversations.append(found)
            # The scope holds the key: a parent found is in this conversation.
            placed.add(found, entry, parent[1] if parent is not None else len(found.entries) - 1)
        elif parent is not None:
            placed.add(parent[0], entry, parent[1])
        else:
            fresh = Conversation(len(conversations) + 1, entry.wire, None)
            conversations.append(fresh)
            placed.add(fresh, entry, -1)
        index.add([*rungs, *loose], number)
    return conversations
