"""Replay timestamped requests under a provider's cache rules: reads, writes, misses, dollars.

A request is a sequence of blocks (a block is a piece of the canonical prompt: its token
count and a key identifying its content); prefix identity is the sequence of keys. One
`CacheSimulator` holds one cache's state and applies the rules of a `CacheProfile`:

- explicit (Anthropic): writes only at breakpoints; each breakpoint finds an earlier write
  at most `lookback_blocks` blocks back (block b finds an entry ending at block w iff
  0 <= b - w < lookback); the read is the longest entry found; tokens from the read to
  the last breakpoint are written, each at the TTL of the breakpoint whose segment holds
  it; nothing is read or written at a breakpoint below the minimum; more breakpoints than
  allowed, or a longer TTL after a shorter one, is an error (the API answers 400).
- automatic (OpenAI, Gemini, DeepSeek): every prompt from the minimum up becomes an entry;
  the read is the longest common prefix with a live entry (or, with `whole_entry`
  matching, the longest live entry that is a prefix), rounded down to whole increments.
  Writes are billed only where the profile says so: the uncached part that becomes cached.
- engine (llama.cpp): the KV cache holds exactly the previous request, forever.

Entries expire `seconds` after their last write or read; a hit refreshes the entry it read.

A documented internal for benchmarks: `benchmarks/` may import it (the list is in
`tests/test_architecture.py`); change it knowing a benchmark figure may move."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import accumulate, pairwise

from warmloop.errors import ConfigurationError
from warmloop.facts.price_table import Prices
from warmloop.facts.pricing import Cost, cost_breakdown
from warmloop.facts.profiles import CacheProfile, Retention
from warmloop.facts.usage import Usage


@dataclass(frozen=True)
class Block:
    """A piece of a prompt: `tokens` long, content identified by `key`.

    `breakpoint` names the TTL of an explicit cache marker on this block (`5m`, `1h`), or
    is None. Under automatic caching a breakpoint is only a marker (the profile's TTL
    applies), and profiles without explicit breakpoints ignore it.
    """

    tokens: int
    key: str
    breakpoint: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.tokens, int) or isinstance(self.tokens, bool) or self.tokens < 0:
            raise ConfigurationError(f"a block needs a token count >= 0, got {self.tokens!r}")


@dataclass(frozen=True)
class SimRequest:
    """One request: when it was sent (seconds), its prompt blocks and its output size.

    `retention` names the cache lifetime an automatically cached request asks for
    (OpenAI's `prompt_cache_retention`); None: the profile's. Explicit breakpoints carry
    their own (`Block.breakpoint`). A keep-alive is a request like any other: the last
    request's blocks and a one-token answer (none with `prewarm`: `keepalive`), so it reads
    the prefix and refreshes it.
    """

    at: float
    blocks: tuple[Block, ...]
    output_tokens: int = 0
    retention: str | None = None

    @property
    def prompt_tokens(self) -> int:
        """All prompt tokens of the request."""
        return sum(block.tokens for block in self.blocks)


def keepalive(last: SimRequest, at: float, profile: CacheProfile, answer: int = 1) -> SimRequest:
    """A keep-alive of `last` sent at `at`: its blocks and retention, and `answer` output
    tokens, or none where the model prepares its cache without generating
    (`CacheProfile.prewarm`: OpenAI's `prompt_cache_options.prewarm`)."""
    return replace(last, at=at, output_tokens=0 if profile.prewarm else answer)


@dataclass(frozen=True)
class SimOutcome:
    """What one request read, wrote and missed, and its cost when prices were given."""

    at: float
    usage: Usage
    cost: Cost | None = None


@dataclass(frozen=True)
class SimSummary:
    """Totals over simulated requests; `cost`/`dollars` are None if any request is unpriced."""

    requests: int
    prompt_tokens: int
    reads: int
    writes: int
    writes_1h: int
    misses: int
    output_tokens: int
    cost: Cost | None

    @property
    def dollars(self) -> float | None:
        """Total USD, or None when unpriced."""
        return None if self.cost is None else self.cost.total

    @property
    def hit_rate(self) -> float:
        """Fraction of prompt tokens read from the cache (0.0 with no prompt tokens)."""
        return self.reads / self.prompt_tokens if self.prompt_tokens else 0.0


def simulate(
    requests: Iterable[SimRequest], profile: CacheProfile, prices: Prices | None = None
) -> list[SimOutcome]:
    """Replay `requests` (in time order) through one cache under `profile`'s rules."""
    simulator = CacheSimulator(profile)
    outcomes = []
    for request in requests:
        usage = simulator.request(request)
        cost = None if prices is None else cost_breakdown(usage, prices)
        outcomes.append(SimOutcome(request.at, usage, cost))
    return outcomes


def summary(outcomes: Sequence[SimOutcome]) -> SimSummary:
    """Totals of reads, writes, misses, output, dollars and the hit rate."""
    usage = sum((o.usage for o in outcomes), Usage())
    costs = [o.cost for o in outcomes]
    priced = all(c is not None for c in costs)
    cost = sum((c for c in costs if c is not None), Cost()) if priced else None
    return SimSummary(
        requests=len(outcomes),
        prompt_tokens=usage.prompt_tokens,
        reads=usage.cache_read_tokens,
        writes=usage.cache_write_tokens,
        writes_1h=usage.cache_write_1h_tokens,
        misses=usage.uncached_tokens,
        output_tokens=usage.output_tokens,
        cost=cost,
    )


def blocks_from_texts(
    texts: Iterable[str],
    *,
    count: Callable[[str], int] | None = None,
    tokens_per_char: float = 0.25,
    breakpoints: Mapping[int, str] | None = None,
) -> tuple[Block, ...]:
    """Blocks for canonical text pieces: key = sha256 of the text.

    Tokens come from `count` (a real tokenizer) or else ceil(len * tokens_per_char).
    `breakpoints` maps a piece's index (negative counts from the end) to a TTL name.
    """
    pieces = list(texts)
    if count is None and not tokens_per_char > 0:
        raise ConfigurationError(f"tokens_per_char must be positive, got {tokens_per_char}")
    marks: dict[int, str] = {}
    for index, ttl in (breakpoints or {}).items():
        position = index + len(pieces) if index < 0 else index
        if not 0 <= position < len(pieces):
            raise ConfigurationError(f"breakpoint index {index} is outside {len(pieces)} pieces")
        marks[position] = ttl
    return tuple(
        Block(
            count(text) if count is not None else math.ceil(len(text) * tokens_per_char),
            hashlib.sha256(text.encode("utf-8")).hexdigest(),
            marks.get(i),
        )
        for i, text in enumerate(pieces)
    )


@dataclass(frozen=True)
class _Entry:
    expires: float
    seconds: float


class CacheSimulator:
    """One cache's state under a profile; `request` applies one request and says its usage.

    `copy()` forks the state, so a caller (the planner) can price alternatives.
    """

    def __init__(self, profile: CacheProfile) -> None:
        self.profile = profile
        self._now = -math.inf
        # Prefix node -> latest expiry of any entry through it (an entry's expiry only
        # grows, so the max says whether some live entry still covers the node).
        self._paths: dict[bytes, float] = {}
        self._entries: dict[bytes, _Entry] = {}
        self._previous: tuple[bytes, ...] = ()

    def copy(self) -> CacheSimulator:
        """An independent simulator in the same state."""
        twin = CacheSimulator(self.profile)
        twin._now = self._now
        twin._paths = dict(self._paths)
        twin._entries = dict(self._entries)
        twin._previous = self._previous
        return twin

    def request(self, request: SimRequest) -> Usage:
        """Apply one request (no earlier than the last one) and return its usage."""
        if request.at < self._now:
            raise ConfigurationError(
                f"requests must come in time order: {request.at} is before {self._now}"
            )
        ids = _chain(request.blocks)
        ends = list(accumulate(block.tokens for block in request.blocks))
        mode = self.profile.mode
        if mode == "explicit":
            self._check_breakpoints(request.blocks)  # a rejected request changes nothing
        retention = (
            self.profile.retention
            if request.retention is None
            else self.profile.retention_for(request.retention)
        )
        self._now = request.at
        if mode == "explicit":
            read, written, written_1h = self._explicit(request.blocks, ids, ends)
        elif mode == "automatic":
            read, written, written_1h = self._automatic(request.blocks, ids, ends, retention)
        else:
            read, written, written_1h = self._engine(ids, ends), 0, 0
        if not self.profile.writes_billed:
            written = written_1h = 0  # written tokens are billed as plain input
        prompt = ends[-1] if ends else 0
        # Long-rate writes are billed by their retention: OpenAI's twelve hours, else an hour.
        twelve = mode == "automatic" and retention.name == "12h"
        return Usage(
            input_tokens=prompt,
            cache_read_tokens=read,
            cache_write_tokens=written,
            output_tokens=request.output_tokens,
            cache_write_1h_tokens=0 if twelve else written_1h,
            cache_write_12h_tokens=written_1h if twelve else 0,
        )

    def _check_breakpoints(self, blocks: Sequence[Block]) -> None:
        profile = self.profile
        marked = [b.breakpoint for b in blocks if b.breakpoint is not None]
        if profile.max_breakpoints is not None and len(marked) > profile.max_breakpoints:
            raise ConfigurationError(
                f"{len(marked)} cache breakpoints in one request; {profile.entry} allows at "
                f"most {profile.max_breakpoints} (the API rejects the request)"
            )
        retentions = [profile.retention_for(name) for name in marked]
        for earlier, later in pairwise(retentions):
            if later.seconds > earlier.seconds:
                raise ConfigurationError(
                    f"a {later.name} breakpoint after a {earlier.name} one: longer TTLs must "
                    "come first (the API rejects the request)"
                )

    def _explicit(
        self, blocks: Sequence[Block], ids: Sequence[bytes], ends: Sequence[int]
    ) -> tuple[int, int, int]:
        profile = self.profile
        marked = [(i, b.breakpoint) for i, b in enumerate(blocks) if b.breakpoint is not None]
        retentions = [profile.retention_for(name) for _, name in marked]
        eligible = [
            (i, retention)
            for (i, _), retention in zip(marked, retentions, strict=True)
            if ends[i] > 0 and ends[i] >= profile.min_cacheable_tokens
        ]
        lookback = profile.lookback_blocks or len(ids)
        read_blocks = 0
        for i, _ in eligible:
            for w in range(i, max(i - lookback, -1), -1):
                if self._live_entry(ids[w]) is not None:
                    read_blocks = max(read_blocks, w + 1)
                    break
        read = ends[read_blocks - 1] if read_blocks else 0
        if read_blocks:
            self._refresh(ids[read_blocks - 1])
        written = written_1h = 0
        segment_start = 0
        for i, retention in eligible:
            part = max(0, ends[i] - max(segment_start, read))
            written += part
            written_1h += part if retention.long_rate else 0
            segment_start = ends[i]
            self._write(ids[i], retention)
        return read, written, written_1h

    def _automatic(
        self,
        blocks: Sequence[Block],
        ids: Sequence[bytes],
        ends: Sequence[int],
        retention: Retention,
    ) -> tuple[int, int, int]:
        profile = self.profile
        prompt = ends[-1] if ends else 0
        if prompt == 0 or prompt < profile.min_cacheable_tokens:
            return 0, 0, 0
        common = self._common_depth(ids)
        if profile.matching == "common_prefix":
            read_blocks = common
        else:
            live = range(len(ids) - 1, -1, -1)
            found = (w for w in live if self._live_entry(ids[w]) is not None)
            read_blocks = next(found, -1) + 1
            if read_blocks:
                self._refresh(ids[read_blocks - 1])
        read = profile.cacheable(ends[read_blocks - 1]) if read_blocks else 0
        if profile.matching == "whole_entry":
            cuts = {len(ids)}
            if profile.max_breakpoints is not None:
                # One write goes to the implicit breakpoint at the end; the latest
                # explicit ones take the rest.
                marked = [i + 1 for i, b in enumerate(blocks) if b.breakpoint is not None]
                cuts.update(marked[len(marked) - (profile.max_breakpoints - 1) :])
            if profile.persists_common_prefix and common > read_blocks:
                cuts.add(common)
            for cut in cuts:
                self._write(ids[cut - 1], retention)
        # Every node of the prompt is on a live entry now (common-prefix reads, and the
        # common-prefix detection of whole-entry providers).
        expires = self._now + retention.seconds
        for node in ids:
            self._paths[node] = max(self._paths.get(node, -math.inf), expires)
        written = max(0, profile.cacheable(prompt) - read)
        return read, written, written if retention.long_rate else 0

    def _engine(self, ids: Sequence[bytes], ends: Sequence[int]) -> int:
        common = 0
        for mine, theirs in zip(ids, self._previous, strict=False):
            if mine != theirs:
                break
            common += 1
        self._previous = tuple(ids)
        return self.profile.cacheable(ends[common - 1]) if common else 0

    def _common_depth(self, ids: Sequence[bytes]) -> int:
        # A node deeper than a dead one cannot be live: every entry through it passes
        # through the shallower node, whose expiry is the max over those entries.
        depth = 0
        for node in ids:
            if self._paths.get(node, -math.inf) <= self._now:
                break
            depth += 1
        return depth

    def _live_entry(self, node: bytes) -> _Entry | None:
        entry = self._entries.get(node)
        return entry if entry is not None and entry.expires > self._now else None

    def _refresh(self, node: bytes) -> None:
        entry = self._entries[node]
        self._entries[node] = _Entry(max(entry.expires, self._now + entry.seconds), entry.seconds)

    def _write(self, node: bytes, retention: Retention) -> None:
        old = self._entries.get(node)
        expires = self._now + retention.seconds
        if old is not None and old.expires > self._now:
            expires, seconds = max(old.expires, expires), max(old.seconds, retention.seconds)
        else:
            seconds = retention.seconds
        self._entries[node] = _Entry(expires, seconds)


def _chain(blocks: Sequence[Block]) -> list[bytes]:
    """Prefix ids: id[i] identifies the key sequence of blocks 0..i."""
    ids = []
    digest = b""
    for block in blocks:
        # The previous digest has a fixed length, so digest + key is unambiguous.
        digest = hashlib.blake2b(digest + block.key.encode("utf-8"), digest_size=16).digest()
        ids.append(digest)
    return ids
