"""The prefix guard: compares each request's wire stream with the previous one of its
conversation.

An append-only conversation makes every request's stream start with the previous one (I1).
When it does not, the guard reports a cache bust: where the streams first differ, in which
section, and the likely cause. Streams come from the payload actually sent
(`wire.stream`), so nothing the renderer does can hide from the guard. One guard serves a
conversation across runs (forks carry it on); a rewrite is a maintenance point, whose moved
prefix is measured but not reported as a bust.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from warmloop.wire.causes import Cause, classify
from warmloop.wire.stream import WireStream

EXCERPT = 40


@dataclass(frozen=True)
class Bust:
    """Where and (likely) why a request stopped extending the previous one."""

    position: int
    section: str
    cause: str
    before: str
    after: str
    kind: str = "history-rewritten"
    """The cause's stable kind (see `Cause`), for grouping busts."""

    def __str__(self) -> str:
        return (
            f"cache bust at character {self.position} ({self.section}): {self.cause}; "
            f"was {self.before!r}, now {self.after!r}"
        )


@dataclass(frozen=True)
class PrefixCheck:
    """How much of a request is a reusable prefix of the previous one. `maintenance`
    marks a request after a rewrite, where the prefix moved on purpose."""

    reusable: int
    total: int
    bust: Bust | None = None
    maintenance: bool = False

    @property
    def fraction(self) -> float:
        """Reusable share of this request's stream (1.0 for a perfect extension)."""
        return self.reusable / self.total if self.total else 1.0


def common_prefix_length(a: str, b: str) -> int:
    """Length of the longest common prefix, by bisection on slices (fast memcmp)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _item_index(stream: WireStream, position: int) -> int | None:
    offset = position - stream.head_length
    if offset < 0 or not stream.items:
        return None
    return min(bisect_right(stream.item_ends, offset), len(stream.items) - 1)


def compare(previous: WireStream, current: WireStream, context: int = EXCERPT) -> PrefixCheck:
    """How much of `current` extends `previous`, with the bust when it does not."""
    # Fast paths: the items were proven unchanged when the payload was derived (O(1)), or
    # they are the very same string objects (a C-level identity scan).
    if previous.head == current.head and (
        current.extends_items_of(previous) or previous.items == current.items[: len(previous.items)]
    ):
        return PrefixCheck(previous.length, current.length)
    old, new = previous.text, current.text
    if new.startswith(old):
        return PrefixCheck(len(old), len(new))
    position = common_prefix_length(old, new)
    before = old[position : position + context]
    after = new[position : position + context]
    if position == len(new):
        section = current.piece_at(max(position - 1, 0))[0]
        cause = Cause(
            "history-trimmed",
            "the request is shorter than the last one: history was trimmed or rebuilt",
        )
    else:
        section, start, new_piece = current.piece_at(position)
        old_piece = previous.piece_at(position)[2]
        index = _item_index(current, position)
        cause = classify(
            section,
            old_piece,
            new_piece,
            before,
            after,
            offset=position - start,
            old_items=previous.items[index:] if index is not None else (),
            new_items=current.items[index:] if index is not None else (),
        )
    bust = Bust(position, section, cause.text, before, after, cause.kind)
    return PrefixCheck(position, len(new), bust)


class PrefixGuard:
    """One conversation's guard: remembers the last request and checks the next one."""

    def __init__(self) -> None:
        self._previous: WireStream | None = None
        self._revision = 0
        self.busts: list[Bust] = []

    def copy(self) -> PrefixGuard:
        """A guard for a fork: it starts where this one is, with no busts of its own."""
        twin = PrefixGuard()
        twin._previous, twin._revision = self._previous, self._revision
        return twin

    def check(self, stream: WireStream, *, revision: int = 0) -> PrefixCheck:
        """Compare with the previous request and remember this one. A changed `revision`
        means the conversation was rewritten (a maintenance point): measured, no bust."""
        previous, self._previous = self._previous, stream
        rewritten, self._revision = revision != self._revision, revision
        if previous is None:
            return PrefixCheck(0, stream.length)
        check = compare(previous, stream)
        if rewritten:
            return PrefixCheck(check.reusable, check.total, maintenance=True)
        if check.bust is not None:
            self.busts.append(check.bust)
        return check


def opening_bust(reference: WireStream, current: WireStream) -> Bust | None:
    """The bust when `current` opens (parameters, tools, system prompt) differently from
    `reference`, an earlier fresh session of the same agent; None when they match."""
    if reference.opening == current.opening:
        return None
    old = "".join(text for _, text in reference.opening)
    new = "".join(text for _, text in current.opening)
    position = common_prefix_length(old, new)
    section, start, new_piece = current.piece_at(min(position, max(len(new) - 1, 0)))
    old_piece = reference.piece_at(min(position, max(len(old) - 1, 0)))[2]
    before = old[position : position + EXCERPT]
    after = new[position : position + EXCERPT]
    cause = classify(section, old_piece, new_piece, before, after, offset=position - start)
    return Bust(
        position,
        section,
        f"this session opens differently from the agent's earlier sessions: {cause.text}",
        before,
        after,
        cause.kind,
    )
