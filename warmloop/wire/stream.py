"""The canonical wire stream of a request: what the prefix guard and the audit compare.

A request's stream is derived from the payload that is actually sent, never built beside
it: the request parameters (sorted, routing keys removed), then the tools, the system
prompt and each conversation item exactly as serialised on the wire, with cache markers
removed at every depth. An append-only session makes each stream a prefix of the next.
Which keys hold the conversation, the tools and the system prompt is a `WireLayout`, one
per wire format (each defined in its provider's folder). Section labels (`request`,
`tools`, `system`, `message <i>`) come from that structure.

A `Canonicalizer` remembers the items it serialised last time by identity (renderers hand
out the same wire objects for unchanged messages and never mutate them), so a step costs
work only for what is new; a stream's pieces are views (`views.Prefix`) of the lists it
keeps, never copied.
"""

from __future__ import annotations

import json
import operator
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import overload

from warmloop.wire.views import Prefix

CACHE_MARKERS = frozenset({"cache_control"})
ROUTING_KEYS = frozenset({"prompt_cache_key", "user", "safety_identifier", "metadata"})


@dataclass(frozen=True)
class WireLayout:
    """Where a wire format keeps its parts: key paths into the request body.

    `system_roles`: leading conversation items with one of these roles are the system
    prompt (Chat Completions puts it in `messages`).
    """

    name: str
    conversation: tuple[str, ...]
    tools: tuple[str, ...] | None = None
    system: tuple[str, ...] | None = None
    system_roles: frozenset[str] = frozenset()
    markers: frozenset[str] = CACHE_MARKERS
    routing: frozenset[str] = ROUTING_KEYS
    unprompted: tuple[tuple[str, ...], ...] = ()
    """Nested request keys that are no part of the prompt (left out, and a container they
    leave empty with them): OpenAI's `prompt_cache_options.comparison_response_id`."""


def dumps(value: object, *, sort_keys: bool = False) -> str:
    """Compact wire JSON: key order kept (unless sorted), UTF-8 kept."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys)


@overload
def strip_keys(value: dict[str, object], keys: frozenset[str]) -> dict[str, object]: ...


@overload
def strip_keys(value: object, keys: frozenset[str]) -> object: ...


def strip_keys(value: object, keys: frozenset[str]) -> object:
    """`value` with `keys` removed at every depth (the original is never changed)."""
    if isinstance(value, dict):
        return {k: strip_keys(v, keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list | tuple):
        return [strip_keys(v, keys) for v in value]
    return value


def _get(payload: Mapping[str, object], path: tuple[str, ...]) -> object:
    value: object = payload
    for key in path:
        if not isinstance(value, Mapping) or key not in value:
            return None
        value = value[key]
    return value


def _conversation(payload: Mapping[str, object], path: tuple[str, ...]) -> Sequence[object]:
    """The conversation items at `path` (none when the key is absent or empty)."""
    items = _get(payload, path) or []
    if not isinstance(items, Sequence):
        raise TypeError(f"the conversation at {'.'.join(path)} is not a list")
    return items


def without_paths(
    payload: Mapping[str, object], paths: Iterable[tuple[str, ...]]
) -> dict[str, object]:
    """A copy of `payload` without the values at `paths` (containers copied on the way)."""
    out = dict(payload)
    for path in paths:
        node = out
        for key in path[:-1]:
            child = node.get(key)
            if not isinstance(child, Mapping):
                break
            node[key] = node = dict(child)
        else:
            node.pop(path[-1], None)
    return out


@dataclass(frozen=True, eq=False)
class WireStream:
    """A request's canonical stream as labelled pieces: `head` pieces (request, tools,
    system), then one piece per conversation item (`items`, each ending with a comma)."""

    head: tuple[tuple[str, str], ...]
    items: Sequence[str]
    """A tuple, or a view of the deriving canonicalizer's list (`Prefix`)."""
    item_ends: Sequence[int] = field(repr=False)
    """Cumulative end offsets of `items` within the items part."""
    system_items: int = 0
    """How many leading items are the system prompt (labelled `system`)."""
    lineage: tuple[object, int, int] | None = field(default=None, repr=False)
    """(canonicalizer, this derivation's number, items kept from the derivation before):
    lets the guard see in O(1) that the conversation items of the previous derivation
    were all found again, unchanged objects, in this payload."""

    def extends_items_of(self, previous: WireStream) -> bool:
        """Whether this stream's items start with all of `previous`'s items, as proven by
        identity checks on the payload when it was derived (no text comparison needed)."""
        mine, theirs = self.lineage, previous.lineage
        return (
            mine is not None
            and theirs is not None
            and mine[0] is theirs[0]
            and mine[1] == theirs[1] + 1
            and mine[2] == len(previous.items)
        )

    @cached_property
    def head_length(self) -> int:
        return sum(len(text) for _, text in self.head)

    @property
    def length(self) -> int:
        """Characters in the whole stream (no join needed)."""
        return self.head_length + (self.item_ends[-1] if self.item_ends else 0)

    @cached_property
    def text(self) -> str:
        """The whole stream as one string."""
        return "".join(text for _, text in self.head) + "".join(self.items)

    @property
    def opening(self) -> tuple[tuple[str, str], ...]:
        """What every session of one agent sends first: parameters, tools, system prompt."""
        system = tuple(("system", text) for text in self.items[: self.system_items])
        return self.head + system

    def label(self, index: int) -> str:
        """The section of item `index`."""
        return "system" if index < self.system_items else f"message {index}"

    def piece_at(self, position: int) -> tuple[str, int, str]:
        """The section holding character `position`: its label, start and text (the last
        piece when `position` is at or past the end)."""
        offset = 0
        for number, (label, text) in enumerate(self.head):
            if position < offset + len(text) or (number == len(self.head) - 1 and not self.items):
                return label, offset, text
            offset += len(text)
        if not self.items:
            return "request", 0, ""
        index = min(bisect_right(self.item_ends, position - offset), len(self.items) - 1)
        start = offset + (self.item_ends[index - 1] if index else 0)
        return self.label(index), start, self.items[index]


