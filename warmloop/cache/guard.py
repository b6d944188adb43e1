"""The prefix guard: compares each rendered request with the previous one of its session.

An append-only session makes every request's prefix stream start with the previous one
(I1). When it does not, the guard reports a cache bust: where the streams first differ,
in which section, and the likely cause.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Section:
    """One labelled piece of a request's prefix stream.

    Labels: `request` (parameters), `tools`, `system`, `message <i>` (wire message index).
    """

    label: str
    text: str


class Prefixed(Protocol):
    """Anything with a prefix stream and its sections (a provider's rendered request)."""

    @property
    def sections(self) -> tuple[Section, ...]: ...

    @property
    def stream(self) -> str: ...

    @property
    def length(self) -> int: ...


@dataclass(frozen=True)
class Bust:
    """Where and (likely) why a request stopped extending the previous one."""

    position: int
    section: str
    cause: str
    before: str
    after: str

    def __str__(self) -> str:
        return (
            f"cache bust at character {self.position} ({self.section}): {self.cause}; "
            f"was {self.before!r}, now {self.after!r}"
        )


@dataclass(frozen=True)
class PrefixCheck:
    """How much of a request is a reusable prefix of the previous one."""

    reusable: int
    total: int
    bust: Bust | None = None

    @property
    def fraction(self) -> float:
        """Reusable share of this request's prefix stream (1.0 for a perfect extension)."""
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


def _section_at(sections: tuple[Section, ...], position: int) -> str:
    offset = 0
    for section in sections:
        offset += len(section.text)
        if position < offset:
            return section.label
    return sections[-1].label if sections else "request"


def likely_cause(section: str, before: str, after: str, shrank: bool) -> str:
    """A best guess at why a prefix moved, from where it moved and what changed there."""
    if shrank:
        return "the request is shorter than the last one: history was trimmed or rebuilt"
    if section == "tools":
        return "tool definitions changed (added, removed, reordered or re-described)"
    if section == "request":
        return "request parameters changed (model, tool choice or another setting)"
    digits = any(c.isdigit() for c in before[:8]) and any(c.isdigit() for c in after[:8])
    if digits:
        return f"a number changed in {section}: a counter, timestamp or id in the prompt?"
    if section == "system" or section == "message 0":
        return "the system prompt changed between requests"
    return f"{section} was re-rendered differently: history is not append-only"


class PrefixGuard:
    """Tracks one session's previous request and checks each new one against it."""

    def __init__(self, context: int = 40) -> None:
        self.context = context
        self._previous: Prefixed | None = None
        self.busts: list[Bust] = []

    def reset(self) -> None:
        """Forget the previous request (after a maintenance point moves the prefix on purpose)."""
        self._previous = None

    def check(self, rendered: Prefixed) -> PrefixCheck:
        """Compare with the previous request, remember this one, and report."""
        previous, self._previous = self._previous, rendered
        if previous is None:
            return PrefixCheck(0, rendered.length)
        # Fast path, O(new): the previous sections reappear as the same objects (memoised).
        count = len(previous.sections)
        if rendered.sections[:count] == previous.sections:
            return PrefixCheck(previous.length, rendered.length)
        new, old = rendered.stream, previous.stream
        if new.startswith(old):
            return PrefixCheck(len(old), len(new))
        position = common_prefix_length(old, new)
        section = _section_at(rendered.sections, position)
        before = old[position : position + self.context]
        after = new[position : position + self.context]
        bust = Bust(
            position,
            section,
            likely_cause(section, before, after, shrank=position == len(new)),
            before,
            after,
        )
        self.busts.append(bust)
        return PrefixCheck(position, len(new), bust)
