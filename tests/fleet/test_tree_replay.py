"""Replay keyed by content on the fleet: a `warmloop worker` process runs a tree (a planner
fanning out eight explorers, tests/support/trees.py) on the real PostgreSQL; it is killed
with SIGKILL once 5 children finished and 3 hang in their tool (on a file lock the test
holds); restarted under its name, DBOS recovers the task, the planner's `explore` call runs
again, and exactly the 3 others run again (each from its last stored step), the 5 read back
from their stored sessions by their task's content. In one process:
tests/agent/test_tree_replay.py."""

from __future__ import annotations

import fcntl
import time
from pathlib import Path

import pytest

from tests.support.fleet_workers import Workers
from tests.support.trees import AREAS, HANGING, PLAN, finished_children, logged
from warmloop.fleet.client import Fleet
from warmloop.fleet.tasks import Task
from warmloop.sessions.postgres import PostgresStore

pytestmark = pytest.mark.crash

GIVE_UP = 120.0  # seconds: only a bound on a broken run, never a measure
POLL = 0.1
NO_HOST = "http://127.0.0.1:9"  # the tree's scripted models need none


def test_a_killed_workers_tree_runs_again_only_the_children_not_stored(
    fleet_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log, gate = tmp_path / "looks.log", tmp_path / "gate"
    gate.touch()
    monkeypatch.setenv("WARMLOOP_TEST_LOG", str(log))  # the workers' environment
    monkeypatch.setenv("WARMLOOP_TEST_GATE", str(gate))
    store = PostgresStore(fleet_db)
    with Fleet(fleet_db) as fleet, open(gate) as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        workers = Workers(fleet_db, NO_HOST)
        try:
            workers.start("w1")
            task = fleet.submit(Task("tree", PLAN, session="s-tree"))
            deadline = time.monotonic() + GIVE_UP
            while not (
                finished_children(store, "s-tree") == set(AREAS) - HANGING
                and {area for area, _ in logged(log)} == set(AREAS)
            ):
                assert time.monotonic() < deadline, f"no crash point: {logged(log)}"
                time.sleep(POLL)
            workers.kill("w1")
            started_before = len(logged(log))
            fcntl.flock(held, fcntl.LOCK_UN)
            workers.start("w1")  # under its name: DBOS recovers its task
            deadline = time.monotonic() + GIVE_UP
            while not (state := fleet.task(task)).finished:
                assert time.monotonic() < deadline, f"the tree never finished: {state}"
                time.sleep(POLL)
        finally:
            workers.stop()
    assert state.result is not None
    assert state.result.status == "done", state.result.error
    assert state.result.outputs == {"answer": "planned"}
    again = logged(log)[started_before:]
    assert sorted(area for area, _ in again) == sorted(HANGING)  # exactly the three others
    assert finished_children(store, "s-tree") == set(AREAS)
    store.close()
