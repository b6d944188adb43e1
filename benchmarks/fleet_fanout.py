"""Cache-aware fan-out: a 100-task batch of one agent priced under Anthropic's and OpenAI's
cache rules (warmloop.simulate), sent all at once against warmed up first.

    python -m benchmarks fleet_fanout

Every task opens with the agent's opening (tool definitions, then instructions: 6,000 tokens
here, a mid-sized toolbox), then its own task (150 tokens) and four steps (a 40-token call
and a 400-token result each). Requests in flight at once cannot read what the others are
writing: each task's conversation is priced on its own copy of the cache as it stood when
the task's first request was sent. All at once, that is the empty cache for all 100; with
`Fleet.submit_batch(warm=True)` (the default) one task goes first, and the other 99 start
from the cache its first request wrote. A careful client's breakpoints (the audit's
`ideal_marks`) mark every request.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from warmloop.audit.blocks import ideal_marks
from warmloop.facts.price_table import price_table
from warmloop.facts.pricing import cost_breakdown
from warmloop.facts.profiles import CacheProfile, profile_for
from warmloop.simulate import CacheSimulator, SimOutcome, SimRequest, blocks_from_texts

TASKS = 100
STEPS = 4
PROVIDERS = ("anthropic:claude-sonnet-4-6", "openai:gpt-5")
TOKENS_PER_CHAR = 0.25
OPENING = ["tools|" + "t" * 20_000, "system|" + "s" * 4_000]  # 5,000 + 1,000 tokens


def conversation(task: int) -> list[list[str]]:
    """The pieces of each request of one task, in order."""
    pieces = [*OPENING, f"user|task {task} " + "u" * 600]
    requests = [list(pieces)]
    for step in range(STEPS):
        pieces += [f"assistant|{task}.{step} " + "a" * 160, f"tool|{task}.{step} " + "r" * 1_600]
        requests.append(list(pieces))
    return requests


def priced(
    simulator: CacheSimulator, requests: list[list[str]], profile: CacheProfile, start: float
) -> list[SimOutcome]:
    outcomes = []
    before: list[str] = []
    for n, texts in enumerate(requests):
        pairs = enumerate(zip(texts, before, strict=False))
        common = next((i for i, (a, b) in pairs if a != b), len(before))
        marks = ideal_marks(len(texts), common, profile.ttl)
        points = {i: m for i, m in enumerate(marks) if m is not None}
        # warmloop's Anthropic placement also marks the end of the tools and of the system
        # prompt (providers/anthropic_cache.py), so another task finds the opening's write.
        points |= {n: profile.ttl for n in range(len(OPENING))}
        blocks = blocks_from_texts(texts, breakpoints=points, tokens_per_char=TOKENS_PER_CHAR)
        usage = simulator.request(SimRequest(start + 2.0 * n, blocks, 40))
        outcomes.append(SimOutcome(start + 2.0 * n, usage))
        before = texts
    return outcomes


@dataclass(frozen=True)
class Batch:
    opening_writes: int
    written: int
    read: int
    missed: int
    dollars: float


def batch(spec: str, *, warm: bool) -> Batch:
    profile = profile_for(spec)
    prices = price_table().lookup(spec)
    assert prices is not None, spec
    empty = CacheSimulator(profile)
    first = empty.copy()
    outcomes = [priced(first, conversation(0), profile, 0.0)]
    # All at once, every task starts from the empty cache; warmed, from the leader's.
    base = first if warm else empty
    for task in range(1, TASKS):
        outcomes.append(priced(base.copy(), conversation(task), profile, 10.0 if warm else 0.0))
    # A first request that read nothing paid the whole opening at full (or write) price.
    opening_writes = sum(o[0].usage.cache_read_tokens == 0 for o in outcomes)
    usages = [o.usage for task in outcomes for o in task]
    dollars = sum(cost_breakdown(u, prices).total for u in usages)
    return Batch(
        opening_writes,
        sum(u.cache_write_tokens for u in usages),
        sum(u.cache_read_tokens for u in usages),
        sum(u.input_tokens for u in usages),
        dollars,
    )


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    print(f"fan-out: {TASKS} tasks of one agent, a 6,000-token opening, {STEPS} steps each")
    for spec in PROVIDERS:
        cold, warm = batch(spec, warm=False), batch(spec, warm=True)
        saving = 1 - warm.dollars / cold.dollars
        print(f"{spec}:")
        for name, b in (("all at once", cold), ("warm-up first", warm)):
            print(
                f"  {name:>13}: opening written by {b.opening_writes:>3} tasks; "
                f"written {b.written:,}, read {b.read:,}, missed {b.missed:,} tokens; "
                f"${b.dollars:.4f}"
            )
        print(f"  saving: {saving:.1%}")
