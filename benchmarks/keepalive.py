"""Keeping the cache warm across pauses: warmloop's keep-alive rule against fixed rules and
the offline optimum that knows each pause's length.

Sessions of an agent at work: a run of 10-25 steps, each step a request then a tool; most
tools take seconds, some run tests or a build (1-20 minutes), some wait on a human's
approval (1-60 minutes); most sessions get a follow-up run hours later (30 minutes to 8
hours, a user who came back: nobody waits on the session meanwhile, so nothing is pinged).
Every request and keep-alive is priced by the cache simulator (`cache/simulate.py`) under
each provider's rules and the dated price table. Arms:

- none: no keep-alive, the default retention;
- warmloop: the rule of `maintenance/keepalive.py`, learning as it goes (each tool's
  earlier durations, the gaps after earlier requests), across the sessions in order;
- fixed: a keep-alive every TTL-minus-margin through every pause someone waits on;
- always long: every request written with the longest retention sold (Anthropic 1h,
  OpenAI 24h, GPT-5.6 12h; DeepSeek sells one);
- optimum: per pause, knowing its length, the cheapest of going cold, pinging through,
  or writing the request before it with a longer retention.

    python -m benchmarks.keepalive [--sessions 200] [--seed 7] [--plot keepalive.svg]
"""

from __future__ import annotations

import argparse
import math
import random
from collections import defaultdict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from warmloop.cache.price_table import prices_for
from warmloop.cache.pricing import cost_breakdown
from warmloop.cache.profiles import CacheProfile, Retention, profile_for
from warmloop.cache.simulate import Block, CacheSimulator, SimRequest
from warmloop.maintenance.keepalive import (
    choose_retention,
    margin,
    offline_cost,
    pause_costs,
    ping_limit,
)

SYSTEM_TOKENS = 12_000
HISTORY = 64
"""Earlier pauses the rule remembers per kind (the agent's own bound)."""


@dataclass(frozen=True)
class Provider:
    label: str
    spec: str
    ttl: str | None = None

    @property
    def profile(self) -> CacheProfile:
        return profile_for(self.spec, cache_ttl=self.ttl)


