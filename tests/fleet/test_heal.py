"""A fleet that heals itself (must-show 1 of issue 35): four `warmloop worker` processes,
each its own process group and executor name, run a batch on the real PostgreSQL; the one
holding a chosen task is SIGKILLed mid-run and never restarted, and so is the worker that
took the task up, during its recovery. Nobody runs any command: the live workers notice
the missing heartbeats and take the task up, and every task finishes exactly once, with no
request sent again after its response was stored and no tool run again after its result
was stored (the host checks each arrival against the store).

The periods are short here (heartbeat 0.5 s, lease 4 s); the bound on each take-up is
`Periods.bound` (max(3 heartbeats, the lease) plus a heartbeat: 4.5 s), measured from the
kill to the task held by a live worker, with a margin for a loaded machine."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence

import pytest

from benchmarks.fleet_host import Arrival, FleetHost, serve
from tests.support.fleet_workers import Workers
from warmloop.fleet.client import Fleet
from warmloop.fleet.liveness import Periods
from warmloop.fleet.tasks import Task
from warmloop.messages import AssistantTurn, Message
from warmloop.sessions.postgres import PostgresStore
from warmloop.transcript import check_pairing

pytestmark = pytest.mark.crash

TASKS = 8
STEPS = 2
CUT = "task-5"  # not the leader: it runs on whichever worker dequeues it
HOLDS = {(CUT, 1, "request"), (CUT, 2, "request")}  # the first kill, then one mid-recovery
PERIODS = Periods(heartbeat=0.5, lease=4.0)
MARGIN = 60.0  # seconds a loaded machine may add to a take-up; never reached when healthy
GIVE_UP = 300.0  # only a bound on a broken run, never a measure
POLL = 0.1


def taken_up(fleet: Fleet, workflow_id: str, dead: str) -> float:
    """Seconds until a live worker holds the task again (or it finished), from now."""
    start = time.monotonic()
    while True:
        state = fleet.task(workflow_id)
        if state.finished or (state.status == "PENDING" and state.worker != dead):
            return time.monotonic() - start
        assert time.monotonic() - start < GIVE_UP, f"nobody took {workflow_id} up: {state}"
        time.sleep(POLL)


def kill_holder(
    fleet: Fleet, host: FleetHost, workers: Workers, workflow_id: str
) -> tuple[str, float]:
    """Kill the worker holding the next parked arrival (checked on the database: the task
    runs there), never to restart it: its name, and the seconds until the task was taken
    up by a live worker."""
    arrival: Arrival = host.held.get(timeout=GIVE_UP)
    state = fleet.task(workflow_id)
    assert (state.state, state.worker) == ("running", arrival.worker)
    workers.kill(arrival.worker)
    host.release(arrival)  # its sender is dead: dropped unanswered
    return arrival.worker, taken_up(fleet, workflow_id, arrival.worker)


def test_a_dead_workers_task_is_taken_up_by_a_live_one_with_nobody_watching(
    fleet_db: str,
) -> None:
    store = PostgresStore(fleet_db)

    def stored(task: str) -> Sequence[Message]:
        found = store.load(f"s-{task}")
        return found.transcript.messages if found and found.transcript else ()

    host = FleetHost(steps=STEPS, hold=set(HOLDS), stored=stored)
    periods = ("--heartbeat", str(PERIODS.heartbeat), "--lease", str(PERIODS.lease))
    tasks = [Task("crash", f"Do task-{n}.", session=f"s-task-{n}") for n in range(TASKS)]
    with serve(host) as url, Fleet(fleet_db) as fleet:
        workers = Workers(fleet_db, url)
        try:
            for name in ("w1", "w2", "w3", "w4"):
                workers.start(name, *periods)
            batch = fleet.submit_batch(tasks)
            cut = f"{batch}-{int(CUT.split('-')[1]):05d}"
            kills = dict(kill_holder(fleet, host, workers, cut) for _ in HOLDS)
            deadline = time.monotonic() + GIVE_UP
            while not (state := fleet.status(batch)).finished:
                assert time.monotonic() < deadline, f"the batch did not finish: {state.counts}"
                time.sleep(POLL)
            listed = {w.name: w.alive for w in fleet.workers()}
        finally:
            workers.stop()
    assert workers.kills == len(kills) == 2  # the second kill hit the worker that took it up
    assert all(t <= PERIODS.bound + MARGIN for t in kills.values()), kills
    assert [t.state for t in state.tasks] == ["done"] * TASKS
    answers = sorted(
        str(t.result.outputs["answer"]) for t in state.tasks if t.result and t.result.outputs
    )
    assert answers == sorted(f"task-{n} done" for n in range(TASKS))
    assert host.violations == []  # no request re-sent after its response, no tool re-run
    requests = Counter((a.task, a.step) for a in host.requests())
    assert {k for k, n in requests.items() if n > 1} == {(CUT, 1), (CUT, 2)}
    returns = Counter((a.task, a.call) for a in host.log if a.kind == "tool-return")
    assert set(returns.values()) == {1}
    for n in range(TASKS):
        transcript = stored(f"task-{n}")
        check_pairing(transcript)
        assert sum(isinstance(m, AssistantTurn) for m in transcript) == STEPS + 1
    assert sorted(name for name, alive in listed.items() if not alive) == sorted(kills)
    store.close()
