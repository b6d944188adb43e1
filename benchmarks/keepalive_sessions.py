"""The workload of the keep-alive benchmark (`benchmarks.keepalive`) and its prices.

Sessions of an agent at work: a run of 10-25 steps, each step a request then a tool; most
tools take seconds, some run tests or a build (1-20 minutes), some wait on a human's
approval (1-60 minutes); most sessions get a follow-up run hours later (30 minutes to 8
hours, a user who came back: nobody waits on the session meanwhile, so nothing is pinged).
A plan says, for each request, the retention it is written with and the keep-alives in
the pause after it; `Pricer` prices a session's requests and keep-alives one step at a
time with the cache simulator (`simulate.py`) under each provider's rules and the
dated price table.
"""

from __future__ import annotations

import copy
import math
import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from warmloop.facts.price_table import prices_for
from warmloop.facts.pricing import cost_breakdown
from warmloop.facts.profiles import CacheProfile, Retention, profile_for
from warmloop.keepalive.rule import margin
from warmloop.simulate import Block, CacheSimulator, SimRequest, keepalive

SYSTEM_TOKENS = 12_000


@dataclass(frozen=True)
class Provider:
    label: str
    spec: str
    ttl: str | None = None
    sold: tuple[str, ...] | None = None
    """Only these retentions are sold (None: what the table says)."""

    @property
    def profile(self) -> CacheProfile:
        profile = profile_for(self.spec, cache_ttl=self.ttl)
        if self.sold is None:
            return profile
        return replace(
            profile, retentions=tuple(r for r in profile.retentions if r.name in self.sold)
        )


PROVIDERS = (
    Provider("Anthropic Sonnet 4.6 (5m, 1h sold)", "anthropic:claude-sonnet-4-6", "5m"),
    Provider("OpenAI GPT-5 (in-memory, 24h free)", "openai:gpt-5", "in_memory"),
    Provider("OpenAI GPT-5.5 (24h)", "openai:gpt-5.5", "24h"),
    Provider("OpenAI GPT-5.6 (30m, 12h sold)", "openai:gpt-5.6-sol", "30m"),
    # OpenAI's API reference says `30m` is "currently the only supported value" of
    # `prompt_cache_options.ttl`, where the guide and Azure document `12h` too.
    Provider("OpenAI GPT-5.6 (30m only)", "openai:gpt-5.6-sol", "30m", ("30m",)),
    Provider("DeepSeek chat (disk)", "deepseek:deepseek-chat", None),
)


@dataclass(frozen=True)
class Step:
    """One request (adding `tokens` to the prompt) and the pause after it: its kind
    (`tool:<name>`, `followup`) and length; `waited`: someone waits on the session;
    `evicted`: the provider drops the cache during the pause, whatever kept it warm (the
    next request misses it; an arm's keep-alives in the pause bought nothing)."""

    tokens: int
    kind: str
    pause: float
    waited: bool = True
    evicted: bool = False


@dataclass(frozen=True)
class Spread:
    """A pause length's distribution: uniform between `low` and `high` seconds, or
    log-uniform (`log`). The benchmark draws from it; the informed arm reads it."""

    low: float
    high: float
    log: bool = False

    def draw(self, rng: random.Random) -> float:
        if self.log:
            return math.exp(rng.uniform(math.log(self.low), math.log(self.high)))
        return rng.uniform(self.low, self.high)

    def grid(self, points: int = 256) -> tuple[float, ...]:
        """Equally likely pause lengths (the quantiles at the midpoints): the distribution
        as an expected cost reads it."""
        shares = [(i + 0.5) / points for i in range(points)]
        if self.log:
            low, high = math.log(self.low), math.log(self.high)
            return tuple(math.exp(low + q * (high - low)) for q in shares)
        return tuple(self.low + q * (self.high - self.low) for q in shares)


TOOLS: tuple[tuple[str, float, Spread], ...] = (
    ("tool:run_tests", 0.12, Spread(60, 1_200)),
    ("tool:ask_approval", 0.05, Spread(60, 3_600, log=True)),
    ("tool:read_file", 0.83, Spread(3, 30)),
)
"""Each step's tool (its kind, its share of steps, its duration) when the run goes on."""
FOLLOWUP = Spread(1_800, 28_800, log=True)
FOLLOWUP_SHARE = 0.7
"""Sessions that get a follow-up run, this long after the first run's last request."""
RUN_STEPS = ((10, 25), (5, 15))
"""Requests in the first run, and in the follow-up run (uniform)."""
MODEL_SECONDS = 10.0
"""The model's own seconds before the next request goes out."""


def sessions(count: int, seed: int, eviction: float = 0.0) -> list[list[Step]]:
    """`count` sessions drawn from `seed`; with `eviction`, each pause someone waits on is
    evicted at that chance (drawn apart, so the sessions themselves stay the same)."""
    drawn = _sessions(count, seed)
    if eviction <= 0.0:
        return drawn
    evicts = random.Random(f"evictions-{seed}")
    return [
        [
            replace(step, evicted=True) if step.waited and evicts.random() < eviction else step
            for step in steps
        ]
        for steps in drawn
    ]


