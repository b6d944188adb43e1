"""What the keep-alive benchmark measures warmloop's rule against (`benchmarks.keepalive`):

- `optimum_arm`: knowing every pause, dynamic programming over the session: each request
  picks a retention and, where someone waits, no keep-alive or the fewest that cover the
  pause (every option another arm uses; pinging part of a pause is never cheaper), each
  path priced by the simulator, the `BEAM` cheapest paths kept per last retention (an
  entry an older request wrote for longer makes paths that end alike differ), ties to the
  longer TTL.
- `InformedArm`: a live agent that knows the generating distributions of the workload
  (`benchmarks.keepalive_sessions`: the tool mix and each tool's duration, the run
  lengths, the follow-up's share and delay) but never a draw. A reference for learning
  from history, not a bound: it prices each request's choice alone.
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from collections.abc import Sequence

from benchmarks.keepalive_sessions import (
    FOLLOWUP,
    FOLLOWUP_SHARE,
    MODEL_SECONDS,
    RUN_STEPS,
    SYSTEM_TOKENS,
    TOOLS,
    Plan,
    Pricer,
    Spread,
    Step,
    ping_interval,
)
from warmloop.facts.profiles import CacheProfile, Retention
from warmloop.keepalive.rule import pause_costs

BEAM = 2
"""Paths the optimum keeps per last retention (older entries written with a longer TTL
make paths that end alike differ)."""


def _covering(retention: Retention, step: Step) -> int:
    """The fewest keep-alives that keep the entry alive until the next request (0 if the
    pause ends within the TTL): one at each moment, as every arm sends them."""
    interval, gap = ping_interval(retention), step.pause + MODEL_SECONDS
    pings = 0
    while gap >= pings * interval + retention.seconds and (pings + 1) * interval < step.pause:
        pings += 1
    return pings


def optimum_arm(profile: CacheProfile, steps: Sequence[Step], ratio: float) -> list[Plan]:
    """Knowing every pause: dynamic programming over the session, each request choosing
    a retention and, where someone waits, none or the fewest keep-alives that cover the
    pause (every option another arm has, partial pinging being never cheaper), priced by
    the simulator. The state is the last request's retention (the entry the next request
    may read); ties go to the longer one."""
    by_length = sorted(profile.retentions, key=lambda r: -r.seconds)
    states: list[tuple[float, Pricer, list[Plan]]] = [(0.0, Pricer(profile), [])]
    for step in steps:
        after: dict[str, list[tuple[float, Pricer, list[Plan]]]] = defaultdict(list)
        for cost, pricer, plans in states:
            for retention in by_length:
                for pings in sorted({0, _covering(retention, step) if step.waited else 0}):
                    plan = Plan(retention, pings)
                    twin = pricer.copy()
                    after[retention.name].append(
                        (cost + twin.step(step, plan), twin, [*plans, plan])
                    )
        states = [
            state
            for kept in after.values()
            for state in sorted(kept, key=lambda state: state[0])[:BEAM]
        ]
    return min(states, key=lambda state: state[0])[2]


def _last_share(run: int, index: int) -> float:
    """The chance that request `index` (from 0) of run `run` is its last, given it came."""
    low, high = RUN_STEPS[min(run, 1)]
    return 1.0 / (high - index) if low <= index + 1 <= high else 0.0


@functools.cache
def _kind_outcomes(spread: Spread, interval: float, ttl: float) -> tuple[tuple[float, float], ...]:
    """For pauses drawn from `spread` (someone waiting), per keep-alive limit (0, 1, ...):
    the mean keep-alives sent and the chance the cache dies before the next request."""
    grid = spread.grid()
    outcomes = []
    for limit in range(max(0, math.ceil(spread.high / interval)) + 1):
        sent = [min(limit, max(0, math.ceil(p / interval) - 1)) for p in grid]
        dead = sum(p + MODEL_SECONDS >= n * interval + ttl for p, n in zip(grid, sent, strict=True))
        outcomes.append((sum(sent) / len(grid), dead / len(grid)))
    return tuple(outcomes)


def _kind_cost(spread: Spread, interval: float, ttl: float, miss: float) -> tuple[int, float]:
    """The keep-alive limit with the least expected cost (pings of price 1, a miss of
    price `miss`) for pauses drawn from `spread`, and that cost."""
    costs = [sent + dead * miss for sent, dead in _kind_outcomes(spread, interval, ttl)]
    best = min(range(len(costs)), key=lambda limit: (round(costs[limit], 9), limit))
    return best, costs[best]


class InformedArm:
    """A live agent that knows the benchmark's generating distributions (the tool mix,
    each tool's duration, the follow-up's share and delay, the run lengths) but never a
    draw: each request's retention has the least expected cost over what may follow it
    (the next tool is not known yet), and once the tool is known it sends the keep-alive
    count with the least expected cost for that tool's duration distribution. A reference
    for learning from history, not a bound (each request's choice is priced alone)."""

    def __call__(self, profile: CacheProfile, steps: Sequence[Step], ratio: float) -> list[Plan]:
        plans: list[Plan] = []
        prompt, run, index, warm = SYSTEM_TOKENS, 0, 0, False
        for step in steps:
            prompt += step.tokens
            written = step.tokens if warm else prompt

            outlook = self.outlook(run, index)
            retention = min(
                sorted(profile.retentions, key=lambda r: -r.seconds),
                key=lambda r: self.expected(profile, prompt, written, ratio, r, outlook),
            )
            pings = 0
            if step.waited:
                spread = next(s for kind, _, s in TOOLS if kind == step.kind)
                pings = self.pause(profile, prompt, ratio, retention, spread, True)[0]
            plans.append(Plan(retention, pings))
            # The pause is over now: whether the cache lived through it is known.
            sent = min(pings, max(0, math.ceil(step.pause / ping_interval(retention)) - 1))
            gap = step.pause + MODEL_SECONDS
            warm = gap < sent * ping_interval(retention) + retention.seconds
            run, index = (run + 1, 0) if step.kind == "followup" else (run, index + 1)
        return plans

    @staticmethod
    def outlook(run: int, index: int) -> list[tuple[float, Spread, bool]]:
        """What may follow request `index` of run `run`: (chance, duration, someone waits)."""
        last = _last_share(run, index)
        later = FOLLOWUP_SHARE if run == 0 else 0.0
        outlook = [(share * (1 - last), spread, True) for _, share, spread in TOOLS]
        return [*outlook, (last * later, FOLLOWUP, False)]

    def expected(
        self,
        profile: CacheProfile,
        prompt: int,
        written: int,
        ratio: float,
        retention: Retention,
        outlook: Sequence[tuple[float, Spread, bool]],
    ) -> float:
        """The expected cost of writing this request with `retention`: the extra write
        price, and the pause that follows under it."""
        rate = retention.write_multiplier - profile.retention.write_multiplier
        extra = rate * written if profile.writes_billed else 0.0
        return extra + sum(
            share * self.pause(profile, prompt, ratio, retention, spread, waited)[1]
            for share, spread, waited in outlook
            if share > 0
        )

    @staticmethod
    def pause(
        profile: CacheProfile,
        prompt: int,
        ratio: float,
        retention: Retention,
        spread: Spread,
        waited: bool,
    ) -> tuple[int, float]:
        """The keep-alives and expected cost (base-input tokens) of a pause from `spread`
        after a request written with `retention`."""
        answer = 0.0 if profile.prewarm else ratio  # a prewarm generates nothing
        costs = pause_costs(profile, prompt, output_ratio=answer, retention=retention)
        if costs is not None and waited:
            pings, cost = _kind_cost(spread, costs.interval, costs.ttl, costs.miss / costs.ping)
            return pings, cost * costs.ping
        write = profile.retention.write_multiplier if profile.writes_billed else 1.0  # resume's
        miss = max(0.0, write * prompt - profile.read_multiplier * profile.cacheable(prompt))
        return 0, miss * _kind_outcomes(spread, retention.seconds, retention.seconds)[0][1]
