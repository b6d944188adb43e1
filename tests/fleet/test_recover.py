"""`--recover NAME`, the manual way: a worker known dead (it stopped beating) has its task
taken over at once, going on from its last stored step; a worker that is alive is refused,
and its task goes on unharmed."""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter

import pytest

from benchmarks.fleet_host import FleetHost, serve
from tests.support.fleet_workers import AGENTS, ROOT, Workers
from warmloop.fleet.client import BatchStatus, Fleet
from warmloop.fleet.liveness import Liveness
from warmloop.fleet.tasks import Task

pytestmark = pytest.mark.slow  # real `warmloop worker` processes: the slow tier

GIVE_UP = 120.0  # seconds: only a bound on a broken run, never a measure
QUICK = ("--heartbeat", "0.5")  # dead 1.5 s after its last beat
SLOW = ("--heartbeat", "600")  # never looks for dead workers itself during the test


def finished(fleet: Fleet, batch: str) -> BatchStatus:
    deadline = time.monotonic() + GIVE_UP
    while not (state := fleet.status(batch)).finished:
        assert time.monotonic() < deadline, state.counts
        time.sleep(0.2)
    return state


def dead(db: str, name: str) -> None:
    """Wait, on the database, until `name` has missed its beats."""
    liveness = Liveness(db)
    deadline = time.monotonic() + GIVE_UP
    try:
        while liveness.alive(name):
            assert time.monotonic() < deadline, f"{name} never stopped beating"
            time.sleep(0.1)
    finally:
        liveness.close()


def test_another_worker_takes_over_a_dead_workers_task(fleet_db: str) -> None:
    host = FleetHost(steps=2, hold={("task-0", 1, "request")})
    with serve(host) as url, Fleet(fleet_db) as fleet:
        workers = Workers(fleet_db, url)
        try:
            workers.start("gone", *QUICK)
            batch = fleet.submit_batch([Task("crash", "Do task-0.", session="s-task-0")])
            parked = host.held.get(timeout=GIVE_UP)
            workers.kill("gone")
            host.release(parked)
            dead(fleet_db, "gone")
            workers.start("heir", "--recover", "gone", *SLOW)
            state = finished(fleet, batch)
        finally:
            workers.stop()
    (task,) = state.tasks
    assert task.result is not None
    assert (task.result.status, task.result.worker) == ("done", "heir")
    assert task.result.requests == 3  # one stored before the kill, two after
    sent = Counter((a.worker, a.step) for a in host.requests())
    assert sent == {("gone", 0): 1, ("gone", 1): 1, ("heir", 1): 1, ("heir", 2): 1}


def test_recover_refuses_a_live_worker_and_its_task_goes_on_unharmed(fleet_db: str) -> None:
    host = FleetHost(steps=2, hold={("task-0", 1, "request")}, answer_held=True)
    with serve(host) as url, Fleet(fleet_db) as fleet:
        workers = Workers(fleet_db, url)
        try:
            workers.start("alive", *SLOW)
            batch = fleet.submit_batch([Task("crash", "Do task-0.", session="s-task-0")])
            parked = host.held.get(timeout=GIVE_UP)  # "alive" holds the task, mid-run
            command = [sys.executable, "-m", "warmloop", "worker", "--db", fleet_db]
            command += ["--agents", AGENTS, "--name", "heir", "--recover", "alive"]
            refused = subprocess.run(
                command, cwd=ROOT, capture_output=True, text=True, timeout=GIVE_UP
            )
            host.release(parked)
            state = finished(fleet, batch)
        finally:
            workers.stop()
    assert refused.returncode == 1
    assert "worker 'alive' is alive" in refused.stderr
    (task,) = state.tasks
    assert task.result is not None
    assert (task.result.status, task.result.worker) == ("done", "alive")
    sent = Counter((a.worker, a.step) for a in host.requests())
    assert sent == {("alive", 0): 1, ("alive", 1): 1, ("alive", 2): 1}
