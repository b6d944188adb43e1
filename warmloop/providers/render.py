"""Rendering transcripts to a wire format, a step's work proportional to what is new.

A transcript is append-only between rewrites, and a rewrite bumps its revision: so while the
same transcript object is at the same revision, everything rendered so far is still right,
and only the messages after it need rendering. The key is the transcript's own (`key`:
branch id, revision and object), so no branch or revision is ever served another's bytes.

Every wire format has the same shape (the `*_format` modules): `wire_tools` (the tools'
wire form), `wire_messages` (new messages added to the `Wire` rendered so far, as a new
`Wire`), `parse_reply` and `parse_usage`. A `Renderer` puts the first two into a payload,
each part where the format's `WireLayout` says it goes. A `Wire` is a value: a payload
handed out never changes, and an unchanged message is the same object in every payload,
which is what lets the canonical stream re-serialise only what is new.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, TypeVar

from warmloop.messages import JsonValue, Message
from warmloop.providers.base import Rendered
from warmloop.tools.schema import ToolSpec
from warmloop.transcript import Transcript
from warmloop.wire.stream import Canonicalizer, ConversationList, ItemsProof, WireLayout
from warmloop.wire.views import Prefix

WireTools = list[dict[str, JsonValue]]


@dataclass(frozen=True)
class Wire:
    """A transcript's visible messages in one wire format, as far as rendered: the system
    part (the value at the layout's system path, None when there is none) and the
    conversation items, in order (a view: `Growing` extends the list under it in place
    while no later `Wire` has, so a step copies none of the history)."""

    system: Any = None
    items: Sequence[Any] = ()


W = TypeVar("W", bound=Wire)
T = TypeVar("T")


class Growing(Generic[T]):
    """A `Wire`'s items as `wire_messages` grows them: the kept ones stay where they are,
    new ones go to a list, and the last item may be replaced (a turn joined); `items` is
    the result, a view of the kept ones' list extended in place (no copy) unless a kept
    item was replaced or another view already grew that list."""

    def __init__(self, items: Sequence[T]) -> None:
        self._kept = items
        self._cut = len(items)
        self._new: list[T] = []

    def __bool__(self) -> bool:
        return bool(self._new) or self._cut > 0

    @property
    def last(self) -> T:
        return self._new[-1] if self._new else self._kept[self._cut - 1]

    @last.setter
    def last(self, item: T) -> None:
        if self._new:
            self._new[-1] = item
        else:
            self._cut -= 1
            self._new.append(item)

    def append(self, item: T) -> None:
        self._new.append(item)

    def extend(self, items: Iterable[T]) -> None:
        self._new.extend(items)

    def items(self) -> Sequence[T]:
        if not self._new and self._cut == len(self._kept):
            return self._kept
        if self._cut == len(self._kept) and isinstance(self._kept, Prefix):
            return self._kept.extended(self._new)
        return Prefix([*self._kept[: self._cut], *self._new])


class AppendMemo:
    """Which prefix of which transcript (branch, revision, object) a renderer has rendered."""

    def __init__(self) -> None:
        self._key: tuple[str, int, int] | None = None
        self._done = 0

    def sync(self, transcript: Transcript) -> tuple[int, Iterator[Message]]:
        """Where rendering resumes (0: start over) and the visible messages from there.
        They count as rendered once `done` is called, so a render that fails part way
        leaves the memo naming only what was rendered before it."""
        if transcript.key != self._key or self._done > len(transcript):
            self._key, self._done = transcript.key, 0
        return self._done, (message for _, message in transcript.visible(self._done))

    def done(self, transcript: Transcript) -> None:
        """Everything in `transcript` is rendered."""
        self._key, self._done = transcript.key, len(transcript)


class ToolsMemo:
    """The tools' wire form, rebuilt only when the tools change (the same list object is
    handed out while they do not, so the canonical stream reuses its serialisation)."""

    def __init__(self, wire_tools: Callable[[Sequence[ToolSpec]], WireTools]) -> None:
        self._wire_tools = wire_tools
        self._tools: tuple[ToolSpec, ...] | None = None
        self._value: WireTools = []

    def get(self, tools: Sequence[ToolSpec]) -> WireTools:
        key = tuple(tools)
        if key != self._tools:
            self._tools = key
            self._value = self._wire_tools(key)
        return self._value


class Renderer(Generic[W]):
    """Renders transcripts to payloads of one wire format: `head` (model and parameters)
    with the tools, the system part and the conversation put where `layout` says, the
    messages memoised (`wire_messages` sees only what is new)."""

    def __init__(
        self,
        head: Mapping[str, Any],
        layout: WireLayout,
        empty: W,
        wire_tools: Callable[[Sequence[ToolSpec]], WireTools],
        wire_messages: Callable[[W, Iterable[Message]], W],
    ) -> None:
        self.head = dict(head)
        self.layout = layout
        self._empty = empty
        self._wire = empty
        self._wire_messages = wire_messages
        self._memo = AppendMemo()
        self._tools = ToolsMemo(wire_tools)
        self._canon = Canonicalizer(layout)
        self._conversation = ConversationList()
        """The conversation list the last `payload` built (a subclass that changes the
        payload copies it, which leaves the renderer's proof unused)."""

    def render(self, transcript: Transcript, tools: Sequence[ToolSpec]) -> Rendered:
        """Pure: the same transcript and tools give the same payload and stream."""
        start, new = self._memo.sync(transcript)
        previous = self._wire if start else self._empty
        self._wire = self._wire_messages(previous, new)
        self._memo.done(transcript)
        payload = self.payload(self._wire, tools)
        old, now = previous.items, self._wire.items
        # `wire_messages` keeps every earlier item object but may replace the last ones
        # (a turn joined): walk back from the end to the first one it kept.
        kept = min(len(old), len(now))
        while kept and now[kept - 1] is not old[kept - 1]:
            kept -= 1
        proof = ItemsProof(self._conversation, now, old, kept)
        return self.rendered(payload, transcript, proof)

    def rendered(
        self, payload: dict[str, Any], transcript: Transcript, proof: ItemsProof | None = None
    ) -> Rendered:
        """`payload` as this renderer's Rendered (its stream derived on first use, with
        what `proof` says of its conversation list)."""
        derive = self._canon.stream if proof is None else partial(self._canon.stream, proof=proof)
        return Rendered(payload, derive, transcript.assistant_turns(), self.layout.name)

    def payload(self, wire: W, tools: Sequence[ToolSpec]) -> dict[str, Any]:
        """The request: the head, then the tools, the system part and the conversation."""
        layout = self.layout
        payload = dict(self.head)
        for path in (layout.tools, layout.system, layout.conversation):
            if path and len(path) > 1 and isinstance(payload.get(path[0]), dict):
                payload[path[0]] = dict(payload[path[0]])  # never the head's own
        if tools and layout.tools:
            _put(payload, layout.tools, self._tools.get(tools))
        if wire.system is not None and layout.system:
            _put(payload, layout.system, wire.system)
        items = wire.items  # the one copy a step makes: the SDK keeps the list it is given
        self._conversation = ConversationList(
            items.to_list() if isinstance(items, Prefix) else items
        )
        _put(payload, layout.conversation, self._conversation)
        return payload


def _put(payload: dict[str, Any], path: tuple[str, ...], value: object) -> None:
    node = payload
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
