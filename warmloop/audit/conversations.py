"""Group logged requests into conversations.

A request with a routing key (`prompt_cache_key`, `metadata.user_id`, `user`) belongs to the
conversation of that key and format. A request without one joins the open conversation
(same format, no key) whose latest request shares the most leading conversation items with
it, system prompt left aside: so a conversation whose system prompt changes every request
(a timestamp in it) or whose tools move stays one conversation, and the bust is reported
inside it. It needs at least its first item (the task) in common; otherwise it opens a new
conversation. Two runs of the very same task without a key therefore read as one
conversation: send a routing key to tell them apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from warmloop.audit.formats import WireFormat
from warmloop.audit.log import LoggedRequest
from warmloop.cache.wire import WireStream


@dataclass(frozen=True)
class Entry:
    """A logged request with its format, canonical stream and routing key."""

    record: LoggedRequest
    wire: WireFormat
    stream: WireStream
    key: str | None


@dataclass
class Conversation:
    """The entries of one conversation, in log order."""

    number: int
    wire: WireFormat
    key: str | None
    entries: list[Entry] = field(default_factory=list)

    @property
    def label(self) -> str:
        """How people see it: its number and its key, when it has one."""
        return f"conversation {self.number}" + (f" ({self.key})" if self.key else "")


def shared_items(previous: WireStream, current: WireStream) -> int:
    """How many leading conversation items (after the system prompt) two requests share."""
    mine = current.items[current.system_items :]
    theirs = previous.items[previous.system_items :]
    count = 0
    for a, b in zip(mine, theirs, strict=False):
        if a != b:
            break
        count += 1
    return count


def group(entries: Sequence[Entry]) -> list[Conversation]:
    """Conversations in order of their first request."""
    conversations: list[Conversation] = []
    keyed: dict[tuple[str, str], Conversation] = {}
    for entry in entries:
        if entry.key is not None:
            found = keyed.get((entry.wire.name, entry.key))
            if found is None:
                found = Conversation(len(conversations) + 1, entry.wire, entry.key)
                keyed[(entry.wire.name, entry.key)] = found
                conversations.append(found)
            found.entries.append(entry)
            continue
        best, best_score = None, (0, -1)
        for conversation in conversations:
            if conversation.key is not None or conversation.wire != entry.wire:
                continue
            shared = shared_items(conversation.entries[-1].stream, entry.stream)
            # A tie goes to the conversation used most recently.
            score = (shared, conversation.entries[-1].record.line)
            if shared and score > best_score:
                best, best_score = conversation, score
        if best is None:
            best = Conversation(len(conversations) + 1, entry.wire, None)
            conversations.append(best)
        best.entries.append(entry)
    return conversations
