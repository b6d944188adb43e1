"""How long the event loop stalls while many concurrent runs persist their sessions.

Issue 17: session store calls never block the event loop. Each arm starts `--runs`
concurrent scripted runs (`ScriptedModel`, `--steps` calls of a trivial async tool, then
submit) on one event loop: with `session=` on SQLite (a temp file, WAL, synchronous=FULL),
on PostgreSQL, and the same runs without sessions. Each reply comes after a simulated
network wait (`--latency` ms, jittered from a fixed seed) and the runs arrive spread over
one such wait, so they are out of step as live ones are and the loop is mostly idle
between them (`--latency 0` has all runs step together: the loop is then busy, not
blocked, and every arm stalls for whole rounds of steps). A ticker task sleeps 1 ms in a
loop and records how late each wake-up is: the largest lateness is the loop's largest
stall, where a store call made on the loop shows as its whole transaction. The ratio
session / no-session says what sessions add: about 1 when no store call blocks the loop.
The machine's own load moves these figures; compare arms of one invocation.

    python -m benchmarks stall              # 100 runs; PostgreSQL from $WARMLOOP_TEST_POSTGRES
    python -m benchmarks stall --runs 20 --postgres 'postgresql://user@host/db'
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import secrets
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from warmloop import Agent, Model, ScriptedModel, SessionStore, SQLiteStore, call, tool
from warmloop.providers.base import ModelResponse, Rendered, WrappedModel

RUNS = 100
STEPS = 4
LATENCY = 0.100
"""The mean simulated wait for a reply (seconds); each wait is 0.5x to 1.5x of it."""
TICK = 0.001
"""The ticker's sleep: each wake-up later than this is loop time spent elsewhere."""
POSTGRES_VARIABLE = "WARMLOOP_TEST_POSTGRES"


@tool
async def lookup(key: str) -> str:
    """Look a key up (trivial, and async: a sync tool's thread would stall every arm)."""
    return f"value of {key}"


class Latent(WrappedModel):
    """A model whose replies take a while, as over a network (the wait yields the loop)."""

    def __init__(self, model: Model, latency: float, seed: int) -> None:
        super().__init__(model)
        self.latency = latency
        self.random = random.Random(seed)

    async def send(self, rendered: Rendered, *, session_id: str) -> ModelResponse:
        await asyncio.sleep(self.latency * (0.5 + self.random.random()))
        return await self.model.send(rendered, session_id=session_id)


@dataclass(frozen=True)
class Arm:
    """One arm's figures: how many runs, wall seconds, the largest ticker lateness and its
    99th percentile (seconds), and how many ticks were taken."""

    label: str
    runs: int
    seconds: float
    largest: float
    p99: float
    ticks: int


@dataclass
class Ticker:
    """Sleeps `TICK` in a loop until stopped, recording how late each wake-up was."""

    gaps: list[float] = field(default_factory=list)
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self) -> None:
        while not self.stop.is_set():
            expected = time.perf_counter() + TICK
            await asyncio.sleep(TICK)
            self.gaps.append(max(time.perf_counter() - expected, 0.0))


@dataclass(frozen=True)
class Plan:
    """What every run of an arm does: `steps` tool steps, each reply after `latency`."""

    runs: int
    steps: int
    latency: float


def agent_for(number: int, plan: Plan) -> Agent:
    """Run `number`'s agent: its own scripted model (`plan.steps` lookups, then submit)."""
    replies = [call("lookup", key=f"k{number}-{k}") for k in range(plan.steps)]
    scripted = ScriptedModel([*replies, call("submit", answer="done")])
    return Agent(Latent(scripted, plan.latency, number), [lookup])


async def one_run(
    number: int, agent: Agent, plan: Plan, store: SessionStore | None, prefix: str
) -> None:
    # Runs arrive over one reply's wait, as requests to a server do, not in one instant.
    await asyncio.sleep(plan.latency * random.Random(-number).random())
    task = f"Look up {plan.steps} keys, then submit."
    if store is None:
        run = await agent.run(task)
    else:
        run = await agent.run(task, session=f"{prefix}-{number}", store=store)
    assert run.steps == plan.steps + 1, run.steps


