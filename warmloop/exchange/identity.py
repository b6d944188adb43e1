"""A request's identity from its own content and keys, never from when it came.

Three facts tell which conversation a request is in, each read from the request alone:
- its scope: the wire format and the routing key the client sent (`formats.routing_key`);
  without a key, also its system prompt (`opening`), so two tenants whose system prompts
  differ anywhere never meet, however alike their messages (under one key, a request whose
  system prompt differs continues a request only by extending it: a sub-agent's opening is
  its own, and it opens a conversation of the key's lineage);
- its item chain (`item_chain`): one hash per leading run of its conversation items, so
  the request it extends is found by looking its own prefixes up, exactly, whatever else
  came in between (an agent's append-only step, found among thousands of concurrent
  conversations without measuring any of them);
- for what extends nothing (a rebuilt prompt, a compaction), the anchors and the
  continuation measure (`anchors`, `continuation`).

A key is shown hashed (`shown_key`): Claude Code's `metadata.user_id` holds a device and a
session id, and an OpenAI `prompt_cache_key` may name a customer. The key the proxy sends for
a conversation whose client sent the provider's none is hashed too (`lineage_key`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Sequence

from warmloop.wire.stream import WireStream

SHOWN_HASH = 12
LINEAGE_HASH = 16
"""Hex digits of a SHA-256 in a key the proxy sends (`wl-` and these): a valid routing key
(`providers.routing`: 1 to 64 letters, digits, `_`, `-`)."""
"""Hex digits of a key's SHA-256 shown on the status page: enough to tell keys apart."""


def opening(stream: WireStream) -> int:
    """A hash of a request's system prompt (its system items too, where the format keeps
    them among the messages): who the agent is. The tools and the request parameters are
    not in it: tools found mid-conversation or a setting switched is a bust inside the
    conversation, not a new one."""
    pieces = tuple(text for label, text in stream.head if label == "system")
    return hash((pieces, tuple(stream.items[: stream.system_items])))


def scope(wire: str, key: str | None, stream: WireStream) -> Hashable:
    """Where a request's conversation is looked for: its format and key, and, without a
    key, its opening."""
    return (wire, key) if key is not None else (wire, None, opening(stream))


def item_chain(items: Sequence[str]) -> list[int]:
    """Hashes of each leading run of `items`: entry k stands for the first k items (entry
    0 for none). Equal runs hash equal; a collision is ruled out by comparing the items."""
    chain = [hash(())]
    for item in items:
        chain.append(hash((chain[-1], item)))
    return chain


def shown_key(key: str | None) -> str | None:
    """A routing key as the status page shows it: the field it came from and a short
    SHA-256 of its value, never the value (`metadata.user_id#3f2a9c1d0b7e`)."""
    if key is None:
        return None
    name, _, value = key.partition("=")
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{name}#{digest[:SHOWN_HASH]}"


def lineage_key(wire: str, key: str | None, stream: WireStream) -> str:
    """The routing key the proxy sends for a conversation whose client sent none of its
    provider's: `wl-` and a SHA-256 of what names the conversation's lineage, never the
    client's own value (a `user` may name a tenant, Claude Code's `metadata.user_id` holds a
    session id). With the client's key (`user`, `metadata.user_id`), the format and that key:
    a parent and its sub-agents share it, as they share a lineage, and read the opening one
    of them wrote. Without, the format, the system prompt and the first conversation item
    (the task): every request of the conversation carries it, and it outlives the proxy (a
    conversation resumed after a restart keeps the key its cache entries are under)."""
    if key is not None:
        named: tuple[object, ...] = (wire, key)
    else:
        system = tuple(text for label, text in stream.head if label == "system")
        task = stream.items[: stream.system_items + 1]
        named = (wire, system, tuple(task))
    digest = hashlib.sha256(repr(named).encode("utf-8", "surrogatepass")).hexdigest()
    return f"wl-{digest[:LINEAGE_HASH]}"
