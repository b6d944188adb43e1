"""An agent's memory: what it learns across its runs, in one object the agent owns: the opening
of its first fresh session (every later fresh session must open with the same bytes, or the
cache that session wrote is lost), every cache bust its runs saw, how long its recent runs
went on (the horizon the warm prune is priced over), how long its pauses lasted, by kind
(the keep-alive rule's history: its own runs', and those a stored session it runs on
recorded before), and which of its runs were followed by another run on their conversation,
how much later (what the longer-TTL choice weighs at a run's likely last request), how
soon its fresh conversations follow each other (what its opening's TTL is chosen on), and per
model whether its cache lived through pauses inside the TTL (evictions seen on the wire:
`keepalive.evictions`) and the least prompt it was seen to cache. A run reads and adds to
it; nothing else writes it. A stored session keeps what its runs learned of its model's
cache (`Meta.cache_*`), and a run on it restores that here.

A documented internal for benchmarks: `benchmarks/` may import it (the list is in
`tests/test_architecture.py`); change it knowing a benchmark figure may move."""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise

from warmloop.facts.profiles import CacheProfile
from warmloop.messages import Meta
from warmloop.sessions.timeline import StoredPauses
from warmloop.wire.guard import Bust, PrefixCheck, opening_bust
from warmloop.wire.miss_kinds import Miss
from warmloop.wire.stream import WireStream

PRIOR_SURVIVALS = 4
"""Returns assumed to have found the cache, before any is seen: one eviction among few
returns moves the estimate only a little."""
PAUSES_REMEMBERED = 64
"""How many recent pauses of each kind an agent keeps (the keep-alive rule's history)."""
SESSIONS_REMEMBERED = 1024
"""How many stored sessions an agent remembers having learned the pauses of."""
RETURNS_REMEMBERED = 128
"""How many recent returns inside the TTL an agent keeps per model (its survival)."""
RUNS_REMEMBERED = 256
"""How many recent runs' lengths an agent keeps: enough for the horizon's quantile, and a
long-lived agent serving many tasks does not grow without bound."""


def survival(returns: Sequence[bool]) -> float:
    """The chance an entry lives through a pause inside its TTL, from recent returns (True:
    it did), with `PRIOR_SURVIVALS` assumed: 1.0 before any is seen."""
    held = sum(1 for found in returns if found)
    return (held + PRIOR_SURVIVALS) / (len(returns) + PRIOR_SURVIVALS)


@dataclass
class RunEnd:
    """A finished run: its conversation, how many requests it sent, whether it was its
    conversation's first run (a follow-up's runs end and are followed otherwise), when
    its last request went out (the keep-alive clock; None without keep-alive), and whether
    another run on the conversation came after it."""

    conversation: str
    requests: int
    first: bool
    at: float | None = None
    followed: bool = False