def _sessions(count: int, seed: int) -> list[list[Step]]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        steps: list[Step] = []
        runs = 2 if rng.random() < FOLLOWUP_SHARE else 1
        for run in range(runs):
            length = rng.randint(*RUN_STEPS[min(run, 1)])
            for i in range(length):
                tokens = rng.randint(300, 3_000)
                last = i == length - 1
                if last and run < runs - 1:
                    steps.append(Step(tokens, "followup", FOLLOWUP.draw(rng), False))
                elif last:
                    steps.append(Step(tokens, "end", 0.0, False))
                else:
                    draw, below = rng.random(), 0.0
                    for kind, share, spread in TOOLS:
                        below += share
                        if draw < below or kind == TOOLS[-1][0]:
                            steps.append(Step(tokens, kind, spread.draw(rng)))
                            break
        out.append(steps)
    return out


@dataclass
class Plan:
    """One request's choices: its retention and how many keep-alives follow it."""

    retention: Retention
    pings: int


Arm = Callable[[CacheProfile, Sequence[Step], float], list[Plan]]
"""(profile, a session's steps, output ratio) -> the plan for each request. A live arm
plans request k from steps before k and step k's kind only once its tool is known."""


class Pricer:
    """Prices a session's requests and keep-alives one step at a time with the cache
    simulator (`copy()` forks it, so the optimum can price alternatives)."""

    def __init__(self, profile: CacheProfile) -> None:
        prices = prices_for(profile.model)
        assert prices is not None
        self.profile, self.prices = profile, prices
        self.sim = CacheSimulator(profile)
        self.now, self.prompt, self.number = 0.0, SYSTEM_TOKENS, 0
        self.keys: list[Block] = []
        self.before = "start"
        self.ledger: dict[str, float] = defaultdict(float)
        """Dollars by pause kind: its keep-alives, and the request after it."""

    def copy(self) -> Pricer:
        twin = copy.copy(self)
        twin.sim, twin.keys = self.sim.copy(), list(self.keys)
        twin.ledger = defaultdict(float, self.ledger)
        return twin

    def step(self, step: Step, plan: Plan) -> float:
        """Dollars for one request under `plan` and the keep-alives in the pause after it."""
        self.prompt += step.tokens
        request = _request(
            self.profile, self.now, self.number, step.tokens, self.keys, plan.retention
        )
        self.keys, self.number = list(request.blocks), self.number + 1
        asked = cost_breakdown(self.sim.request(request), self.prices).total
        self.ledger[f"request after {self.before}"] += asked
        pinged = 0.0
        interval = ping_interval(plan.retention)
        for k in range(1, plan.pings + 1):
            if k * interval >= step.pause:
                break
            ping = keepalive(request, self.now + k * interval, self.profile)
            pinged += cost_breakdown(self.sim.request(ping), self.prices).total
        self.ledger[f"keep-alives in {step.kind}"] += pinged
        if step.evicted:  # dropped during the pause: the next request finds nothing
            self.sim = CacheSimulator(self.profile)
        self.now += step.pause + MODEL_SECONDS
        self.before = step.kind
        return asked + pinged


def price_session(
    profile: CacheProfile,
    steps: Sequence[Step],
    plans: Sequence[Plan],
    ledger: dict[str, float] | None = None,
) -> float:
    """Dollars for one session under `plans`, every request and keep-alive simulated;
    `ledger` adds them up by pause kind."""
    pricer = Pricer(profile)
    total = sum(pricer.step(step, plan) for step, plan in zip(steps, plans, strict=True))
    for key, dollars in pricer.ledger.items():
        if ledger is not None:
            ledger[key] = ledger.get(key, 0.0) + dollars
    return total


def ping_interval(retention: Retention) -> float:
    """Seconds between keep-alives under `retention` (its TTL less the margin)."""
    return retention.seconds - margin(retention.seconds)


def _request(
    profile: CacheProfile,
    at: float,
    number: int,
    tokens: int,
    previous: list[Block],
    retention: Retention,
) -> SimRequest:
    explicit = profile.mode == "explicit"
    mark = retention.name if explicit else None
    base = (
        [Block(SYSTEM_TOKENS, "system", mark)]
        if not previous
        else [replace(previous[0], breakpoint=mark)]
    )
    middle = [replace(b, breakpoint=None) for b in previous[1:]]
    if middle and explicit:
        middle[-1] = replace(middle[-1], breakpoint=mark)  # the previous request's end
    new = Block(tokens, f"step-{number}", mark)
    blocks = (*base, *middle, new)
    return SimRequest(at, blocks, output_tokens=150, retention=None if explicit else retention.name)
