"""A worker that will not come back: another worker started with `--recover NAME` takes its
tasks over, and they go on from their last stored step."""

from __future__ import annotations

import time
from collections import Counter

from benchmarks.fleet_host import FleetHost, serve
from tests.support.fleet_workers import Workers
from warmloop.fleet.client import Fleet
from warmloop.fleet.tasks import Task


def test_another_worker_takes_over_a_dead_workers_task(fleet_db: str) -> None:
    host = FleetHost(steps=2, hold={("task-0", 1, "request")})
    with serve(host) as url, Fleet(fleet_db) as fleet:
        workers = Workers(fleet_db, url)
        try:
            workers.start("gone")
            batch = fleet.submit_batch([Task("crash", "Do task-0.", session="s-task-0")])
            parked = host.held.get(timeout=120.0)  # only a bound on a broken run
            workers.kill("gone")
            host.release(parked)
            workers.start("heir", "--recover", "gone")
            deadline = time.monotonic() + 120.0
            while not (state := fleet.status(batch)).finished:
                assert time.monotonic() < deadline, state.counts
                time.sleep(0.2)
        finally:
            workers.stop()
    (task,) = state.tasks
    assert task.result is not None
    assert (task.result.status, task.result.worker) == ("done", "heir")
    assert task.result.requests == 3  # one stored before the kill, two after
    sent = Counter((a.worker, a.step) for a in host.requests())
    assert sent == {("gone", 0): 1, ("gone", 1): 1, ("heir", 1): 1, ("heir", 2): 1}