@dataclass
class Learned:
    """An agent's memory of its runs (see the module docstring)."""

    opening: WireStream | None = None
    """The first request of the agent's first fresh session."""
    busts: list[Bust] = field(default_factory=list)
    misses: list[Miss] = field(default_factory=list)
    """Every miss the live guard named where the prefix held (`keepalive.live_misses`)."""
    run_lengths: deque[int] = field(default_factory=lambda: deque(maxlen=RUNS_REMEMBERED))
    """Requests each recent finished run sent."""
    pauses: defaultdict[str, deque[float]] = field(
        default_factory=lambda: defaultdict(lambda: deque(maxlen=PAUSES_REMEMBERED))
    )
    """Seconds each recent pause lasted, by kind (`tool:<name>`, `waiting`)."""
    gaps: deque[float] = field(default_factory=lambda: deque(maxlen=4 * PAUSES_REMEMBERED))
    """Seconds from each recent request to the next one of its run: what follows a request
    before its reply is known (the longer-TTL choice's history)."""
    run_ends: deque[RunEnd] = field(default_factory=lambda: deque(maxlen=RUNS_REMEMBERED))
    """This agent's recent finished runs, and which were followed (`followed`)."""
    follow_ups: deque[float] = field(default_factory=lambda: deque(maxlen=4 * PAUSES_REMEMBERED))
    """Seconds from a run's last request to the next run's start on its conversation: a
    user who came back (nobody waits on the session meanwhile)."""
    returns: defaultdict[str, deque[bool]] = field(
        default_factory=lambda: defaultdict(lambda: deque(maxlen=RETURNS_REMEMBERED))
    )
    """Per model: whether each recent return inside the TTL found the cache (False: an
    eviction)."""
    minimums: dict[str, int] = field(default_factory=dict)
    """Per model: the least cached read seen, where it was below the table's minimum (the
    provider caches shorter prompts than the table assumes)."""
    opened_at: deque[float] = field(default_factory=lambda: deque(maxlen=RUNS_REMEMBERED))
    """When each recent fresh conversation of this agent sent its first request (the
    keep-alive clock): how soon the cache entry of its opening is used again."""
    sessions: deque[str] = field(default_factory=lambda: deque(maxlen=SESSIONS_REMEMBERED))
    """Stored sessions whose pauses are learned: read from the store once, or lived (the
    most recent, so a worker that serves sessions for months keeps a bounded memory)."""

    def checked(
        self, check: PrefixCheck, wire: WireStream, length: int, *, fresh: bool
    ) -> PrefixCheck:
        """The verdict on a request: the guard's `check`, except that a fresh session's
        first request is checked against the opening (the cache earlier sessions wrote).
        A bust is remembered."""
        if fresh and self.opening is None:
            self.opening = wire  # the first session: nothing to reuse yet
        elif fresh and self.opening is not None:
            bust = opening_bust(self.opening, wire)
            shared = 0 if bust else sum(len(text) for _, text in wire.opening)
            check = PrefixCheck(bust.position if bust else shared, length, bust)
        if check.bust is not None:
            self.busts.append(check.bust)
        return check

    def returned(self, model: str, held: bool) -> None:
        """A request to `model` returned inside the TTL with its prefix held and found the
        cache (`held`) or found it evicted."""
        self.returns[model].append(held)

    def survival(self, model: str) -> float:
        """The chance `model`'s cache lives through a pause inside its TTL, as seen."""
        return survival(self.returns.get(model, ()))

    def cached(self, profile: CacheProfile, read: int) -> None:
        """A request to `profile`'s model read `read` tokens from the cache: a read below
        the minimum it assumes lowers that model's minimum."""
        least = min(self.minimums.get(profile.model, profile.min_cacheable_tokens), read)
        if 0 < least < profile.min_cacheable_tokens:
            self.minimums[profile.model] = least

    def profile(self, profile: CacheProfile) -> CacheProfile:
        """`profile` with the minimum its model was seen to cache from, where lower."""
        least = self.minimums.get(profile.model)
        if least is None or least >= profile.min_cacheable_tokens:
            return profile
        return replace(profile, min_cacheable_tokens=least)

    def paused(self, kind: str, seconds: float) -> None:
        """A pause of `kind` ended after `seconds`."""
        self.pauses[kind].append(max(0.0, seconds))

    def gap(self, seconds: float) -> None:
        """The next request of a run went out `seconds` after the previous one."""
        self.gaps.append(max(0.0, seconds))

    def stored(
        self,
        session: str,
        pauses: StoredPauses,
        conversation: str,
        cache: tuple[str, Meta] | None = None,
    ) -> None:
        """A run starts on stored session `session` (of `conversation`): learn the pauses
        and runs its stored requests show, and what its runs learned of the cache of its
        model (`cache`: this agent's key for the model, the stored meta), once (a session
        this agent ran or read before is in its memory already)."""
        if session in self.sessions:
            return
        self.sessions.append(session)
        if cache is not None:
            model, meta = cache
            if meta.cache_minimum is not None:
                least = min(self.minimums.get(model, meta.cache_minimum), meta.cache_minimum)
                self.minimums[model] = least
            self.returns[model].extend(spread(meta.cache_survived, meta.cache_evicted))
        for kind, seconds in pauses.pauses:
            self.paused(kind, seconds)
        for seconds in pauses.gaps:
            self.gap(seconds)
        # Its runs' ends, and the follow-ups after them. Only a session being continued is
        # opened, so these lean towards runs that were followed: the session's own record.
        for run in pauses.runs:
            followed = run.follow_up is not None
            ended = RunEnd(conversation, run.requests, run.first, followed=followed)
            self.run_ends.append(ended)
            if run.follow_up is not None:
                self.follow_ups.append(run.follow_up)

    def finished(
        self, requests: int, conversation: str, at: float | None = None, *, first: bool = True
    ) -> None:
        """A run on `conversation` ended with outputs after `requests` requests, a run that
        may be followed (`at`: its last request's time on the keep-alive clock; `first`:
        its conversation's first run)."""
        self.run_lengths.append(requests)
        self.run_ends.append(RunEnd(conversation, requests, first, at))

    def followed(self, conversation: str, at: float, since: float | None = None) -> None:
        """A new run starts on `conversation` at `at` (the keep-alive clock): the gap from
        its last finished run here, or `since` (seconds since the conversation's last
        request) when this agent did not see that run end or has no time for it."""
        ended = next(
            (end for end in reversed(self.run_ends) if end.conversation == conversation), None
        )
        if ended is not None and not ended.followed:
            ended.followed = True
            gap = at - ended.at if ended.at is not None else since
        else:
            gap = since
        if gap is not None:
            self.follow_ups.append(max(0.0, gap))

    def opened(self, at: float) -> None:
        """A fresh conversation of this agent sends its first request at `at`."""
        self.opened_at.append(at)

    def opening_returns(self, ttl: float) -> list[float]:
        """Seconds from each burst of this agent's fresh starts to the next burst: starts
        within `ttl` of the one before read the same entry of the opening and refresh it
        (siblings of a fan-out), so what the entry must outlive is the wait between bursts
        (the agent's next fan-out, its next session)."""
        starts = sorted(self.opened_at)
        return [b - a for a, b in pairwise(starts) if b - a > ttl]

    def outlook(self, sent: int, *, first: bool = True) -> tuple[float, float]:
        """What follows the next request of a run that has sent `sent` requests (`first`:
        its conversation's first run): the chance that its run goes on (a gap like
        `gaps`), and the chance that it is the run's last and another run follows (a gap
        like `follow_ups`); the rest, the session is left. Both are read from this agent's
        recent finished runs of the same kind (first runs, or follow-ups; all of them
        until one of that kind has ended): the run's end from the lengths of those that
        lasted at least this long, else from their mean once this run outlasts them all;
        a follow-up from the share of them that were followed (one whose follow-up is yet
        to come counts as not followed)."""
        ends = [end for end in self.run_ends if end.first == first] or list(self.run_ends)
        if not ends:
            return 1.0, 0.0
        number = sent + 1
        reached = [end.requests for end in ends if end.requests >= number]
        if reached:
            last = sum(length == number for length in reached) / len(reached)
        else:
            total = sum(end.requests for end in ends)
            last = len(ends) / total if total else 0.0
        followed = sum(end.followed for end in ends) / len(ends)
        return 1.0 - last, last * followed


def spread(survived: int, evicted: int, limit: int = RETURNS_REMEMBERED) -> list[bool]:
    """`survived` returns that found the cache and `evicted` that did not, as at most
    `limit` returns in the same proportion, the evictions spread evenly among them (a
    long session's counts do not push the agent's own returns out unevenly)."""
    total = survived + evicted
    count = min(total, limit)
    if count <= 0:
        return []
    misses = round(evicted * count / total)
    return [(k + 1) * misses // count == k * misses // count for k in range(count)]
