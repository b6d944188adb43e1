"""Keep-alive: during a pause, whether to refresh the cache with a minimal request.

A pause (a slow tool, a human's approval) that outlives the provider's cache turns the next
request from a read (0.1x) into a write of the whole prompt (1.25x on Anthropic's 5-minute
cache). A keep-alive request (the last request's exact prefix, a one-token answer, nothing
appended) reads the prefix and so refreshes the entry. Pure: it sees only what a live
agent knows, and decides in base-input tokens (multiples of the uncached input price).

- `pause_costs`: what one keep-alive costs (`ping`: the prefix read, the uncacheable tail,
  the answer) and what letting the cache go cold costs over a warm resume (`miss`: the
  resume writes the prefix the cold prune leaves, instead of reading the whole). None, so
  never pinged, where the cache lives for hours or has no TTL (DeepSeek's disk cache, a
  self-hosted engine: `PING_TTL_LIMIT`), where a durable tier serves an evicted prefix for
  hours (Vertex AI: `durable`), or where a miss costs no more than a read.
- `keep_alive`: at each moment the cache would expire (every `interval`: the TTL less a
  margin), ping or let it go cold. Without history it is the rent-or-buy rule: keep
  pinging while the pings of this pause, this one included, cost no more than one miss.
  With history (this pause kind's earlier lengths, as the agent learned them) it picks the
  number of further pings with the least expected cost over the earlier pauses that
  lasted at least this long (up to twice the pings one miss pays for: a human's approval
  that usually ends within the hour is worth pinging through), and falls back to the
  rent-or-buy rule once the pause outlasts everything seen.
- `choose_retention`: at a request, whether writing it with a longer TTL where one is
  sold (Anthropic `1h` at 2x instead of 1.25x, GPT-5.6 `12h` at 2.5x) costs less than
  handling what follows under the default one: a gap like those seen within runs (pinged
  by the rule), or a follow-up like those seen after runs (nobody waits: a miss once past
  the TTL), each by its chance. A miss is priced at the write the request after it pays
  (the model's retention), whatever this request was written with.

What holds (tests/keepalive/test_rule.py): with no history, on any pause, the rule
costs at most twice the offline optimum plus one ping (the rent-or-buy bound, plus the
ping a live agent must send before it can know a pause ends inside the margin); with any
history, a pause costs at most twice the pings one miss pays for, plus the miss.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from warmloop.facts.profiles import CacheProfile, Retention

PING_TTL_LIMIT = 3600.0
"""A cache assumed to live longer than this (seconds) is never pinged: hours-long caches
(DeepSeek's disk cache) outlast any pause worth pinging through, and engines have no TTL."""
MARGIN_SHARE = 0.1
"""A keep-alive goes out this share of the TTL before the entry would expire..."""
MIN_MARGIN = 15.0
"""...at least this many seconds before (queueing, a slow network, clock drift)..."""
MAX_MARGIN = 60.0
"""...and at most this many: the delays a margin absorbs do not grow with the TTL."""
HISTORY_CAP = 2
"""With history, at most this many times the pings one miss pays for."""
ANSWER_TOKENS = 1
"""The keep-alive's answer: one output token."""


@dataclass(frozen=True)
class PauseCosts:
    """One pause's prices in base-input tokens, and its clock (seconds)."""

    ping: float
    """One keep-alive request."""
    miss: float
    """What a cold resume costs over a warm one."""
    ttl: float
    """How long an entry lives after its last use."""
    interval: float
    """Seconds between keep-alives (the TTL less the margin)."""

    @property
    def pings_paid_for(self) -> int:
        """How many keep-alives cost no more than one miss (the rent-or-buy cap)."""
        return math.floor(self.miss / self.ping + 1e-9)

    def moments(self, pause: float) -> int:
        """Ping moments a live agent reaches in a pause of `pause` seconds (those strictly
        before it ends): the pings sent when pinging through it."""
        return max(0, math.ceil(pause / self.interval) - 1)


def margin(ttl: float) -> float:
    """Seconds before expiry at which a keep-alive goes out."""
    return min(max(MIN_MARGIN, MARGIN_SHARE * ttl), MAX_MARGIN, ttl / 2)


def pingable(retention: Retention) -> bool:
    """Whether a cache under `retention` is ever worth pinging (a finite TTL of at most
    `PING_TTL_LIMIT`)."""
    return math.isfinite(retention.seconds) and retention.seconds <= PING_TTL_LIMIT


def durable(profile: CacheProfile) -> bool:
    """Whether a durable tier serves what the cache evicts for longer than any pause worth
    pinging through (Vertex AI keeps evicted implicit prefixes up to 24 h:
    `CacheProfile.durable_seconds`): a keep-alive would buy a read the resume gets anyway."""
    return profile.durable_seconds is not None and profile.durable_seconds > PING_TTL_LIMIT


def pause_costs(
    profile: CacheProfile,
    prefix_tokens: int,
    *,
    cold_tokens: int | None = None,
    output_ratio: float = 0.0,
    retention: Retention | None = None,
    survival: float = 1.0,
) -> PauseCosts | None:
    """The prices of a pause after a request whose cached prefix is `prefix_tokens` long;
    `cold_tokens`: the prompt a cold resume would send after its prune (default: the
    whole prefix); `output_ratio`: the output price over the input price (the answer's
    token; 0 for a prewarm); `survival`: the chance the entry lives through the pause at
    all (evictions learned from the wire): a keep-alive saves the miss only then. None
    when the cache is never pinged (see the module docstring)."""
    rule = retention or profile.retention
    if profile.mode == "engine" or not pingable(rule) or durable(profile):
        return None
    cached = profile.cacheable(prefix_tokens)
    if cached <= 0:
        return None
    read = profile.read_multiplier
    ping = read * cached + (prefix_tokens - cached) + output_ratio * ANSWER_TOKENS
    cold = prefix_tokens if cold_tokens is None else min(cold_tokens, prefix_tokens)
    # The resume writes at its own retention, not this one: the model's (a longer TTL is
    # chosen per request, from what follows that request).
    write = profile.retention.write_multiplier if profile.writes_billed else 1.0
    miss = (write * cold - read * cached) * survival
    if miss <= ping:
        return None
    return PauseCosts(ping, miss, rule.seconds, rule.seconds - margin(rule.seconds))


def covered(pause: float, pings: int, costs: PauseCosts) -> bool:
    """Whether the cache is still alive when a pause of `pause` seconds ends after the
    first `pings` keep-alives (one at each moment)."""
    return pause < pings * costs.interval + costs.ttl


def online_cost(pause: float, costs: PauseCosts, limit: int) -> float:
    """What a pause costs when at most `limit` keep-alives are sent, one at each moment
    it reaches: the pings, and the miss if the cache died before it ended."""
    pings = min(limit, costs.moments(pause))
    return pings * costs.ping + (0.0 if covered(pause, pings, costs) else costs.miss)


def offline_cost(pause: float, costs: PauseCosts) -> float:
    """The least a pause of known length can cost: nothing if it ends within the TTL,
    else the fewer of pinging through (at the same moments, stopping once the last ping
    outlives it) and one miss."""
    if pause < costs.ttl:
        return 0.0
    needed = math.floor((pause - costs.ttl) / costs.interval) + 1
    return min(needed * costs.ping, costs.miss)


def keep_alive(costs: PauseCosts, sent: int, history: Sequence[float] = ()) -> bool:
    """At ping moment `sent + 1` of a pause (`sent` keep-alives already out), whether to
    send one more. `history`: the lengths (seconds) of earlier pauses of this kind."""
    cap = costs.pings_paid_for
    elapsed = (sent + 1) * costs.interval
    longer = [pause for pause in history if pause > elapsed]
    if not longer:
        return sent < cap  # the rent-or-buy rule: nothing seen lasted this long
    # History may carry the pings past one miss's worth (pauses known to end soon after),
    # never past two: a pause longer than all it saw costs at most 2 * cap pings + a miss.
    most = HISTORY_CAP * cap
    if sent >= most:
        return False
    best, best_cost = 0, math.inf
    for more in range(most - sent + 1):  # pings from now on, this one included
        expected = sum(online_cost(p, costs, sent + more) for p in longer) / len(longer)
        if expected < best_cost - 1e-12:
            best, best_cost = more, expected
    return best > 0


def ping_limit(costs: PauseCosts, history: Sequence[float] = ()) -> int:
    """How many keep-alives the rule sends into a pause that never ends: `keep_alive`
    depends only on the moment, so this is the whole plan for a pause of this kind."""
    sent = 0
    while keep_alive(costs, sent, history):
        sent += 1
    return sent


def rule_cost(pause: float, costs: PauseCosts, history: Sequence[float] = ()) -> float:
    """What `keep_alive` makes a pause of `pause` seconds cost."""
    return online_cost(pause, costs, ping_limit(costs, history))


def expected_cost(costs: PauseCosts, history: Sequence[float]) -> float:
    """The mean cost of pauses like those in `history` under the rule."""
    if not history:
        return 0.0
    limit = ping_limit(costs, history)
    return sum(online_cost(p, costs, limit) for p in history) / len(history)


@dataclass(frozen=True)
class RetentionChoice:
    """The TTL to write the next request with, and the expected costs compared."""

    retention: Retention
    expected: float
    default_expected: float


def choose_retention(
    profile: CacheProfile,
    prefix_tokens: int,
    written_tokens: int,
    history: Sequence[float],
    *,
    unattended: Sequence[float] = (),
    shares: tuple[float, float] | None = None,
    cold_tokens: int | None = None,
    output_ratio: float = 0.0,
    survival: float = 1.0,
) -> RetentionChoice:
    """At a request followed by a pause like the gaps seen after earlier requests, the
    retention with the least expected cost: the extra price of writing `written_tokens`
    at its rate, plus the pause under it. `history`: gaps someone waited through (pinged
    by the rule); `unattended`: gaps nobody waited on (never pinged: a miss once past the
    TTL; a gap of `inf` is a session left, which costs nothing under any retention).
    `shares`: the chance that the gap after this request is like those in `history`, and
    like those in `unattended` (the rest: nothing follows); None: each gap seen equally
    likely. `survival`: the chance the entry lives through a pause inside its TTL at all
    (evictions learned from the wire): an evicted pause misses under every retention, so
    what a longer one saves is weighed by it, and a request after one writes its whole
    prefix again, so what a longer one costs is paid on that share of the prefix too.
    Where writes are not billed the longest retention is taken: it costs nothing more
    (OpenAI's `24h`); else with no history the default stays."""
    default = profile.retention
    # What the request writes: its new tokens, and, where the pause before it evicted the
    # entry (1 - survival), the prefix it would have read: a longer TTL is paid on both.
    written = written_tokens + (1.0 - survival) * max(0, prefix_tokens - written_tokens)
    waited_share, unattended_share = _shares(history, unattended, shares)
    following = _Following(
        profile,
        prefix_tokens,
        cold_tokens,
        output_ratio,
        survival,
        history,
        unattended,
        waited_share,
        unattended_share,
    )
    default_cost = following.cost_under(default)
    choice = RetentionChoice(default, default_cost, default_cost)
    for longer in sorted(profile.retentions, key=lambda r: r.seconds):
        if longer.seconds <= default.seconds:
            continue
        if not profile.writes_billed:  # costs nothing more and never lives shorter
            choice = RetentionChoice(longer, following.cost_under(longer), default_cost)
            continue
        extra = (longer.write_multiplier - default.write_multiplier) * written
        cost = extra + following.cost_under(longer)
        if following.informed and cost < choice.expected - 1e-9:
            choice = RetentionChoice(longer, cost, default_cost)
    return choice


def _shares(
    history: Sequence[float], unattended: Sequence[float], shares: tuple[float, float] | None
) -> tuple[float, float]:
    """The chances that the gap after a request is waited through and that nobody waits
    on it (`choose_retention`'s `shares`, each gap seen equally likely when None); none
    for a kind of gap never seen."""
    if shares is None:
        seen = len(history) + len(unattended)
        shares = (len(history) / seen, len(unattended) / seen) if seen else (0.0, 0.0)
    return (shares[0] if history else 0.0, shares[1] if unattended else 0.0)


@dataclass(frozen=True)
class _Following:
    """What may follow a request, priced under a retention (`cost_under`): a gap like those
    in `history` (waited through, pinged by the rule) by `waited_share`, one like those in
    `unattended` (nobody waits: a miss once past the TTL) by `unattended_share`, each
    inside its TTL survived by `survival`."""

    profile: CacheProfile
    prefix_tokens: int
    cold_tokens: int | None
    output_ratio: float
    survival: float
    history: Sequence[float]
    unattended: Sequence[float]
    waited_share: float
    unattended_share: float

    @property
    def informed(self) -> bool:
        """Whether any gap seen says what follows (else nothing is priced)."""
        return self.waited_share > 0 or self.unattended_share > 0

    def cost_under(self, retention: Retention) -> float:
        """The expected cost of what follows with the request written for `retention`."""
        if not self.informed:
            return 0.0
        profile, prefix_tokens, cold_tokens = self.profile, self.prefix_tokens, self.cold_tokens
        history, unattended = self.history, self.unattended
        # The resume writes at the model's retention, whatever this request was written with.
        write = profile.retention.write_multiplier if profile.writes_billed else 1.0
        cold = prefix_tokens if cold_tokens is None else min(cold_tokens, prefix_tokens)
        cached = profile.cacheable(prefix_tokens)
        miss = max(0.0, write * cold - profile.read_multiplier * cached)
        costs = pause_costs(
            profile,
            prefix_tokens,
            cold_tokens=cold_tokens,
            output_ratio=self.output_ratio,
            retention=retention,
        )
        if costs is None:
            waited = miss * sum(p >= retention.seconds for p in history)
        else:
            waited = expected_cost(costs, history) * len(history)
        missed = sum(math.isfinite(p) and p >= retention.seconds for p in unattended)
        cost = self.waited_share * waited / len(history) if history else 0.0
        cost += self.unattended_share * miss * missed / len(unattended) if unattended else 0.0
        return self.survival * cost