async def measure_arm(label: str, plan: Plan, store: SessionStore | None) -> Arm:
    """`plan.runs` concurrent runs with the ticker beside them."""
    agents = [agent_for(n, plan) for n in range(plan.runs)]  # set-up, not measured
    ticker = Ticker()
    ticking = asyncio.create_task(ticker.run())
    await asyncio.sleep(TICK * 5)  # the ticker is in its rhythm before the runs start
    ticker.gaps.clear()
    prefix = "stall-" + secrets.token_hex(3)
    started = time.perf_counter()
    try:
        await asyncio.gather(
            *(one_run(n, agent, plan, store, prefix) for n, agent in enumerate(agents))
        )
    finally:
        seconds = time.perf_counter() - started
        ticker.stop.set()
        await ticking
    gaps = ticker.gaps or [0.0]
    p99 = statistics.quantiles(gaps, n=100, method="inclusive")[98] if len(gaps) > 1 else gaps[0]
    return Arm(label, plan.runs, seconds, max(gaps), p99, len(ticker.gaps))


def run_arm(label: str, plan: Plan, store: SessionStore | None) -> Arm:
    return asyncio.run(measure_arm(label, plan, store))


def postgres_arm(url: str, plan: Plan) -> Arm:
    """The PostgreSQL arm in a throwaway schema of the database `url` names."""
    import psycopg

    from tests.support.stores import with_schema
    from warmloop.sessions.postgres import PostgresStore

    schema = "stall_" + secrets.token_hex(4)
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f"CREATE SCHEMA {schema}".encode())
    try:
        store = PostgresStore(with_schema(url, schema))
        try:
            return run_arm("session= on PostgreSQL", plan, store)
        finally:
            store.close()
    finally:
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE".encode())


def measure(plan: Plan, postgres: str | None) -> tuple[list[Arm], str | None]:
    """Every arm, the one without sessions first; and why PostgreSQL was skipped, if it was."""
    warm_up = Plan(min(plan.runs, 5), plan.steps, plan.latency)
    run_arm("warm-up", warm_up, None)  # imports and first renders are no stall of the arms
    arms = [run_arm("no session", plan, None)]
    with tempfile.TemporaryDirectory() as directory:
        store = SQLiteStore(Path(directory) / "sessions.db")
        try:
            arms.append(run_arm("session= on SQLite", plan, store))
        finally:
            store.close()
    if postgres is None:
        return arms, f"no server: set ${POSTGRES_VARIABLE} or pass --postgres URL"
    arms.append(postgres_arm(postgres, plan))
    return arms, None


def report(arms: Sequence[Arm], skipped: str | None) -> str:
    """The table, then each session arm's ratio to the arm without sessions."""
    lines = [
        f"{'arm':<24} {'runs':>5} {'wall s':>7} {'largest stall ms':>17} {'p99 gap ms':>11}"
        f" {'ticks':>6}"
    ]
    for arm in arms:
        lines.append(
            f"{arm.label:<24} {arm.runs:>5} {arm.seconds:>7.2f} {arm.largest * 1000:>17.2f}"
            f" {arm.p99 * 1000:>11.2f} {arm.ticks:>6}"
        )
    base = arms[0]
    for arm in arms[1:]:
        largest = arm.largest / base.largest if base.largest else float("inf")
        p99 = arm.p99 / base.p99 if base.p99 else float("inf")
        lines.append(
            f"ratio {arm.label} / {base.label}: largest stall {largest:.2f}, p99 gap {p99:.2f}"
        )
    if skipped is not None:
        lines.append(f"PostgreSQL: skipped ({skipped})")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS, help="concurrent runs per arm")
    parser.add_argument("--steps", type=int, default=STEPS, help="tool steps per run")
    parser.add_argument(
        "--latency", type=float, default=LATENCY * 1000, help="mean reply wait in ms"
    )
    parser.add_argument(
        "--postgres", metavar="URL", help=f"PostgreSQL server (default: ${POSTGRES_VARIABLE})"
    )
    options = parser.parse_args(argv)
    if options.runs < 1 or options.steps < 1 or options.latency < 0:
        parser.error("--runs and --steps must be at least 1, --latency not negative")
    plan = Plan(options.runs, options.steps, options.latency / 1000)
    postgres = options.postgres or os.environ.get(POSTGRES_VARIABLE, "").strip() or None
    print(
        f"warmloop event-loop stall: {plan.runs} concurrent scripted runs of {plan.steps} "
        f"tool steps, replies after {options.latency:g} ms (mean), a {TICK * 1000:g} ms "
        "ticker beside them"
    )
    arms, skipped = measure(plan, postgres)
    print(report(arms, skipped))
