"""A dead worker's task is taken up whenever its session's lease is free, not only when the
dead worker held it (issue 49). Every crash test before killed a worker holding a live
lease; two other moments a worker dies in leave the lease free in other shapes, and the
recovery check must read both as free, or its heartbeat fails on each look ("heartbeat
failed" in the log), the dead worker stays claimed and its task is never put back:

- the task's session has no row yet: the worker died after dequeuing the task, before its
  `begin` step wrote the row (held here on a lock the test takes on the sessions table,
  which the worker's insert waits on, never committed once it is killed);
- the lease was given back: the worker died after `begin` (which opens the session and
  releases its lease) and before the run took the lease again (held here in the agent's
  construction, `tests.fleet.agents:gated`, behind a file lock the test holds).

`warmloop worker` processes on the real PostgreSQL, each its own process group, killed with
SIGKILL and never restarted; a second worker started after the kill finds the dead one's
task by the missed heartbeats alone and runs it to its end."""

from __future__ import annotations

import fcntl
import time
from pathlib import Path

import psycopg
import pytest

from tests.support.fleet_workers import Workers
from warmloop.fleet.client import Fleet, TaskState
from warmloop.fleet.tasks import Task
from warmloop.sessions.postgres import PostgresStore

pytestmark = pytest.mark.crash

GIVE_UP = 120.0  # seconds: only a bound on a broken run, never a measure
PERIODS = ("--heartbeat", "0.5", "--lease", "4")  # dead 1.5 s after its last beat
NO_HOST = "http://127.0.0.1:9"  # the gated agent's scripted model needs none
INSERT_WAITS = "SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'sessions'::regclass"


def held_by(fleet: Fleet, task: str, worker: str) -> None:
    """Wait until `worker` has dequeued `task` (PENDING under its name)."""
    deadline = time.monotonic() + GIVE_UP
    while (state := fleet.task(task)).status != "PENDING" or state.worker != worker:
        assert time.monotonic() < deadline, f"{worker} never took {task}: {state}"
        time.sleep(0.05)


def finished(fleet: Fleet, task: str, workers: Workers) -> TaskState:
    """Wait until `task` finished; fail at once on a recovery check that failed."""
    deadline = time.monotonic() + GIVE_UP
    while not (state := fleet.task(task)).finished:
        failed = [line for line in workers.lines if "heartbeat failed" in line]
        assert not failed, failed
        assert time.monotonic() < deadline, f"nobody took {task} up: {state}"
        time.sleep(0.1)
    return state


def taken_up_by(state: TaskState, worker: str) -> None:
    assert state.result is not None
    assert (state.result.status, state.result.worker) == ("done", worker)
    assert state.result.outputs == {"answer": "through"}


def test_a_dead_workers_task_whose_session_has_no_row_yet_is_taken_up(fleet_db: str) -> None:
    store = PostgresStore(fleet_db)  # the sessions table, as the first worker makes it
    with Fleet(fleet_db) as fleet:
        workers = Workers(fleet_db, NO_HOST)
        try:
            workers.start("w1", *PERIODS)
            with psycopg.connect(fleet_db) as held, psycopg.connect(fleet_db) as watch:
                held.execute("LOCK TABLE sessions IN SHARE MODE")  # reads go on, inserts wait
                task = fleet.submit(Task("gated", "Go.", session="s-no-row"))
                held_by(fleet, task, "w1")
                deadline = time.monotonic() + GIVE_UP
                while watch.execute(INSERT_WAITS).fetchone() == (0,):  # begin's insert
                    assert time.monotonic() < deadline, "w1 never began the task"
                    time.sleep(0.05)
                workers.kill("w1")
                held.rollback()
            assert store.info("s-no-row") is None  # the killed insert never committed
            workers.start("w2", *PERIODS)
            state = finished(fleet, task, workers)
        finally:
            workers.stop()
            store.close()
    taken_up_by(state, "w2")


def test_a_dead_workers_task_whose_lease_was_given_back_is_taken_up(
    fleet_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = tmp_path / "gate"
    gate.touch()
    monkeypatch.setenv("WARMLOOP_TEST_GATE", str(gate))  # the workers' environment
    store = PostgresStore(fleet_db)
    with Fleet(fleet_db) as fleet, open(gate) as closed:
        fcntl.flock(closed, fcntl.LOCK_EX)
        workers = Workers(fleet_db, NO_HOST)
        try:
            workers.start("w1", *PERIODS)
            task = fleet.submit(Task("gated", "Go.", session="s-given-back"))
            at_gate = workers.wait_for(lambda lines: "w1: w1 waits at the gate" in lines, GIVE_UP)
            assert at_gate, "\n".join(workers.lines)
            info = store.info("s-given-back")  # begun: the row written, the lease given back
            assert info is not None
            assert (info.lease_holder, info.lease_expires) == ("", None)
            held_by(fleet, task, "w1")
            workers.kill("w1")
            fcntl.flock(closed, fcntl.LOCK_UN)
            workers.start("w2", *PERIODS)
            state = finished(fleet, task, workers)
        finally:
            workers.stop()
            store.close()
    taken_up_by(state, "w2")
