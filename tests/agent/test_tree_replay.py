"""Replay keyed by content: a tree whose process is killed after 5 of its 8 children finished
is resumed by another process (`agent.resume`), which runs again exactly the 3 others, each
from its last stored step, and reads the 5 finished ones back from their stored sessions,
even though the resumed fan-out lists the tasks in the opposite order. The tree runs in a
forked process on a real SQLite file and is killed with SIGKILL; the three hang in their
tool on a file lock the test holds (tests/support/trees.py). The fleet's version, with
worker processes on PostgreSQL: tests/fleet/test_tree_replay.py."""

from __future__ import annotations

import asyncio
import fcntl
import multiprocessing
import os
import signal
import time
from pathlib import Path

from tests.support.trees import AREAS, HANGING, PLAN, explorer, finished_children, logged, planner
from warmloop import SQLiteStore

GIVE_UP = 60.0  # seconds: only a bound on a broken run, never a measure
POLL = 0.05


def tree_process(path: Path, log: Path, gate: Path) -> None:
    """The tree, in a process of its own, until it is killed."""
    asyncio.run(planner(explorer(log, gate)).run(PLAN, session="tree", store=path))


def test_a_tree_resumed_after_a_crash_runs_again_only_the_children_not_stored(
    tmp_path: Path,
) -> None:
    path, log, gate = tmp_path / "sessions.db", tmp_path / "looks.log", tmp_path / "gate"
    gate.touch()
    held = open(gate)  # noqa: SIM115  # held until the process is killed
    fcntl.flock(held, fcntl.LOCK_EX)
    process = multiprocessing.get_context("fork").Process(
        target=tree_process, args=(path, log, gate)
    )
    process.start()
    store = SQLiteStore(path)
    try:
        deadline = time.monotonic() + GIVE_UP
        while not (
            finished_children(store, "tree") == set(AREAS) - HANGING
            and {area for area, _ in logged(log)} == set(AREAS)
        ):
            assert process.is_alive(), "the tree ended before it was killed"
            assert time.monotonic() < deadline, f"no crash point: {logged(log)}"
            time.sleep(POLL)
        assert process.pid is not None
        os.kill(process.pid, signal.SIGKILL)
        process.join()
    finally:
        held.close()  # the gate opens
    started_before = len(logged(log))

    child = explorer(log)  # another process: new agents, the same store
    run = asyncio.run(planner(child, reverse=True).resume("tree", store=path))

    assert run.output == "planned"
    again = logged(log)[started_before:]
    assert sorted(area for area, _ in again) == sorted(HANGING)  # exactly the three others
    assert {pid for _, pid in again} == {os.getpid()}
    assert {c.task for c in run.children if c.replayed} == set(AREAS) - HANGING
    assert {c.task for c in run.children if not c.replayed} == HANGING
    # Each of the three goes on from its stored step: its first answer is never asked again.
    assert len(child.model.requests) == len(HANGING)  # type: ignore[attr-defined]
    assert finished_children(store, "tree") == set(AREAS)
    store.close()
