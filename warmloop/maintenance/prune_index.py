"""The prune plan of a growing transcript, kept step by step instead of re-read whole.

`plan_prune` reads every message's text on every call: at 10,000 messages that was most of
a step's maintenance time. A `PruneIndex` accumulates, as the transcript grows, what does
not depend on the calibrated characters-per-token ratio: each visible message's text
length (and their running sum), and each prunable tool result (its content length and
placeholder). A step then reads only what was appended, finds the tail from the end, and
prices the candidates before it from sums kept by length (`LengthSums`): the shortest
length the minimum admits at the ratio of the moment comes from a bisect, and the dropped
tokens from the sums of the contents and placeholders at or above it, the estimate of each
taken as one text (`PrunePlan`). The edits themselves are built only when a prune is made.
The plan equals `plan_prune`'s with a token count that depends only on a text's length
and never falls as it grows (the maintainer's estimate); a rewrite or fold (a new
transcript key) starts it over.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice

from warmloop.maintenance.length_sums import LengthSums
from warmloop.maintenance.prune import (
    DEFAULT_TAIL_TOKENS,
    PLACEHOLDER_MARK,
    PrunePlan,
    PrunePolicy,
    placeholder,
    text_of,
)
from warmloop.messages import AssistantTurn, ToolResult
from warmloop.transcript import Transcript


@dataclass(frozen=True)
class Candidate:
    """A tool result a prune may replace: where it is, its tool, its content length and
    the placeholder that would stand in for it."""

    position: int
    """Its place among the visible messages."""
    index: int
    name: str
    length: int
    placeholder: str


BLOCK = 64
"""Messages per block of the tail's walk."""


class PruneIndex:
    """One transcript's message lengths and prune candidates, extended as it grows.

    The lengths are also kept per `block` of messages (the shortest and longest of each),
    so the tail's walk from the end takes a block at once where every message in it counts
    the same tokens and the walk would not stop inside it."""

    def __init__(self, block: int = BLOCK) -> None:
        self.block = block
        self._exclude: frozenset[str] = frozenset()
        """The tools whose results are never candidates (the policy's, as last planned)."""
        self._reset(None)

    def _reset(self, key: tuple[str, int, int] | None) -> None:
        self._key = key
        self._seen = 0
        """Messages of the transcript read so far (by index, folded ones included)."""
        self._indices: list[int] = []
        self._lengths: list[int] = []
        self._prefix: list[int] = [0]
        """The sum of the first k visible messages' lengths."""
        self._results: list[bool] = []
        self._unread = 0
        """The position after the newest assistant turn (`prune.unread`)."""
        self._candidates: list[Candidate] = []
        self._positions: list[int] = []
        self._longest: list[int] = []
        """The longest candidate content among the first k+1 candidates."""
        self._sums = LengthSums()
        """The first `_priced` candidates' content and placeholder lengths, by length."""
        self._priced = 0
        self._bounds: list[tuple[int, int]] = []
        """Per block of `block` visible messages, the shortest and longest length."""

    def _update(self, transcript: Transcript) -> None:
        if transcript.key != self._key:  # another transcript, or rewritten: read it again
            self._reset(transcript.key)
        for index, message in transcript.visible(self._seen):
            position = len(self._indices)
            self._indices.append(index)
            length = len(text_of(message))
            self._lengths.append(length)
            self._prefix.append(self._prefix[-1] + length)
            if position % self.block == 0:
                self._bounds.append((length, length))
            else:
                low, high = self._bounds[-1]
                self._bounds[-1] = (min(low, length), max(high, length))
            self._results.append(isinstance(message, ToolResult))
            if isinstance(message, AssistantTurn):
                self._unread = position + 1
            elif (
                isinstance(message, ToolResult)
                and not message.is_error
                and not message.content.startswith(PLACEHOLDER_MARK)
                and message.name not in self._exclude
            ):
                text = placeholder(message)
                length = len(message.content)
                self._candidates.append(Candidate(position, index, message.name, length, text))
                self._positions.append(position)
                self._longest.append(max(length, self._longest[-1] if self._longest else 0))
        self._seen = len(transcript)

    def tail_start(self, policy: PrunePolicy, tokens: Callable[[int], int]) -> int:
        """`prune.tail_start` over the visible messages, from their lengths."""
        total = len(self._lengths)
        start, size = total, 0
        budget = policy.tail_tokens if policy.tail_tokens is not None else DEFAULT_TAIL_TOKENS
        block = self.block
        while start > 0 and (size < budget or total - start < policy.tail_messages):
            if start % block == 0:
                low, high = self._bounds[start // block - 1]
                each = tokens(low)
                # Every message of the block counts `each` (tokens never fall as a text
                # grows), and the walk still goes on before the block's last message.
                if each == tokens(high) and (
                    size + each * (block - 1) < budget
                    or total - start + block - 1 < policy.tail_messages
                ):
                    start -= block
                    size += each * block
                    continue
            start -= 1
            size += tokens(self._lengths[start])
        while 0 < start < total and self._results[start]:
            start -= 1
        return min(start, self._unread)

    def plan(
        self, transcript: Transcript, policy: PrunePolicy, tokens: Callable[[int], int]
    ) -> PrunePlan:
        """`plan_prune(transcript, policy, lambda text: tokens(len(text)))`, reading only
        the messages appended since the last call."""
        if policy.exclude_tools != self._exclude:  # other candidates: read it again
            self._exclude = policy.exclude_tools
            self._reset(None)
        self._update(transcript)
        cut = self.tail_start(policy, tokens)
        before = bisect_left(self._positions, cut)
        self._price(before)
        boundary = self._indices[cut] if cut < len(self._indices) else len(transcript)
        longest = self._longest[before - 1] if before else 0
        if not before or tokens(longest) < policy.min_tokens:
            return PrunePlan({}, 0, None, boundary)
        # The shortest content the minimum admits, and the first candidate that long.
        shortest = bisect_left(range(longest + 1), policy.min_tokens, key=tokens)
        first = bisect_left(self._longest, shortest, hi=before)
        contents, placeholders = self._sums.at_least(shortest)
        dropped = tokens(contents) - tokens(placeholders)
        candidates = self._candidates

        def build() -> dict[int, str]:
            chosen = islice(candidates, first, before)
            return {c.index: c.placeholder for c in chosen if c.length >= shortest}

        return PrunePlan(None, dropped, candidates[first].index, boundary, build=build)

    def _price(self, before: int) -> None:
        """Keep the first `before` candidates, and only those, in the sums by length."""
        while self._priced < before:
            candidate = self._candidates[self._priced]
            self._sums.add(candidate.length, candidate.length, len(candidate.placeholder))
            self._priced += 1
        while self._priced > before:  # the tail grew back over candidates
            self._priced -= 1
            candidate = self._candidates[self._priced]
            self._sums.add(candidate.length, candidate.length, len(candidate.placeholder), -1)

    def tokens_from(self, transcript: Transcript, index: int, tokens: Callable[[int], int]) -> int:
        """Tokens of the visible messages from message `index` to the end, taken as one
        text (as `PrunePlan.dropped_tokens` is)."""
        self._update(transcript)
        start = bisect_left(self._indices, index)
        return tokens(self._prefix[-1] - self._prefix[start])
