"""What a fleet shows and how it fails (issue 35): a task whose worker stopped beating is
'waiting for recovery' in `batch status` and held by a dead worker in `fleet workers`;
`--wait --deadline` ends with code 4 while it waits; a live worker then takes it up. A
tool that raises an unexpected error is told to the model once; a model that raises one
fails its task once, its error recorded and shown, with no retry and no traceback."""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner

from benchmarks.fleet_host import FleetHost, serve
from tests.support.fleet_workers import Workers
from warmloop.cli.exit_codes import DEADLINE, TASKS_FAILED
from warmloop.cli.main import main
from warmloop.fleet.client import WAITING, BatchStatus, Fleet
from warmloop.fleet.tasks import Task
from warmloop.messages import ToolResult
from warmloop.sessions.postgres import PostgresStore

pytestmark = pytest.mark.slow  # real `warmloop worker` processes: the slow tier

GIVE_UP = 120.0  # only a bound on a broken run, never a measure
QUICK = ("--heartbeat", "0.5")


def until(fleet: Fleet, batch: str, done: str) -> BatchStatus:
    """Wait, on the database, until the batch's counts hold `done` (or it finished)."""
    deadline = time.monotonic() + GIVE_UP
    while not (state := fleet.status(batch)).finished and not state.counts[done]:
        assert time.monotonic() < deadline, state.counts
        time.sleep(0.1)
    return state


def test_a_dead_workers_task_waits_for_recovery_visibly_until_a_live_worker_takes_it(
    fleet_db: str,
) -> None:
    host = FleetHost(steps=2, hold={("task-0", 1, "request")})
    runner = CliRunner()
    with serve(host) as url, Fleet(fleet_db) as fleet:
        workers = Workers(fleet_db, url)
        try:
            workers.start("gone", *QUICK)
            batch = fleet.submit_batch([Task("crash", "Do task-0.", session="s-task-0")])
            host.release(host.held.get(timeout=GIVE_UP))
            workers.kill("gone")
            assert until(fleet, batch, WAITING).counts == {WAITING: 1}
            status = runner.invoke(main, ["batch", "status", batch, "--db", fleet_db])
            waited = runner.invoke(
                main, ["batch", "status", batch, "--db", fleet_db, "--wait", "--deadline", "0.5"]
            )
            listed = runner.invoke(main, ["fleet", "workers", "--db", fleet_db, "--json"])
            workers.start("heir", *QUICK)
            state = until(fleet, batch, "done")
        finally:
            workers.stop()
    assert status.exit_code == 0, status.output
    assert WAITING in status.output
    assert f"{batch}: 1 {WAITING}" in status.output
    assert waited.exit_code == DEADLINE, waited.output
    assert listed.exit_code == 0, listed.output
    (gone,) = json.loads(listed.output)
    assert (gone["name"], gone["alive"], gone["tasks_held"]) == ("gone", False, 1)
    (task,) = state.tasks
    assert task.result is not None
    assert (task.result.status, task.result.worker) == ("done", "heir")


def test_a_tools_surprise_is_told_once_and_a_models_fails_the_task_once(fleet_db: str) -> None:
    tasks = [Task("tool-bug", "Go.", session="s-tool"), Task("model-bug", "Go.", session="s-mod")]
    with Fleet(fleet_db) as fleet:
        workers = Workers(fleet_db, "http://127.0.0.1:9")  # the scripted models need no host
        try:
            workers.start("w1")
            batch = fleet.submit_batch(tasks, warm=False)
            deadline = time.monotonic() + GIVE_UP
            while not (state := fleet.status(batch)).finished:
                assert time.monotonic() < deadline, state.counts
                time.sleep(0.1)
        finally:
            workers.stop()
        shown = CliRunner().invoke(main, ["batch", "status", batch, "--db", fleet_db, "--json"])
    told, failed = (t.result for t in state.tasks)
    assert told is not None
    assert failed is not None
    assert (told.status, told.outputs, told.requests) == ("done", {"answer": "told"}, 2)
    store = PostgresStore(fleet_db)
    found = store.load("s-tool")
    store.close()
    assert found is not None
    assert found.transcript is not None
    results = [m for m in found.transcript.messages if isinstance(m, ToolResult)]
    assert len(results) == 2  # the tool's, told once, and submit's
    assert "RuntimeError: unexpected: a bug" in results[0].content
    assert (failed.status, failed.requests) == ("failed", 0)
    assert "ValueError: a bug in the model's code" in failed.error
    assert shown.exit_code == TASKS_FAILED
    errors = [t["result"]["error"] for t in json.loads(shown.output)["tasks"]]
    assert errors == ["", failed.error]
    assert not [line for line in workers.lines if "Traceback" in line or "trying again" in line]
