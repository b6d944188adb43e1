"""Keeping the cache warm across pauses: warmloop's keep-alive rule against fixed rules, an
informed online agent and the offline optimum that knows each pause's length.

Sessions of an agent at work: a run of 10-25 steps, each step a request then a tool; most
tools take seconds, some run tests or a build (1-20 minutes), some wait on a human's
approval (1-60 minutes); most sessions get a follow-up run hours later (30 minutes to 8
hours, a user who came back: nobody waits on the session meanwhile, so nothing is pinged).
Every request and keep-alive is priced by the cache simulator (`simulate.py`) under
each provider's rules and the dated price table (the workload and its pricing:
`benchmarks/keepalive_sessions.py`; the informed arm and the optimum:
`benchmarks/keepalive_references.py`). Arms:

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

With `--evictions 0.2`, the provider drops the cache in a fifth of the pauses someone waits
on (8-25% of returns inside the TTL, as users measured), whatever kept it warm: the warmloop
arm learns its survival from the returns it sees, as a live agent does.

    python -m benchmarks keepalive [--sessions 200] [--seed 7] [--evictions 0.2]
        [--plot keepalive.svg]
"""

from __future__ import annotations

import argparse
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from itertools import accumulate
from pathlib import Path

from benchmarks.keepalive_references import InformedArm, optimum_arm
from benchmarks.keepalive_sessions import (
    MODEL_SECONDS,
    PROVIDERS,
    SYSTEM_TOKENS,
    Arm,
    Plan,
    Step,
    price_session,
    sessions,
)
from warmloop import Transcript, UserText, resolve_model
from warmloop.facts.price_table import prices_for
from warmloop.facts.profiles import CacheProfile
from warmloop.keepalive.pauses import longer_retention
from warmloop.keepalive.ping import answer_tokens
from warmloop.keepalive.rule import pause_costs, ping_limit
from warmloop.memory import Learned


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


class WarmloopArm:
    """What an agent with defaults does, across the sessions in order, as one agent
    process: one `Learned` (the agent's own memory) and the same pure functions the live
    agent calls, with the inputs it has (`keepalive/pauses.py`)."""

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
                survival=learned.survival(facts.model),
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
                survival = learned.survival(facts.model)  # evictions seen on returns so far
                costs = pause_costs(
                    facts, prompt, output_ratio=answer_ratio, retention=longer, survival=survival
                )
                if costs is not None:
                    pings = ping_limit(costs, list(learned.pauses[step.kind]))
                learned.paused(step.kind, step.pause)  # from the request, once it ended
                # The next request tells whether the cache lived through the pause.
                learned.returned(facts.model, not step.evicted)
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
    profile = model.facts.profile
    return profile, rendered.wire_format, answer_tokens(rendered, profile) or 0


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


Longer = dict[str, tuple[int, int, int, int]]
"""Provider -> warmloop's requests, those written with a longer TTL than the model's, the
runs a follow-up came after, and how many of those ended with a longer write."""


def measure(
    count: int,
    seed: int,
    ledgers: Ledgers | None = None,
    longer: Longer | None = None,
    eviction: float = 0.0,
) -> dict[str, dict[str, float]]:
    drawn = sessions(count, seed, eviction)
    results: dict[str, dict[str, float]] = {}
    for provider in PROVIDERS:
        profile = provider.profile
        prices = prices_for(profile.model)
        assert prices is not None
        ratio = prices.rates.output / prices.rates.input
        row: dict[str, float] = {}
        for name, make in ARMS:
            arm, ledger, total = make(), dict[str, float](), 0.0
            requests = longer_writes = followed = followed_longer = 0
            for steps in drawn:
                plans = arm(profile, steps, ratio)
                total += price_session(profile, steps, plans, ledger)
                for step, plan in zip(steps, plans, strict=True):
                    long = plan.retention.name != profile.ttl
                    requests, longer_writes = requests + 1, longer_writes + long
                    if step.kind == "followup":
                        followed, followed_longer = followed + 1, followed_longer + long
            row[name] = total
            if ledgers is not None:
                ledgers.setdefault(provider.label, {})[name] = ledger
            if longer is not None and name == "warmloop":
                longer[provider.label] = (requests, longer_writes, followed, followed_longer)
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
    parser.add_argument(
        "--evictions",
        type=float,
        default=0.0,
        help="the chance the provider drops the cache in a pause someone waits on (0-1)",
    )
    args = parser.parse_args(argv)
    ledgers: Ledgers = {}
    longer: Longer = {}
    results = measure(args.sessions, args.seed, ledgers, longer, args.evictions)
    print(table(results))
    print()
    print(gaps(ledgers))
    print()
    for label, (requests, written, followed, ended) in longer.items():
        if written:
            print(
                f"{label}: warmloop wrote {written:,} of {requests:,} requests with a longer "
                f"TTL, and the last request of {ended} of the {followed} runs followed up"
            )
    if args.plot is not None:
        plot(results, args.plot)
        print(f"plot: {args.plot}")
