"""`warmloop fleet workers` says where each worker runs (issue 49): the machine a worker
registered from is its host, shown in the table and the JSON, and its process id is the
worker's own, kept apart from the host (an operator looks for the machine by the one and
the process by the other)."""

from __future__ import annotations

import json
import socket
import time

from click.testing import CliRunner

from tests.support.fleet_workers import Workers
from warmloop.cli.main import main
from warmloop.fleet.client import Fleet

GIVE_UP = 120.0  # only a bound on a broken run, never a measure


def test_a_running_worker_is_listed_with_its_host_and_its_own_process_id(fleet_db: str) -> None:
    with Fleet(fleet_db) as fleet:
        workers = Workers(fleet_db, "http://127.0.0.1:9")  # nothing runs: no host needed
        try:
            workers.start("w1")
            deadline = time.monotonic() + GIVE_UP
            while not (found := fleet.workers()):
                assert time.monotonic() < deadline, "the worker never registered"
                time.sleep(0.1)
            runner = CliRunner()
            listed = runner.invoke(main, ["fleet", "workers", "--db", fleet_db, "--json"])
            wide = {"COLUMNS": "200"}  # the table as a wide terminal shows it: nothing folded
            table = runner.invoke(main, ["fleet", "workers", "--db", fleet_db], env=wide)
            pid = workers.processes["w1"].pid
        finally:
            workers.stop()
    here = socket.gethostname()
    (state,) = found
    assert (state.name, state.host, state.pid, state.alive) == ("w1", here, pid, True)
    assert listed.exit_code == 0, listed.output
    (row,) = json.loads(listed.output)
    assert (row["name"], row["host"], row["alive"]) == ("w1", here, True)
    assert table.exit_code == 0, table.output
    (line,) = [line for line in table.output.splitlines() if "w1" in line]
    assert here in line
    assert "alive" in line
