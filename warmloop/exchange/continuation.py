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
message, the task: `items` says how many whole leading messages the two share; a summary
that replaces the oldest turns keeps the newest ones, found after a summary shorter than
what it replaced (`summarised`).

A rebuilt prompt may also reword the instruction it moves down (a framework's closing
instruction names the output its next step asks for, and its last step asks for another):
the instruction's start is then found again after the new step, its end at the end, and
only its middle is lost. Found again after at least a step (`MIN_STEP`) of new text, and
longer than an item's scaffold and a step (`SCAFFOLD`), that start (`reworded`) is the
earlier request's text carried on, not a template's subject replaced in place: a
conversation that loses no more than `LOST_AT_MOST` that way carries the earlier one on.

A volatile value near the start (a loop that writes its iteration number or the time first)
would leave no common prefix to measure: the prefix is also read past such values (a
counter, a timestamp, an id, as `wire.causes.volatile_value` knows them; at most `SWAPS`),
each counted as lost, and the reading that keeps more wins, so a rebuilt prompt is still its
conversation's, and the guard names the value.

Two requests whose first turns differ by a replacement (text of the earlier first turn is
gone from the later one, not only moved by an insertion) are siblings, whatever the length
of the change: a task from a template names its own subject in its first turn, and a
conversation never rewrites the turn it started from in place (a rebuilt prompt inserts
into it; a window or a compaction keeps it or drops it whole). So whether two variants of
one template are joined never depends on how long their names are, nor on which of them a
log holds first (`first_turn_replaced`); a first turn that differs only by volatile values read
past is not replaced.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from warmloop.wire.causes import volatile_value
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
SUMMARY_KEEPS = 0.2
"""Share of the earlier request a summarised one keeps, at least, as whole messages after
its summary (and `SUMMARY_KEEPS_CHARS` characters): the newest turns, which no other
conversation has; the summary is at most half of what it replaced (two tasks from one
template replace a name with one as long)."""
SUMMARY_KEEPS_CHARS = 256
SWAPS = 4
"""Volatile values the common prefix is read past, at most."""
SCAFFOLD = 32
"""Characters of an item's JSON before its text (`{"role":"user","content":"`): a rebuilt
prompt carries on more of the changed item than that, and a step (`MIN_STEP`) more, or a
one-word task replaced by another reads as a rebuild of it."""


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
    inserted: int = 0
    """Characters of new text before the moved tail (a summary, a rebuilt instruction)."""
    moved_items: int = 0
    """Characters of the moved tail that are whole items of the earlier request."""
    carried: int = 0
    """Characters of the earlier request's changed part (after the whole items both share)
    found again: its common prefix and its moved tail."""
    first_turn_replaced: bool = False
    """The two first turns differ by a replacement, not an insertion: siblings from one
    template (`first_turn_replaced`)."""
    reworded: int = 0
    """Characters of the earlier request found again after new text, right where its
    moved tail begins, when the rest of that tail was reworded (see the module)."""

    @property
    def kept(self) -> int:
        """Characters of the earlier request found again: the prefix, the moved tail and
        the start of a reworded one."""
        return self.prefix + self.moved + self.reworded

    @property
    def lost(self) -> int:
        """Characters of the earlier request the later one no longer has."""
        return self.size - self.kept

    @property
    def summarised(self) -> bool:
        """Whether the older turns were replaced by a shorter summary: the tail kept (at
        least `SUMMARY_KEEPS` of the earlier request) comes after new text shorter than what
        was lost."""
        return (
            self.moved_items >= max(SUMMARY_KEEPS * self.size, SUMMARY_KEEPS_CHARS)
            and 2 * self.inserted <= self.lost
            and not self.window
        )

    @property
    def continues(self) -> bool:
        """Whether the later request carries the earlier one on: it extends it, or adds a
        step (`MIN_STEP`) and either moves the earlier tail down losing almost nothing
        (`LOST_AT_MOST`) or drops the oldest turns keeping at least `WINDOW_KEEPS`."""
        if self.extends:
            return True
        if self.grown < MIN_STEP or self.kept <= 0:
            return False
        if self.summarised:  # a compaction may replace the task itself
            return True
        if self.reworded:  # a step inserted, then the moved instruction reworded
            return self.lost <= max(MIN_STEP, LOST_AT_MOST * self.size)
        if self.first_turn_replaced:
            return False
        if self.window:
            return self.kept >= WINDOW_KEEPS * self.size
        # A rebuilt prompt adds a step beyond what it lost; two tasks from one template
        # replace a name in place, adding about what they lose: siblings, not a rewrite.
        if self.grown - self.lost < MIN_STEP or self.carried < SCAFFOLD + MIN_STEP:
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


