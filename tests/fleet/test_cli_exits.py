"""The fleet's commands tell a script what went wrong by their exit code: `batch status`
exits 3 when a task failed, `batch submit` prints the batch id before it waits for anything,
says when no worker has taken a first task, and exits 3 when an agent's first task failed
before any request (never "opening written")."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from benchmarks.fleet_host import FleetHost, serve
from tests.support.fleet_workers import Workers
from warmloop.cli.exit_codes import TASKS_FAILED
from warmloop.cli.main import main
from warmloop.fleet import client
from warmloop.fleet.client import Fleet
from warmloop.fleet.tasks import Task


def test_batch_status_exits_3_when_a_task_failed(fleet_db: str) -> None:
    with Fleet(fleet_db) as fleet:
        batch = fleet.submit_batch([Task("crash", "Do it."), Task("crash", "Again.")], warm=False)
        fleet._client.cancel_workflow(f"{batch}-00000")  # ended without a result: failed
    result = CliRunner().invoke(main, ["batch", "status", batch, "--db", fleet_db])
    assert "1 failed" in result.output, result.output
    assert result.exit_code == TASKS_FAILED, result.output


def test_batch_submit_prints_the_id_before_saying_no_worker_took_it(
    fleet_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(client, "UNTAKEN_SECONDS", 0.0)  # no worker runs: said at first look
    monkeypatch.setattr(client, "WARM_TIMEOUT_SECONDS", 0.0)  # then fan out without waiting
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"agent": "crash", "task": "x"}\n{"agent": "crash", "task": "y"}\n')
    result = CliRunner().invoke(main, ["batch", "submit", str(tasks), "--db", fleet_db])
    assert result.exit_code == 0, result.output
    batch = result.output.splitlines()[0]
    assert batch.startswith("b"), result.output
    assert "no worker has taken" in result.output, result.output
    assert result.output.index(batch) < result.output.index("no worker has taken")
    assert "opening written" not in result.output, result.output


@pytest.mark.slow  # real `warmloop worker` processes: the slow tier
def test_batch_submit_says_a_first_task_that_failed_and_exits_3(
    fleet_db: str, tmp_path: Path
) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"agent": "nobody", "task": "x"}\n{"agent": "nobody", "task": "y"}\n')
    with serve(FleetHost(steps=1)) as url:
        workers = Workers(fleet_db, url)
        try:
            workers.start("w1")
            result = CliRunner().invoke(main, ["batch", "submit", str(tasks), "--db", fleet_db])
        finally:
            workers.stop()
    assert "opening written" not in result.output, result.output
    assert "nobody: its first task failed before any request" in result.output, result.output
    assert "no agent 'nobody'" in result.output, result.output
    assert result.exit_code == TASKS_FAILED, result.output
