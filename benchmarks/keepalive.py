"""Keeping the cache warm across pauses: warmloop's keep-alive rule against fixed rules, an
informed online agent and the offline optimum that knows each pause's length.

Sessions of an agent at work: a run of 10-25 steps, each step a request then a tool; most
tools take seconds, some run tests or a build (1-20 minutes), some wait on a human's
approval (1-60 minutes); most sessions get a follow-up run hours later (30 minutes to 8
hours, a user who came back: nobody waits on the session meanwhile, so nothing is pinged).
Every request and keep-alive is priced by the cache simulator (`cache/simulate.py`) under
each provider's rules and the dated price table. Arms:

- none: no keep-alive, the default retention;
- warmloop: what an agent with defaults does, across the sessions in order (one user's:
  a session's follow-up comes before the next session starts): the model's own
  retention (OpenAI's free `24h` where the model asks for it by default), a longer TTL
  chosen per request where a request carries one (Anthropic's markers, GPT-5.6's
  `prompt_cache_options.ttl`) from what it saw follow its requests: the gaps between the
  requests of a run, and the follow-ups after runs weighed by the chance that this
  request ends its run (from the lengths of its runs so far and the share of them that
  were followed); and each tool's keep-alives by its earlier durations;
- fixed: a keep-alive every TTL-minus-margin through every pause someone waits on;
- always long: every request written with the longest retention sold (Anthropic 1h,
  OpenAI 24h, GPT-5.6 12h; DeepSeek sells one);
- informed online: a live agent that knows the generating distributions below (the tool
  mix and each tool's duration, the run lengths, the follow-up's share and delay) but
  never a draw. Each request's retention has the least expected cost over what may
  follow it (the tool is chosen by the model's answer, so it is not known yet; the chance
  that this request is its run's last comes from the run lengths); once the tool is
  known, it sends the keep-alive count with the least expected cost for that tool's
  duration distribution. It knows whether its cache lived through the last pause (so a
  cold request prices a longer TTL on all it writes). A reference for learning from
  history, not a bound: it prices each request's choice alone, and warmloop measures
  slightly below it on Anthropic.
- optimum: knowing every pause, dynamic programming over the session: each request picks
  a retention and, where someone waits, no keep-alive or the fewest that cover the pause
  (every option another arm uses; pinging part of a pause is never cheaper), each path
  priced by the simulator, the `BEAM` cheapest paths kept per last retention (an entry an
  older request wrote for longer makes paths that end alike differ), ties to the longer
  TTL.

Below the table, where warmloop and the informed arm pay more than the optimum: the
keep-alives in each kind of pause, and the request after it.

    python -m benchmarks.keepalive [--sessions 200] [--seed 7] [--plot keepalive.svg]
"""

from __future__ import annotations

import argparse
import copy
import functools
import math
import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from itertools import accumulate
from pathlib import Path

from warmloop.agent.learned import Learned
from warmloop.agent.pauses import longer_retention
from warmloop.cache.price_table import prices_for
from warmloop.cache.pricing import cost_breakdown
from warmloop.cache.profiles import CacheProfile, Retention, profile_for
from warmloop.cache.simulate import Block, CacheSimulator, SimRequest
from warmloop.maintenance.keepalive import margin, pause_costs, ping_limit
from warmloop.messages import UserText
from warmloop.providers.keepalive import answer_tokens
from warmloop.providers.select import resolve_model
from warmloop.transcript import Transcript

