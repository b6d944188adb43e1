"""How much of an earlier request a later one carries on: the measure behind grouping.

Both requests are compared on their conversation part only (the canonical items after the
system prompt): the parameters, tools and system prompt are what every conversation of one
agent opens with, so sharing them says nothing about which conversation a request is in,
and a change there (a timestamp in the system prompt, a tool added) is a bust inside the
conversation, not a new one.

What the later request keeps of the earlier one is its longest common prefix plus the
longest tail of the earlier one found again after that prefix. A request continues an
earlier one when it extends it, or adds a step of its own (`MIN_STEP`) and has one of two
shapes: a rebuilt prompt (new text inserted before the end, the tail moved down: a rebuilt
user message, a trailing instruction below a growing trajectory) losing almost nothing of
the earlier one (`LOST_AT_MOST`: a counter or time in the moved text); or a sliding window
(the oldest turns dropped, the rest found right after the common prefix, the new turns
after it) keeping at least `WINDOW_KEEPS`. Two tasks from one template (a name and a few
numbers apart) have neither shape: their names are replaced in place, so the later adds
about what it loses, where a rebuilt prompt adds a step (`MIN_STEP`) beyond what it lost.
A compaction keeps less (a summary replaces the middle) but still opens with the same first
message, the task: `items` says how many whole leading messages the two share.

Two requests whose first turns differ by a replacement (text of the earlier first turn is
gone from the later one, not only moved by an insertion) are siblings, whatever the length
of the change: a task from a template names its own subject in its first turn, and a
conversation never rewrites the turn it started from in place (a rebuilt prompt inserts
into it; a window or a compaction keeps it or drops it whole). So whether two variants of
one template are joined never depends on how long their names are, nor on which of them a
log holds first (`first_turn_replaced`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from warmloop.wire.guard import common_prefix_length

MIN_STEP = 16
"""Characters a continuation adds, at least, unless it extends: a new step is a message (its
JSON alone is longer), while a retry whose timestamp moved adds a few."""
LOST_AT_MOST = 0.02
"""Share of the earlier request a rebuilt prompt may lose (above `MIN_STEP` characters):
the volatile values in a moved instruction (a counter, a time). Two tasks from one template
lose their names: "alpha] Review `alpha" of a 180-character first message is 17%."""
WINDOW_KEEPS = 0.5
"""Share of the earlier request a sliding window keeps, at least: the turns it did not drop,
found right after the common prefix, with the new turns after them."""


@dataclass(frozen=True)
class Continuation:
    """What a later request keeps of an earlier one's conversation part (characters)."""

    size: int
    """The earlier request's conversation part."""
    prefix: int
    """Its longest common prefix with the later one."""
    moved: int
    """Its tail after that prefix found again later in the later request."""
    extends: bool
    """The earlier conversation part is a prefix of the later one (append-only)."""
    items: int = 0
    """Leading items (whole messages) the two share."""
    grown: int = 0
    """Characters of the later request that are neither the prefix nor the moved tail."""
    window: bool = False
    """The moved tail comes right after the common prefix (the oldest turns were dropped
    and the new ones come after it), rather than after new text (a rebuilt prompt)."""
    first_turn_replaced: bool = False
    """The two first turns differ by a replacement, not an insertion: siblings from one
    template (`first_turn_replaced`)."""

    @property
    def kept(self) -> int:
        """Characters of the earlier request found again: the prefix and the moved tail."""
        return self.prefix + self.moved

    @property
    def lost(self) -> int:
        """Characters of the earlier request the later one no longer has."""
        return self.size - self.kept

    @property
    def continues(self) -> bool:
        """Whether the later request carries the earlier one on: it extends it, or adds a
        step (`MIN_STEP`) and either moves the earlier tail down losing almost nothing
        (`LOST_AT_MOST`) or drops the oldest turns keeping at least `WINDOW_KEEPS`."""
        if self.extends:
            return True
        if self.first_turn_replaced:
            return False
        if self.grown < MIN_STEP or self.kept <= 0:
            return False
        if self.window:
            return self.kept >= WINDOW_KEEPS * self.size
        # A rebuilt prompt adds a step beyond what it lost; two tasks from one template
        # replace a name in place, adding about what they lose: siblings, not a rewrite.
        if self.grown - self.lost < MIN_STEP:
            return False
        return self.lost <= max(MIN_STEP, LOST_AT_MOST * self.size)


def longest_suffix_within(tail: str, text: str) -> int:
    """Length of the longest suffix of `tail` that occurs in `text` (binary search: a suffix
    that occurs has every shorter suffix occurring too)."""
    if not tail or tail in text:
        return len(tail)
    lo, hi = 0, len(tail) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if tail[-mid:] in text:
            lo = mid
        else:
            hi = mid - 1
    return lo


def shared_items(earlier: Sequence[str], later: Sequence[str]) -> int:
    """How many leading items two conversation parts share (identity first: the audit
    interns item texts, so equal items are usually the same object)."""
    count = 0
    for a, b in zip(earlier, later, strict=False):
        if a is not b and a != b:
            break
        count += 1
    return count


def first_turn_replaced(earlier: Sequence[str], later: Sequence[str]) -> bool:
    """Whether the later request's first turn replaced text of the earlier one's (text of it
    found neither in the shared start nor in the shared end of the two), rather than only
    inserting into it or leaving it whole: two tasks from one template."""
    if not earlier or not later or earlier[0] == later[0]:
        return False
    if later[0] in earlier or earlier[0] in later:
        return False  # the first turn dropped whole (a window) or moved down whole
    a, b = earlier[0], later[0]
    start = common_prefix_length(a, b)
    end = common_prefix_length(a[start:][::-1], b[start:][::-1])
    return start + end < len(a)


def continuation(earlier: Sequence[str], later: Sequence[str]) -> Continuation:
    """What `later` keeps of `earlier` (both: conversation items as canonical text)."""
    size = sum(len(item) for item in earlier)
    whole = shared_items(earlier, later)
    prefix = sum(len(item) for item in earlier[:whole])
    if whole == len(earlier):
        grown = sum(len(item) for item in later) - prefix
        return Continuation(size, prefix, 0, True, whole, grown)
    tail = "".join(earlier[whole:])
    rest = "".join(later[whole:])
    inside = common_prefix_length(tail, rest)
    prefix += inside
    moved = longest_suffix_within(tail[inside:], rest[inside:])
    grown = len(rest) - inside - moved
    window = moved > 0 and rest.startswith(tail[len(tail) - moved :], inside)
    replaced = whole == 0 and first_turn_replaced(earlier, later)
    return Continuation(size, prefix, moved, False, whole, grown, window, replaced)