def longest_prefix_within(head: str, text: str) -> int:
    """Length of the longest prefix of `head` that occurs in `text` (binary search, as
    `longest_suffix_within`)."""
    if head in text:
        return len(head)
    lo, hi = 0, len(head) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if head[:mid] in text:
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
    replaced = whole == 0 and first_turn_replaced(earlier, later)
    plain = _rest_kept(earlier, (size, prefix, whole), tail, rest, 0, replaced)
    if plain.kept == size:
        return plain
    # Read past volatile values, the first turn's difference is one of them, not a subject.
    swapped = _rest_kept(earlier, (size, prefix, whole), tail, rest, SWAPS, False)
    return swapped if swapped.kept > plain.kept else plain


def _rest_kept(
    earlier: Sequence[str],
    shared: tuple[int, int, int],
    tail: str,
    rest: str,
    swaps: int,
    replaced: bool,
) -> Continuation:
    """What `rest` keeps of `tail` (the two after their shared whole items), reading past
    at most `swaps` volatile values; `shared`: the earlier size, the shared items' length
    and their count; `replaced`: whether the first turns differ by a replacement."""
    size, prefix, whole = shared
    at, to, matched = _past_volatile_values(tail, rest, swaps)
    prefix += matched
    if at == len(tail):  # it extends, but for the volatile values read past
        grown = len(rest) - matched
        return Continuation(
            size, prefix, 0, False, whole, grown, carried=matched, first_turn_replaced=replaced
        )
    tail, rest = tail[at:], rest[to:]
    moved = longest_suffix_within(tail, rest)
    grown = len(rest) - moved + (to - matched)
    found = rest.find(tail[len(tail) - moved :]) if moved else -1
    window = moved > 0 and found == 0
    inserted = max(0, found) + (to - matched)
    reworded, begins = _reworded(tail[: len(tail) - moved], rest[: found if moved else len(rest)])
    if reworded:
        grown, inserted = grown - reworded, begins + (to - matched)
    whole_tail = 0
    for item in reversed(earlier):
        if whole_tail + len(item) > moved:
            break
        whole_tail += len(item)
    return Continuation(
        size,
        prefix,
        moved,
        False,
        whole,
        grown,
        window,
        inserted,
        whole_tail,
        matched + moved + reworded,
        replaced,
        reworded,
    )


def _reworded(lost: str, before: str) -> tuple[int, int]:
    """The start of `lost` (what the earlier request's tail loses) found again in `before`
    (the later request's text before the moved tail) after at least `MIN_STEP` characters
    of new text, and where: (0, 0) unless longer than `SCAFFOLD + MIN_STEP`."""
    head = longest_prefix_within(lost, before[MIN_STEP:])
    if head <= SCAFFOLD + MIN_STEP:
        return 0, 0
    return head, before.find(lost[:head], MIN_STEP)


def _past_volatile_values(tail: str, rest: str, swaps: int) -> tuple[int, int, int]:
    """How far `tail` and `rest` agree from their start, reading past at most `swaps`
    volatile values: the positions reached in each, and the characters that agreed (the
    values read past are not among them)."""
    at = to = matched = 0
    for _ in range(swaps):
        same = common_prefix_length(tail[at:], rest[to:])
        if at + same == len(tail) or to + same == len(rest):
            return at + same, to + same, matched + same
        old_text, new_text = tail[at:], rest[to:]
        found = volatile_value(old_text, new_text, same)
        if found is None:
            break
        _, old, new = found
        begin = old_text.rfind(old, 0, same + len(old))
        if (
            begin < 0
            or begin + len(old) <= same
            or new_text[begin : begin + len(new)] != new
            or begin + len(new) <= same
        ):
            break
        matched += begin
        at, to = at + begin + len(old), to + begin + len(new)
    same = common_prefix_length(tail[at:], rest[to:])
    return at + same, to + same, matched + same