PROVIDERS = (
    Provider("Anthropic Sonnet 4.6 (5m, 1h sold)", "anthropic:claude-sonnet-4-6", "5m"),
    Provider("OpenAI GPT-5 (in-memory, 24h free)", "openai:gpt-5", "in_memory"),
    Provider("OpenAI GPT-5.5 (24h)", "openai:gpt-5.5", "24h"),
    Provider("OpenAI GPT-5.6 (30m, 12h sold)", "openai:gpt-5.6-sol", "30m"),
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


def sessions(count: int, seed: int) -> list[list[Step]]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        steps: list[Step] = []
        runs = 2 if rng.random() < 0.7 else 1
        for run in range(runs):
            length = rng.randint(10, 25) if run == 0 else rng.randint(5, 15)
            for i in range(length):
                tokens = rng.randint(300, 3_000)
                last = i == length - 1
                if last and run < runs - 1:
                    steps.append(Step(tokens, "followup", _log_uniform(rng, 1_800, 28_800), False))
                elif last:
                    steps.append(Step(tokens, "end", 0.0, False))
                else:
                    draw = rng.random()
                    if draw < 0.12:
                        steps.append(Step(tokens, "tool:run_tests", rng.uniform(60, 1_200)))
                    elif draw < 0.17:
                        steps.append(
                            Step(tokens, "tool:ask_approval", _log_uniform(rng, 60, 3_600))
                        )
                    else:
                        steps.append(Step(tokens, "tool:read_file", rng.uniform(3, 30)))
        out.append(steps)
    return out


def _log_uniform(rng: random.Random, low: float, high: float) -> float:
    return math.exp(rng.uniform(math.log(low), math.log(high)))


@dataclass
class Plan:
    """One request's choices: its retention and how many keep-alives follow it."""

    retention: Retention
    pings: int


@dataclass
class Memory:
    """What warmloop's agent has seen: each pause kind's lengths, and the gaps after
    requests (for the retention choice)."""

    kinds: dict[str, deque[float]] = field(default_factory=lambda: defaultdict(_window))
    gaps: deque[tuple[float, bool]] = field(default_factory=lambda: deque(maxlen=4 * HISTORY))
    """(seconds, someone waited) after each earlier request, in one window so their mix
    is the one seen."""


def _window() -> deque[float]:
    return deque(maxlen=HISTORY)


Policy = Callable[[CacheProfile, int, Step, float], Plan]
"""(profile, prompt tokens, step, output ratio) -> the plan for this request."""


def price_session(
    profile: CacheProfile, steps: Sequence[Step], plan: Policy, output_ratio: float
) -> float:
    """Dollars for one session under `plan`, every request and keep-alive simulated."""
    prices = prices_for(profile.model)
    assert prices is not None
    sim = CacheSimulator(profile)
    now, prompt, total = 0.0, SYSTEM_TOKENS, 0.0
    keys: list[Block] = []
    for number, step in enumerate(steps):
        prompt += step.tokens
        chosen = plan(profile, prompt, step, output_ratio)
        request = _request(profile, now, number, step.tokens, keys, chosen.retention)
        keys = list(request.blocks)
        total += cost_breakdown(sim.request(request), prices).total
        costs = pause_costs(profile, prompt, output_ratio=output_ratio, retention=chosen.retention)
        interval = costs.interval if costs is not None else _interval(chosen.retention)
        for k in range(1, chosen.pings + 1):
            if k * interval >= step.pause:
                break
            ping = replace(request, at=now + k * interval, output_tokens=1)
            total += cost_breakdown(sim.request(ping), prices).total
        now += step.pause + 10.0  # the model's own seconds
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


def none_arm(profile: CacheProfile, prompt: int, step: Step, ratio: float) -> Plan:
    return Plan(profile.retention, 0)


def fixed_arm(profile: CacheProfile, prompt: int, step: Step, ratio: float) -> Plan:
    pings = 10**6 if step.waited and math.isfinite(profile.ttl_seconds) else 0
    return Plan(profile.retention, pings)


def long_arm(profile: CacheProfile, prompt: int, step: Step, ratio: float) -> Plan:
    return Plan(max(profile.retentions, key=lambda r: r.seconds), 0)


def optimum_arm(profile: CacheProfile, prompt: int, step: Step, ratio: float) -> Plan:
    """Knowing the pause: the cheapest retention and ping count, by the cost model."""
    best: tuple[float, Plan] | None = None
    default = profile.retention
    for retention in profile.retentions:
        if retention.seconds < default.seconds:
            continue
        write = retention.write_multiplier if profile.writes_billed else 1.0
        extra = (write - (default.write_multiplier if profile.writes_billed else 1.0)) * step.tokens
        costs = pause_costs(profile, prompt, output_ratio=ratio, retention=retention)
        if costs is None or not step.waited:
            miss = write * prompt - profile.read_multiplier * profile.cacheable(prompt)
            cost, pings = extra + (miss if step.pause >= retention.seconds else 0.0), 0
        else:
            cost = extra + offline_cost(step.pause, costs)
            needed = 0
            if step.pause >= costs.ttl and offline_cost(step.pause, costs) < costs.miss:
                needed = math.floor((step.pause - costs.ttl) / costs.interval) + 1
            pings = needed
        if best is None or cost < best[0] - 1e-9:
            best = (cost, Plan(retention, pings))
    assert best is not None
    return best[1]


class WarmloopArm:
    """The rule as a live agent runs it: it learns each pause only once it has ended."""

    def __init__(self) -> None:
        self.memory = Memory()

    def __call__(self, profile: CacheProfile, prompt: int, step: Step, ratio: float) -> Plan:
        memory = self.memory
        choice = choose_retention(
            profile,
            prompt,
            step.tokens,
            [pause for pause, waited in memory.gaps if waited],
            unattended=[pause for pause, waited in memory.gaps if not waited],
            output_ratio=ratio,
        )
        pings = 0
        costs = pause_costs(profile, prompt, output_ratio=ratio, retention=choice.retention)
        if step.waited and costs is not None:
            pings = ping_limit(costs, list(memory.kinds[step.kind]))
        # Learned after the pause, as the agent would.
        if step.kind != "end":
            memory.gaps.append((step.pause, step.waited))
        if step.waited:
            memory.kinds[step.kind].append(step.pause)
        return Plan(choice.retention, pings)


ARMS: tuple[tuple[str, Callable[[], Policy]], ...] = (
    ("none", lambda: none_arm),
    ("warmloop", WarmloopArm),
    ("fixed ping", lambda: fixed_arm),
    ("always long", lambda: long_arm),
    ("optimum", lambda: optimum_arm),
)


def measure(count: int, seed: int) -> dict[str, dict[str, float]]:
    drawn = sessions(count, seed)
    results: dict[str, dict[str, float]] = {}
    for provider in PROVIDERS:
        profile = provider.profile
        prices = prices_for(profile.model)
        assert prices is not None
        ratio = prices.rates.output / prices.rates.input
        row = {}
        for name, make in ARMS:
            policy = make()
            row[name] = sum(price_session(profile, s, policy, ratio) for s in drawn)
        results[provider.label] = row
    return results


def table(results: dict[str, dict[str, float]]) -> str:
    names = [name for name, _ in ARMS]
    lines = [
        "| provider | " + " | ".join(f"{n} $" for n in names) + " | warmloop / optimum |",
        "|---|" + "---|" * (len(names) + 1),
    ]
    for label, row in results.items():
        best = row["optimum"]
        cells = [f"{row[n]:.2f} ({row[n] / best:.3f}x)" for n in names]
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {row['warmloop'] / best:.3f} |")
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
    results = measure(args.sessions, args.seed)
    print(table(results))
    if args.plot is not None:
        plot(results, args.plot)
        print(f"plot: {args.plot}")


if __name__ == "__main__":
    main()
