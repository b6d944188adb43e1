"""Cache-aware fan-out: a 100-task batch of one agent priced under Anthropic's and OpenAI's
cache rules (warmloop.simulate), sent all at once against warmed up first, and on OpenAI
with one routing key for the batch against a key per task.

    python -m benchmarks fleet_fanout [--machines 16] [--concurrency 16]

Every task opens with the agent's opening (tool definitions, then instructions: 6,000 tokens
here, a mid-sized toolbox), then its own task (150 tokens) and four steps (a 40-token call
and a 400-token result each), a request every STEP_SECONDS, each answered (and its write
landed) ANSWER_SECONDS after it was sent: a request sent before then cannot read it. The
fleet runs `--concurrency` tasks at once (4 workers of 4), each starting when one ends.

Warmed up (`Fleet.submit_batch(warm=True)`), one task goes first and the others are released
when its usage shows the opening cached (`keepalive.leader_first.written`): on Anthropic the
first response's write; on OpenAI's gpt-5, which bills and reports no writes, the second
response's read.

Where a request is served: Anthropic documents no routing, so it is one cache. OpenAI routes
on the prompt's first tokens with `prompt_cache_key` to one machine, and past about 15
requests a minute for one key and prefix "some may overflow and get routed to additional
machines" (the prompt caching guide, "How it works"): here a key's home machine is a hash of
the key among `--machines` (how many OpenAI has is not documented), and a request past
SPILL_PER_MINUTE in the last minute goes to another one drawn at random (seeded). A key per
task (a task's own session, what a batch sent before) spreads the tasks over machines that
never saw the leader's write; one key for the batch sends them where it wrote, until they
spill; ROUTING_KEYS keys shared round robin (what a warm batch sends) keep each key to about
one task at a time. A careful client's breakpoints (the audit's `ideal_marks`) mark every
request.
"""

from __future__ import annotations

import argparse
import hashlib
import heapq
import random
from collections import deque
from dataclasses import dataclass, field

from warmloop.audit.blocks import ideal_marks
from warmloop.facts.price_table import price_table
from warmloop.facts.pricing import cost_breakdown
from warmloop.facts.profiles import CacheProfile, profile_for
from warmloop.facts.usage import Usage
from warmloop.fleet.fanout import ROUTING_KEYS
from warmloop.keepalive.leader_first import written
from warmloop.simulate import CacheSimulator, SimRequest, blocks_from_texts

TASKS = 100
STEPS = 4
STEP_SECONDS = 6.0
ANSWER_SECONDS = 2.0
SPILL_PER_MINUTE = 15
ANTHROPIC, OPENAI = "anthropic:claude-sonnet-4-6", "openai:gpt-5"
TOKENS_PER_CHAR = 0.25
OPENING = ["tools|" + "t" * 20_000, "system|" + "s" * 4_000]  # 5,000 + 1,000 tokens
OPENING_TOKENS = 6_000


def conversation(task: int) -> list[list[str]]:
    """The pieces of each request of one task, in order."""
    pieces = [*OPENING, f"user|task {task} " + "u" * 600]
    requests = [list(pieces)]
    for step in range(STEPS):
        pieces += [f"assistant|{task}.{step} " + "a" * 160, f"tool|{task}.{step} " + "r" * 1_600]
        requests.append(list(pieces))
    return requests


def requests_of(task: int, profile: CacheProfile, start: float) -> list[SimRequest]:
    """One task's requests, sent from `start` on, each with a careful client's marks."""
    out = []
    before: list[str] = []
    for n, texts in enumerate(conversation(task)):
        pairs = enumerate(zip(texts, before, strict=False))
        common = next((i for i, (a, b) in pairs if a != b), len(before))
        marks = ideal_marks(len(texts), common, profile.ttl)
        points = {i: m for i, m in enumerate(marks) if m is not None}
        # warmloop's Anthropic placement also marks the end of the tools and of the system
        # prompt (providers/anthropic/cache.py), so another task finds the opening's write.
        points |= {n: profile.ttl for n in range(len(OPENING))}
        blocks = blocks_from_texts(texts, breakpoints=points, tokens_per_char=TOKENS_PER_CHAR)
        out.append(SimRequest(start + STEP_SECONDS * n, blocks, 40))
        before = texts
    return out


@dataclass
class Machines:
    """The provider's caches, one per machine, and where each key's requests go."""

    profile: CacheProfile
    count: int
    spill: bool
    rng: random.Random = field(default_factory=lambda: random.Random(35))
    caches: list[CacheSimulator] = field(default_factory=list)
    recent: dict[str, deque[float]] = field(default_factory=dict)
    spilled: int = 0

    def __post_init__(self) -> None:
        self.caches = [CacheSimulator(self.profile) for _ in range(self.count)]

    def route(self, key: str, at: float) -> int:
        """The machine a request of `key` sent at `at` reaches."""
        home = int(hashlib.sha256(key.encode()).hexdigest(), 16) % self.count
        if not self.spill or self.count == 1:
            return home
        recent = self.recent.setdefault(key, deque())
        while recent and recent[0] <= at - 60.0:
            recent.popleft()
        if len(recent) < SPILL_PER_MINUTE:
            recent.append(at)
            return home
        self.spilled += 1
        return (home + 1 + self.rng.randrange(self.count - 1)) % self.count


