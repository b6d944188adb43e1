"""Crash test with real processes: two `warmloop worker` processes run a 20-task batch on the
loopback fleet host; the host parks chosen model requests and tool calls, and the worker
that sent each is SIGKILLed while it waits, then restarted under its name (DBOS recovers
its task). Every task completes exactly once; no request is sent again once its response
was stored and no tool runs again once its result was stored (the host checks each arrival
against the store); only the parked request or tool is sent or run a second time; every
transcript loads with pairing intact; and every request is byte-identical to the one an
uninterrupted run of the same task sends. (benchmarks/fleet.py: 200 tasks, 4 workers.)

Each worker runs one task at a time here, so a kill cuts exactly the parked task at a known
point; the benchmark kills at random moments with several tasks in flight."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest

from benchmarks.fleet_host import Arrival, FleetHost, serve
from tests.fleet.agents import crash_agent
from tests.support.fleet_workers import Workers
from warmloop.fleet.client import BatchStatus, Fleet
from warmloop.fleet.tasks import Task
from warmloop.messages import AssistantTurn, Message
from warmloop.sessions.postgres import PostgresStore
from warmloop.sessions.sqlite import SQLiteStore
from warmloop.transcript import check_pairing

pytestmark = pytest.mark.crash

TASKS = 20
STEPS = 3
HOLDS = {
    ("task-3", 1, "tool:1"),  # the second call of a step: the first one's result is stored
    ("task-8", 2, "request"),
    ("task-12", 0, "tool:0"),
    ("task-17", 3, "request"),  # the submit step
}
GIVE_UP = 120.0  # seconds: only a bound on a broken run, never a measure
POLL = 0.2


def batch() -> list[Task]:
    return [
        Task("crash", f"Do task-{n}.", session=f"s-task-{n}", conversation_id=f"c-task-{n}")
        for n in range(TASKS)
    ]


def uninterrupted(tasks: Sequence[str], tmp_path: Path) -> dict[tuple[str, int], str]:
    """Each task's requests, by step, as one uninterrupted run in this process sends them."""
    host = FleetHost(steps=STEPS)
    with serve(host) as url:
        for task in tasks:
            agent = crash_agent(url, "reference")
            store = SQLiteStore(tmp_path / f"{task}.db")
            asyncio.run(
                agent.run(
                    f"Do {task}.", session=f"s-{task}", store=store, conversation_id=f"c-{task}"
                )
            )
            store.close()
    return {(a.task, a.step): a.body for a in host.requests()}


def finished(fleet: Fleet, batch_id: str, host: FleetHost, workers: Workers) -> BatchStatus:
    """Kill the worker of each parked arrival and restart it; then wait out the batch."""
    for _ in HOLDS:
        arrival: Arrival = host.held.get(timeout=GIVE_UP)
        workers.kill(arrival.worker)
        host.release(arrival)
        workers.start(arrival.worker)
    deadline = time.monotonic() + GIVE_UP
    while not (state := fleet.status(batch_id)).finished:
        assert time.monotonic() < deadline, f"the batch did not finish: {state.counts}"
        time.sleep(POLL)
    return state


def test_killed_workers_leave_every_task_done_once_and_nothing_paid_twice(
    fleet_db: str, tmp_path: Path
) -> None:
    store = PostgresStore(fleet_db)

    def stored(task: str) -> Sequence[Message]:
        found = store.load(f"s-{task}")
        return found.transcript.messages if found and found.transcript else ()

    host = FleetHost(steps=STEPS, hold=set(HOLDS), stored=stored)
    with serve(host) as url, Fleet(fleet_db) as fleet:
        workers = Workers(fleet_db, url)
        try:
            for name in ("w1", "w2"):
                workers.start(name)
            batch_id = fleet.submit_batch(batch())
            state = finished(fleet, batch_id, host, workers)
        finally:
            workers.stop()
    assert workers.kills == len(HOLDS)
    assert [t.result.status if t.result else t.status for t in state.tasks] == ["done"] * TASKS
    answers = sorted(
        str(t.result.outputs["answer"]) for t in state.tasks if t.result and t.result.outputs
    )
    assert answers == sorted(f"task-{n} done" for n in range(TASKS))
    assert host.violations == []
    requests = Counter((a.task, a.step) for a in host.requests())
    parked_requests = {(t, s) for t, s, kind in HOLDS if kind == "request"}
    assert {k for k, n in requests.items() if n > 1} == parked_requests
    assert all(requests[k] == 2 for k in parked_requests)
    enters = Counter((a.task, a.call) for a in host.log if a.kind == "tool-enter")
    returns = Counter((a.task, a.call) for a in host.log if a.kind == "tool-return")
    assert set(returns.values()) == {1}
    parked_tools = {(t, f"call_{s}_{k[5:]}") for t, s, k in HOLDS if k.startswith("tool:")}
    assert {k for k, n in enters.items() if n > 1} == parked_tools
    for n in range(TASKS):
        transcript = stored(f"task-{n}")
        check_pairing(transcript)
        assert sum(isinstance(m, AssistantTurn) for m in transcript) == STEPS + 1
    cut = sorted({t for t, _, _ in HOLDS})
    reference = uninterrupted(cut, tmp_path)
    sent = [a for a in host.requests() if a.task in cut]
    assert len(sent) == len(cut) * (STEPS + 1) + len(parked_requests)
    assert all(a.body == reference[(a.task, a.step)] for a in sent)
    store.close()