class ConversationList(list):  # type: ignore[type-arg]
    """The conversation list a renderer puts in a payload: a plain list to the SDK and to
    JSON, which notes any change made to it in place (`changed`), so a payload that someone
    edited after rendering is compared item by item, never taken on the renderer's word."""

    changed = False


def _noting(name: str) -> Callable[..., object]:
    method = getattr(list, name)

    def changing(self: ConversationList, *args: object) -> object:
        self.changed = True
        return method(self, *args)

    changing.__name__ = name
    return changing


for _name in (
    "__setitem__",
    "__delitem__",
    "__iadd__",
    "__imul__",
    "append",
    "extend",
    "insert",
    "pop",
    "remove",
    "clear",
    "sort",
    "reverse",
):
    setattr(ConversationList, _name, _noting(_name))


@dataclass(frozen=True, eq=False)
class ItemsProof:
    """What a renderer knows of the conversation list it put in a payload, so the stream's
    derivation need not compare every item by identity (O(history) each step): `items` was
    built as a copy of `source` (the renderer's items now), whose first `kept` items are
    the very objects of `previous` (its items the render before). Payloads are values
    (never changed once handed out), so while the payload still holds `items` it holds
    them, unless a tampering caller changed the list in place (`ConversationList` notes
    it); any other list, or a changed one, is compared item by item."""

    items: ConversationList
    source: Sequence[object]
    previous: Sequence[object]
    kept: int


class Canonicalizer:
    """Derives `WireStream`s from payloads of one layout, re-serialising only what is new."""

    def __init__(self, layout: WireLayout) -> None:
        self.layout = layout
        self._items: list[object] = []
        self._texts: list[str] = []
        self._ends: list[int] = []
        self._small: dict[int, tuple[object, str]] = {}
        self._derived = 0
        self._source: Sequence[object] | None = None
        """The renderer's items `_items` holds, object for object (None: unknown)."""

    def stream(self, payload: Mapping[str, object], proof: ItemsProof | None = None) -> WireStream:
        """The canonical stream of `payload` (`proof`: what its renderer knows of it)."""
        layout = self.layout
        parts = [p for p in (layout.conversation, layout.tools, layout.system) if p]
        head_value = strip_keys(without_paths(payload, parts), layout.markers)
        for nested in layout.unprompted:
            head_value = without_paths(head_value, [nested])
            container = _get(head_value, nested[:-1]) if len(nested) > 1 else None
            if container == {}:
                head_value = without_paths(head_value, [nested[:-1]])
        for key in layout.routing:
            head_value.pop(key, None)
        head: list[tuple[str, str]] = [("request", dumps(head_value, sort_keys=True))]
        small: dict[int, tuple[object, str]] = {}
        for label, path in (("tools", layout.tools), ("system", layout.system)):
            value = _get(payload, path) if path else None
            if value is not None:
                head.append((label, self._value_text(value, small)))
        self._small = small
        items = _conversation(payload, layout.conversation)
        kept = self._sync(items, proof)
        self._derived += 1
        system_items = 0
        if layout.system_roles:
            for item in items:
                if not (isinstance(item, Mapping) and item.get("role") in layout.system_roles):
                    break
                system_items += 1
        return WireStream(
            tuple(head),
            Prefix(self._texts),
            Prefix(self._ends),
            system_items,
            (self, self._derived, kept),
        )

    def _one(self, value: object, small: dict[int, tuple[object, str]]) -> str:
        found = self._small.get(id(value))
        text = (
            found[1]
            if found is not None and found[0] is value
            else dumps(strip_keys(value, self.layout.markers))
        )
        small[id(value)] = (value, text)
        return text

    def _value_text(self, value: object, small: dict[int, tuple[object, str]]) -> str:
        """Tools or system as wire JSON; a list element by element, so a copied list whose
        elements are unchanged costs no serialisation."""
        if isinstance(value, list):
            return "[" + ",".join(self._one(v, small) for v in value) + "]"
        return self._one(value, small)

    def _sync(self, items: Sequence[object], proof: ItemsProof | None = None) -> int:
        """Keep the serialised items that are still the same objects; serialise the rest.
        Returns how many were kept."""
        known = self._items
        keep = min(len(known), len(items))
        intact = (  # the very list its renderer built, unchanged: a copy of `source`
            proof is not None
            and proof.items is items
            and not proof.items.changed
            and len(items) == len(proof.source)
        )
        if proof is not None and intact and self._source is proof.previous:
            keep = min(keep, proof.kept)  # the renderer's word: no scan of the history
        # map stops at the shorter sequence: every known item is checked, none is copied.
        elif keep and not all(map(operator.is_, items, known)):
            keep = next(i for i in range(keep) if items[i] is not known[i])
        self._source = proof.source if proof is not None and intact else None
        if keep < len(known):  # new lists: the streams handed out view the old ones
            self._items, self._texts = self._items[:keep], self._texts[:keep]
            self._ends = self._ends[:keep]
        end = self._ends[-1] if self._ends else 0
        markers = self.layout.markers
        for item in items[keep:]:
            text = dumps(strip_keys(item, markers)) + ","
            end += len(text)
            self._items.append(item)
            self._texts.append(text)
            self._ends.append(end)
        return keep


def canonical_stream(payload: Mapping[str, object], layout: WireLayout) -> WireStream:
    """The canonical stream of one payload (no memory between calls)."""
    return Canonicalizer(layout).stream(payload)