@dataclass(frozen=True)
class Batch:
    opening_writes: int
    written: int
    read: int
    missed: int
    dollars: float
    spilled: int
    released: float


def routing(key: str, task: int) -> str:
    """The routing key of `task`: its own ("task"), the batch's ("batch") or one of N
    shared round robin ("N")."""
    if key == "task":
        return f"task-{task}"
    return "batch" if key == "batch" else f"key-{task % int(key)}"


def served(
    sending: list[tuple[float, int, int, SimRequest]], where: Machines, key: str
) -> dict[tuple[int, int], Usage]:
    """Each request's usage, `sending` served in time order: `(sent at, task, n, request)`,
    priced on its machine's cache as it stands then (a write lands when answered)."""
    landing: list[tuple[float, int, int, SimRequest]] = []  # (lands at, seq, machine, request)
    usages: dict[tuple[int, int], Usage] = {}
    for seq, (at, task, n, request) in enumerate(sorted(sending, key=lambda s: s[:3])):
        while landing and landing[0][0] <= at:
            _, _, machine, landed = heapq.heappop(landing)
            where.caches[machine].request(landed)
        machine = where.route(routing(key, task), at)
        usages[(task, n)] = where.caches[machine].copy().request(request)
        heapq.heappush(landing, (at + ANSWER_SECONDS, seq, machine, request))
    return usages


def batch(spec: str, *, warm: bool, key: str, machines: int, concurrency: int) -> Batch:
    """The batch priced: `key` is "task" (a key per task) or "batch" (one for all)."""
    profile = profile_for(spec)
    prices = price_table().lookup(spec)
    assert prices is not None, spec
    sending: list[tuple[float, int, int, SimRequest]] = []
    slots = [0.0] * concurrency  # when each slot is free
    task_seconds = STEP_SECONDS * STEPS + ANSWER_SECONDS
    released = 0.0
    pending = list(range(TASKS))
    if warm:  # the leader alone, until its usage shows the opening cached
        pending.remove(0)
        sending = [(r.at, 0, n, r) for n, r in enumerate(requests_of(0, profile, 0.0))]
        alone = served(sending, Machines(profile, machines, spill=True), key)
        confirming = next(n for n in range(STEPS + 1) if written(alone[(0, n)]))
        released = STEP_SECONDS * confirming + ANSWER_SECONDS
        slots = [task_seconds, *[released] * (concurrency - 1)]
    for task in pending:
        slot = min(range(concurrency), key=lambda s: slots[s])
        for n, request in enumerate(requests_of(task, profile, slots[slot])):
            sending.append((request.at, task, n, request))
        slots[slot] += task_seconds
    where = Machines(profile, machines, spill=True)
    usages = served(sending, where, key)
    firsts = [u for (task, n), u in usages.items() if n == 0]
    every = list(usages.values())
    return Batch(
        sum(u.cache_read_tokens < OPENING_TOKENS - 128 for u in firsts),  # 128-token steps
        sum(u.cache_write_tokens for u in every),
        sum(u.cache_read_tokens for u in every),
        sum(u.uncached_tokens for u in every),
        sum(cost_breakdown(u, prices).total for u in every),
        where.spilled,
        released,
    )


def line(name: str, b: Batch, cold: Batch) -> str:
    return (
        f"  {name:>26}: opening missed by {b.opening_writes:>3} tasks; written {b.written:,}, "
        f"read {b.read:,}, missed {b.missed:,} tokens; {b.spilled:>3} spilled; "
        f"${b.dollars:.4f} ({1 - b.dollars / cold.dollars:+.1%} saved)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--machines", type=int, default=16, help="OpenAI's machines (assumed)")
    parser.add_argument("--concurrency", type=int, default=16, help="tasks at once")
    args = parser.parse_args()
    fleet = {"concurrency": args.concurrency}
    print(
        f"fan-out: {TASKS} tasks of one agent, a {OPENING_TOKENS:,}-token opening, {STEPS} "
        f"steps each, {args.concurrency} at once"
    )
    cold = batch(ANTHROPIC, warm=False, key="task", machines=1, **fleet)
    warm = batch(ANTHROPIC, warm=True, key="batch", machines=1, **fleet)
    print(f"{ANTHROPIC} (one cache):")
    print(line("all at once", cold, cold))
    print(line("warm-up first", warm, cold))
    print(f"  released {warm.released:.0f} s after the leader started (its write)")
    print(f"{OPENAI} ({args.machines} machines, spill past {SPILL_PER_MINUTE} a minute a key):")
    cold = batch(OPENAI, warm=False, key="task", machines=args.machines, **fleet)
    per_task = batch(OPENAI, warm=True, key="task", machines=args.machines, **fleet)
    one = batch(OPENAI, warm=True, key="batch", machines=args.machines, **fleet)
    keys = batch(OPENAI, warm=True, key=str(ROUTING_KEYS), machines=args.machines, **fleet)
    print(line("all at once, key per task", cold, cold))
    print(line("warm-up, key per task", per_task, cold))
    print(line("warm-up, one key", one, cold))
    print(line(f"warm-up, {ROUTING_KEYS} keys (chosen)", keys, cold))
    print(f"  released {one.released:.0f} s after the leader started (its second request's read)")
