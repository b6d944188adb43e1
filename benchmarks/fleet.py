"""Fleet benchmarks with real worker processes on the loopback fleet host (fleet_host.py)
and a throwaway PostgreSQL database ($WARMLOOP_TEST_POSTGRES, or scripts/postgres.sh):

    python -m benchmarks fleet crash        # 200 tasks, 4 workers, one killed every 150 arrivals
    python -m benchmarks fleet crash --no-restart  # killed workers stay dead (3 of 4 at most)
    python -m benchmarks fleet throughput --tasks 100  # on 1, 2 and 4 workers, no kills
    python -m benchmarks fleet rate         # a queue limited to 20 tasks a minute (DBOS)
    python -m benchmarks fleet rate --tasks 20 --requests-per-minute 40  # 40 requests a minute

`crash` kills a random worker that has a task in flight (it holds a task on the database and
has sent a request or run a tool since it started: a worker still starting is never the
victim), at whatever point it has reached, then restarts it under its name; with
`--no-restart` it stays dead and the live workers take its tasks up by themselves (short
periods: heartbeat 0.5 s, lease 5 s). The host checks every arrival against the session store,
so a request sent again after its response was stored, or a tool run again after its result
was stored, is counted exactly. Every request is compared, byte for byte, with the one an
uninterrupted in-process run of the same task sends.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import secrets
import subprocess
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from benchmarks.fleet_host import FleetHost, serve
from tests.fleet.agents import crash_agent
from tests.support.fleet_workers import Workers
from warmloop import AssistantTurn, check_pairing
from warmloop.fleet.client import BatchStatus, Fleet
from warmloop.fleet.tasks import Task
from warmloop.messages import Message
from warmloop.sessions.postgres import PostgresStore

STEPS = 3
SEED = 21
POLL = 0.2
ROOT = Path(__file__).resolve().parent.parent


@contextmanager
def database() -> Iterator[str]:
    """A fresh database on the test server, dropped afterwards."""
    import os

    from tests.support.stores import admin, with_database

    server = os.environ.get("WARMLOOP_TEST_POSTGRES", "").strip()
    if not server:
        script = ROOT / "scripts" / "postgres.sh"
        started = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=True)
        server = started.stdout.strip()
    name = "warmloop_bench_" + secrets.token_hex(4)
    admin(server, f"CREATE DATABASE {name}")
    try:
        yield with_database(server, name)
    finally:
        admin(server, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def tasks(count: int) -> list[Task]:
    return [
        Task("crash", f"Do task-{n}.", session=f"s-task-{n}", conversation_id=f"c-task-{n}")
        for n in range(count)
    ]


FAST = (0.005, 0.04)
"""Seconds a reply takes in the crash runs: a busy fleet, many steps per second."""
MODEL_LIKE = (0.2, 0.6)
"""Seconds a reply takes in the throughput runs: an LLM's latency, so the workers wait on
the model as real ones do instead of measuring two shared CPU cores."""


def latency(seed: int, low_high: tuple[float, float] = FAST) -> FleetHost:
    """A host whose every (task, step) answers after a seeded delay in `low_high`."""
    rng = random.Random(seed)
    table: dict[tuple[str, int], float] = {}

    def delay(task: str, step: int) -> float:
        return table.setdefault((task, step), rng.uniform(*low_high))

    return FleetHost(steps=STEPS, latency=delay)


@dataclass
class Outcome:
    seconds: float
    state: BatchStatus
    host: FleetHost
    kills: int
    cut: int = 0
    """Tasks the killed workers held when they died."""


NO_RESTART_PERIODS = ("--heartbeat", "0.5", "--lease", "5")


def run_batch(
    db: str,
    host: FleetHost,
    count: int,
    workers: int,
    *,
    concurrency: int = 4,
    kill_every: int | None = None,
    restart: bool = True,
    per_minute: int | None = None,
    options: Sequence[str] = (),
) -> Outcome:
    """Run a `count`-task batch on `workers` worker processes; with `kill_every`, SIGKILL a
    random worker with a task in flight every `kill_every` host arrivals until the batch
    ends, restarting it under its name (or, without `restart`, leaving it dead while
    another worker lives)."""
    rng = random.Random(SEED)
    cut = 0
    with serve(host) as url, Fleet(db) as fleet:
        pool = Workers(db, url, concurrency=concurrency, per_minute=per_minute)
        alive = [f"w{n + 1}" for n in range(workers)]
        since: dict[str, int] = {}  # the host's log length when each worker (re)started

        def start(name: str) -> None:
            since[name] = len(host.log)
            pool.start(name, *options)

        try:
            for name in alive:
                start(name)
            begun = time.monotonic()
            batch = fleet.submit_batch(tasks(count), warm=False)
            next_kill = kill_every
            while not (state := fleet.status(batch)).finished:
                if next_kill is not None and len(host.log) >= next_kill and len(alive) > 1:
                    held = fleet.held()
                    busy = [
                        n
                        for n in alive
                        if held[n] and any(a.worker == n for a in host.log[since[n] :])
                    ]
                    if busy:  # else looked again at the next poll
                        victim = rng.choice(busy)
                        pool.kill(victim)
                        cut += held[victim]
                        if restart:
                            start(victim)
                        else:
                            alive.remove(victim)
                        next_kill += kill_every  # type: ignore[operator]
                time.sleep(POLL)
            seconds = time.monotonic() - begun
        finally:
            pool.stop()
    return Outcome(seconds, state, host, pool.kills, cut)


def reference(count: int) -> dict[tuple[str, int], str]:
    """Every request of an uninterrupted in-process run of each task, by (task, step)."""
    host = FleetHost(steps=STEPS)
    with serve(host) as url:
        agent = crash_agent(url, "reference")

        async def all_tasks() -> None:
            for task in tasks(count):
                assert isinstance(task.task, str)
                await agent.run(task.task, conversation_id=task.conversation_id)

        asyncio.run(all_tasks())
    return {(a.task, a.step): a.body for a in host.requests()}


def crash(count: int, workers: int, kill_every: int, restart: bool = True) -> None:
    with database() as db:
        store = PostgresStore(db)

        def stored(task: str) -> Sequence[Message]:
            found = store.load(f"s-{task}")
            return found.transcript.messages if found and found.transcript else ()

        host = latency(SEED)
        host.stored = stored
        options = () if restart else NO_RESTART_PERIODS
        outcome = run_batch(
            db, host, count, workers, kill_every=kill_every, restart=restart, options=options
        )
        states = Counter(t.result.status if t.result else t.status for t in outcome.state.tasks)
        pairing_ok = whole = 0
        for n in range(count):
            transcript = stored(f"task-{n}")
            check_pairing(transcript)
            pairing_ok += 1
            whole += sum(isinstance(m, AssistantTurn) for m in transcript) == STEPS + 1
        store.close()
    sent = host.requests()
    per_step = Counter((a.task, a.step) for a in sent)
    enters = Counter((a.task, a.call) for a in host.log if a.kind == "tool-enter")
    expected = reference(count)
    identical = sum(a.body == expected[(a.task, a.step)] for a in sent)
    resent = sum(n - 1 for n in per_step.values())
    after_stored = sum("request" in v for v in host.violations)
    tools_again = sum("run after" in v for v in host.violations)
    then = "each restarted" if restart else "none restarted"
    print(
        f"crash: {count} tasks, {workers} workers, {outcome.kills} kills ({then}), each of a"
        f" worker with a task in flight; {outcome.cut} tasks cut"
    )
    workflows = len(outcome.state.tasks)
    print(f"  {outcome.seconds:.1f} s; tasks: {dict(states)} ({workflows} workflows)")
    print(f"  requests: {len(sent)} sent for {len(per_step)} steps; {resent} sent again whose")
    print(f"    response was never stored; {after_stored} sent again after a stored response")
    print(f"  tools: {sum(enters.values())} runs of {len(enters)} calls; {tools_again} run again")
    print("    after their result was stored")
    print(f"  transcripts: {pairing_ok}/{count} load with pairing intact, {whole} with all steps")
    print(f"  byte-identical to an uninterrupted run: {identical}/{len(sent)} requests")


def throughput(count: int) -> None:
    seconds = {}
    for workers in (1, 2, 4):
        with database() as db:
            outcome = run_batch(db, latency(SEED, MODEL_LIKE), count, workers)
            assert outcome.state.counts["done"] == count, outcome.state.counts
            seconds[workers] = outcome.seconds
    base = seconds[1]
    for workers, taken in seconds.items():
        rate = count / taken
        speedup = base / taken
        print(f"throughput: {workers} worker(s): {taken:.1f} s, {rate:.1f} tasks/s, x{speedup:.2f}")


def rate(count: int, per_minute: int | None, requests_per_minute: int | None) -> None:
    """Two workers under DBOS's task limit (`per_minute`) or warmloop's request limit."""
    options: tuple[str, ...] = ()
    if requests_per_minute is not None:
        # one key: each worker reaches the host under its own URL, which a model's name holds
        options = ("--requests-per-minute", str(requests_per_minute), "--limit-key", "host")
        per_minute = None
    with database() as db:
        outcome = run_batch(db, latency(SEED), count, 2, per_minute=per_minute, options=options)
    firsts = sorted(a.at for a in outcome.host.requests() if a.step == 0)
    every = sorted(a.at for a in outcome.host.requests())
    limit = (
        f"{requests_per_minute} requests/min per model"
        if requests_per_minute is not None
        else f"{per_minute} tasks/min"
    )
    print(f"rate: limit {limit}, {count} tasks, 2 workers, {outcome.seconds:.1f} s")
    print(f"  peak tasks started in any 60 s: {peak(firsts, 60.0)}")
    print(f"  peak requests in any 60 s: {peak(every, 60.0)} ({STEPS + 1} per task)")


def peak(times: Sequence[float], window: float) -> int:
    """The most events in any `window` seconds."""
    best, low = 0, 0
    for high, at in enumerate(times):
        while at - times[low] >= window:
            low += 1
        best = max(best, high - low + 1)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["crash", "throughput", "rate"])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--kill-every", type=int, default=150)
    parser.add_argument("--per-minute", type=int, default=20)
    parser.add_argument("--requests-per-minute", type=int)
    parser.add_argument("--no-restart", action="store_true", help="killed workers stay dead")
    args = parser.parse_args()
    if args.what == "crash":
        crash(args.tasks, args.workers, args.kill_every, restart=not args.no_restart)
    elif args.what == "throughput":
        throughput(args.tasks)
    else:
        rate(min(args.tasks, 30), args.per_minute, args.requests_per_minute)
