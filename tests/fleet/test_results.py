"""What a batch reports: a task that cannot run is a failed result saying why (never a
retry loop or a lost task), each result carries its requests and worker, and the CLI names
bad input (a bad batch file, an unknown batch) in one line."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchmarks.fleet_host import FleetHost, serve
from tests.support.fleet_workers import Workers
from warmloop.cli.main import main
from warmloop.fleet.client import Fleet
from warmloop.fleet.tasks import Task


@pytest.mark.slow  # real `warmloop worker` processes: the slow tier
def test_a_task_that_cannot_run_fails_saying_why_and_the_others_finish(fleet_db: str) -> None:
    tasks = [
        Task("crash", "Do task-0.", session="s0", conversation_id="c0"),
        Task("nobody", "Do task-1."),
        Task("crash", "Do task-2.", session="s0", conversation_id="other"),
    ]
    host = FleetHost(steps=1)
    with serve(host) as url, Fleet(fleet_db) as fleet:
        workers = Workers(fleet_db, url)
        try:
            workers.start("w1")
            batch = fleet.submit_batch(tasks)
            deadline = time.monotonic() + 120.0  # only a bound on a broken run
            while not (state := fleet.status(batch)).finished:
                assert time.monotonic() < deadline, state.counts
                time.sleep(0.2)
        finally:
            workers.stop()
    first, unknown, clash = (t.result for t in state.tasks)
    assert first is not None
    assert first.status == "done"
    assert (first.requests, first.worker) == (2, "w1")
    assert unknown is not None
    assert unknown.status == "failed"
    assert "no agent 'nobody'" in unknown.error
    assert "it knows ['crash', " in unknown.error  # the registry's agents, named
    assert clash is not None
    assert clash.status == "failed"
    assert "cannot change it" in clash.error
    assert state.counts == {"done": 1, "failed": 2}


def test_the_cli_names_a_bad_batch_file_and_an_unknown_batch(fleet_db: str, tmp_path: Path) -> None:
    bad = tmp_path / "tasks.jsonl"
    bad.write_text('{"agent": "a", "task": "x"}\n{"agent": "a"}\n', encoding="utf-8")
    runner = CliRunner()
    result = runner.invoke(main, ["batch", "submit", str(bad), "--db", fleet_db])
    assert result.exit_code == 1
    assert "line 2: give exactly one of 'task'" in result.output
    result = runner.invoke(main, ["batch", "status", "bnothere", "--db", fleet_db])
    assert result.exit_code == 1
    assert "holds no warmloop fleet" in result.output  # the bad file created nothing
    with Fleet(fleet_db):  # a fleet's database now, with no batch of that name
        pass
    result = runner.invoke(main, ["batch", "status", "bnothere", "--db", fleet_db])
    assert result.exit_code == 1
    assert "no batch 'bnothere'" in result.output
    result = runner.invoke(main, ["batch", "status", "b1", "--db", "sessions.db"])
    assert result.exit_code == 1
    assert "postgresql:// URL" in result.output