SYSTEM_TOKENS = 12_000
BEAM = 2
"""Paths the optimum keeps per last retention (older entries written with a longer TTL
make paths that end alike differ)."""


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
    (`tool:<name>`, `followup`) and length; `waited`: someone waits on the session."""

    tokens: int
    kind: str
    pause: float
    waited: bool = True


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


def sessions(count: int, seed: int) -> list[list[Step]]:
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
        interval = _interval(plan.retention)
        for k in range(1, plan.pings + 1):
            if k * interval >= step.pause:
                break
            ping = replace(request, at=self.now + k * interval, output_tokens=1)
            pinged += cost_breakdown(self.sim.request(ping), self.prices).total
        self.ledger[f"keep-alives in {step.kind}"] += pinged
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


def _interval(retention: Retention) -> float:
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


def _each_step(policy: Callable[[CacheProfile, int, Step, float], Plan]) -> Arm:
    def arm(profile: CacheProfile, steps: Sequence[Step], ratio: float) -> list[Plan]:
        prompts = accumulate((s.tokens for s in steps), initial=SYSTEM_TOKENS)
        return [policy(profile, p, s, ratio) for p, s in zip(list(prompts)[1:], steps, strict=True)]

    return arm


def none_arm(profile: CacheProfile, prompt: int, step: Step, ratio: float) -> Plan:
    return Plan(profile.retention, 0)


def fixed_arm(profile: CacheProfile, prompt: int, step: Step, ratio: float) -> Plan:
    pings = 10**6 if step.waited and math.isfinite(profile.ttl_seconds) else 0
    return Plan(profile.retention, pings)


def long_arm(profile: CacheProfile, prompt: int, step: Step, ratio: float) -> Plan:
    return Plan(max(profile.retentions, key=lambda r: r.seconds), 0)


def _covering(retention: Retention, step: Step) -> int:
    """The fewest keep-alives that keep the entry alive until the next request (0 if the
    pause ends within the TTL): one at each moment, as every arm sends them."""
    interval, gap = _interval(retention), step.pause + MODEL_SECONDS
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


class WarmloopArm:
    """What an agent with defaults does, across the sessions in order, as one agent
    process: one `Learned` (the agent's own memory) and the same pure functions the live
    agent calls, with the inputs it has (`agent/pauses.py`)."""

    def __init__(self) -> None:
        self.learned = Learned()
        self.sessions = 0

    def __call__(self, profile: CacheProfile, steps: Sequence[Step], ratio: float) -> list[Plan]:
        facts, wire, answer = _default_agent(profile.model)
        sold = {r.name for r in profile.retentions}  # a row that sells less: the agent's table
        facts = replace(facts, retentions=tuple(r for r in facts.retentions if r.name in sold))
        learned, plans = self.learned, []
        self.sessions += 1
        conversation = f"session-{self.sessions}"
        prompt, before, now, sent, first = SYSTEM_TOKENS, None, 0.0, 0, True
        for step in steps:
            prompt += step.tokens
            # The retention: the model's own (OpenAI: the free `24h` the model asks for on
            # every request, else the provider's default), or a longer TTL a request carries
            # on its own (Anthropic's markers, GPT-5.6's `prompt_cache_options.ttl`) chosen
            # per request (`longer_retention`) from the gaps between the requests of a run
            # and the follow-ups after runs, by the chance that this request ends its run
            # (`Learned.outlook`): a run's first request writes its whole prompt.
            written = prompt if before is None else step.tokens
            longer = longer_retention(
                facts,
                wire,
                prompt,
                written,
                learned.gaps,
                follow_ups=learned.follow_ups,
                shares=learned.outlook(sent, first=first),
            )
            # The gap to this request is learned as it goes out, after the choice
            # (`RunPauses.sent` follows `with_retention`), and only within a run; a run's
            # end and the follow-up's start are learned as the agent sees them
            # (`RunPauses.finished`, `RunPauses.started`).
            if before is not None:
                learned.gap(before.pause + MODEL_SECONDS)
            sent += 1
            pings = 0
            if step.waited:  # a tool's pause: keep-alives by this tool's history
                answer_ratio = ratio * answer  # the answer the keep-alive asks for
                costs = pause_costs(facts, prompt, output_ratio=answer_ratio, retention=longer)
                if costs is not None:
                    pings = ping_limit(costs, list(learned.pauses[step.kind]))
                learned.paused(step.kind, step.pause)  # from the request, once it ended
            plans.append(Plan(longer or facts.retention, pings))
            if not step.waited:  # a run ends with its last request
                learned.finished(sent, conversation, now, first=first)
                if step.kind == "followup":  # the user comes back: a new run starts
                    learned.followed(conversation, now + step.pause + MODEL_SECONDS)
                sent, first = 0, False
            before = step if step.waited else None
            now += step.pause + MODEL_SECONDS
        return plans


@functools.cache
def _default_agent(spec: str) -> tuple[CacheProfile, str, int]:
    """The cache rules, wire format and keep-alive answer of the model a user with
    defaults builds from `spec` (never sent: no key is needed to build it)."""
    model = resolve_model(spec, api_key="benchmark")
    rendered = model.render(Transcript([UserText("benchmark")]), [])
    return model.facts.profile, rendered.wire_format, answer_tokens(rendered) or 0


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
            sent = min(pings, max(0, math.ceil(step.pause / _interval(retention)) - 1))
            gap = step.pause + MODEL_SECONDS
            warm = gap < sent * _interval(retention) + retention.seconds
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
        costs = pause_costs(profile, prompt, output_ratio=ratio, retention=retention)
        if costs is not None and waited:
            pings, cost = _kind_cost(spread, costs.interval, costs.ttl, costs.miss / costs.ping)
            return pings, cost * costs.ping
        write = profile.retention.write_multiplier if profile.writes_billed else 1.0  # resume's
        miss = max(0.0, write * prompt - profile.read_multiplier * profile.cacheable(prompt))
        return 0, miss * _kind_outcomes(spread, retention.seconds, retention.seconds)[0][1]


ARMS: tuple[tuple[str, Callable[[], Arm]], ...] = (
    ("none", lambda: _each_step(none_arm)),
    ("warmloop", WarmloopArm),
    ("fixed ping", lambda: _each_step(fixed_arm)),
    ("always long", lambda: _each_step(long_arm)),
    ("informed online", InformedArm),
    ("optimum", lambda: optimum_arm),
)


Ledgers = dict[str, dict[str, dict[str, float]]]
"""Provider -> arm -> dollars by pause kind (`Pricer.ledger`)."""


def measure(count: int, seed: int, ledgers: Ledgers | None = None) -> dict[str, dict[str, float]]:
    drawn = sessions(count, seed)
    results: dict[str, dict[str, float]] = {}
    for provider in PROVIDERS:
        profile = provider.profile
        prices = prices_for(profile.model)
        assert prices is not None
        ratio = prices.rates.output / prices.rates.input
        row: dict[str, float] = {}
        for name, make in ARMS:
            arm, ledger = make(), dict[str, float]()
            row[name] = sum(
                price_session(profile, s, arm(profile, s, ratio), ledger) for s in drawn
            )
            if ledgers is not None:
                ledgers.setdefault(provider.label, {})[name] = ledger
        results[provider.label] = row
    return results


def gaps(ledgers: Ledgers) -> str:
    """Where warmloop and the informed arm pay more than the optimum, by pause kind."""
    lines = [
        "| provider | where | warmloop - optimum $ | informed online - optimum $ |",
        "|---|---|---|---|",
    ]
    for label, arms in ledgers.items():
        best, rule, informed = arms["optimum"], arms["warmloop"], arms["informed online"]
        for key in sorted(set(best) | set(rule) | set(informed)):
            over = rule.get(key, 0.0) - best.get(key, 0.0)
            known = informed.get(key, 0.0) - best.get(key, 0.0)
            if abs(over) >= 0.05 or abs(known) >= 0.05:
                lines.append(f"| {label} | {key} | {over:+.2f} | {known:+.2f} |")
    return "\n".join(lines)


def table(results: dict[str, dict[str, float]]) -> str:
    names = [name for name, _ in ARMS]
    lines = [
        "| provider | "
        + " | ".join(f"{n} $" for n in names)
        + " | warmloop / optimum | warmloop / informed online |",
        "|---|" + "---|" * (len(names) + 2),
    ]
    for label, row in results.items():
        best = row["optimum"]
        cells = [f"{row[n]:.2f} ({row[n] / best:.3f}x)" for n in names]
        informed = row["warmloop"] / row["informed online"]
        ratios = f" | {row['warmloop'] / best:.3f} | {informed:.3f} |"
        lines.append(f"| {label} | " + " | ".join(cells) + ratios)
    return "\n".join(lines)


def plot(results: dict[str, dict[str, float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [name for name, _ in ARMS]
    labels = list(results)
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / len(names)
    for i, name in enumerate(names):
        values = [results[label][name] / results[label]["optimum"] for label in labels]
        ax.bar([x + i * width for x in range(len(labels))], values, width, label=name)
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(labels))])
    ax.set_xticklabels([label.split(" (")[0] for label in labels], fontsize=8)
    ax.axhline(1.1, color="grey", linestyle=":", linewidth=1)
    ax.set_ylabel("session cost / offline optimum")
    ax.set_title("Pauses: keep-alive rules against the offline optimum")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--plot", type=Path, default=None, help="write the chart here")
    args = parser.parse_args(argv)
    ledgers: Ledgers = {}
    results = measure(args.sessions, args.seed, ledgers)
    print(table(results))
    print()
    print(gaps(ledgers))
    if args.plot is not None:
        plot(results, args.plot)
        print(f"plot: {args.plot}")


if __name__ == "__main__":
    main()
