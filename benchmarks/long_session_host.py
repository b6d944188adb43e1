"""The long session on a host that publishes its window: where the offline optimum prunes,
and where warmloop does with every default (the host's billing unknown to it) and told
`cache_rules`, each priced as GPT-5 (`python -m benchmarks long_session_host`)."""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.long_session import HOST_RULES, OUTPUT_TOKENS, Schedules, run_on_host
from benchmarks.session_costs import price
from warmloop import Transcript


def prune_points(sent: Sequence[Transcript]) -> list[int]:
    """The requests (from 1) sent just after a rewrite: where a schedule pruned."""
    return [k + 1 for k in range(1, len(sent)) if sent[k].revision != sent[k - 1].revision]


def choices(n: int = 70, window: int = 128_000) -> None:
    """The host session with defaults and with `cache_rules`, beside the optimum: where
    each pruned, the prompt it pruned, and the dollars (GPT-5's rules and prices)."""
    rules = HOST_RULES
    runs = {told: run_on_host(n, window, rules, told) for told in (False, True)}
    schedules = Schedules(n, window, rules, runs[True][1])
    best = schedules.optimum()
    optimum = sum(schedules.costs(best))
    points = [k + 1 for k in range(1, len(best)) if best[k] != best[k - 1]]
    sizes = [schedules.tokens(k - 2, best[k - 2]) for k in points]
    print(f"{n} steps, {window // 1000}k window published by a loopback host, priced as GPT-5")
    print(f"(TTL: {rules.profile.ttl})\n")
    print("| policy | dollars | / optimum | prunes before request | prompt pruned (tokens) |")
    print("|---|---|---|---|---|")
    print(f"| optimum | ${optimum:.4f} | 1.000 | {points} | {sizes} |")
    for told, (timed, tools, _) in runs.items():
        outcomes = price(timed, tools, rules, OUTPUT_TOKENS)
        dollars = sum(o.cost.total if o.cost else 0.0 for o in outcomes)
        at = prune_points([t for _, t in timed])
        pruned = [outcomes[k - 2].usage.prompt_tokens for k in at]
        name = f"warmloop, cache_rules={rules.spec!r}" if told else "warmloop, defaults"
        print(f"| {name} | ${dollars:.4f} | {dollars / optimum:.3f} | {at} | {pruned} |")


def main() -> None:
    import argparse

    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    choices()
