"""Cache-aware fan-out: a batch's first task of each agent goes alone, and the others are
enqueued only once its first response is stored (the provider has written the opening), so
none of their first requests can miss it. Checked at the host as each request arrives."""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.fleet_host import FleetHost, serve
from tests.support.fleet_workers import Workers
from warmloop.fleet.client import Fleet
from warmloop.fleet.tasks import Task
from warmloop.messages import AssistantTurn, Message
from warmloop.sessions.postgres import PostgresStore

TASKS = 6


def test_the_other_tasks_start_after_the_leaders_first_response_is_stored(fleet_db: str) -> None:
    store = PostgresStore(fleet_db)
    early: list[str] = []

    def stored(task: str) -> Sequence[Message]:
        found = store.load(f"s-{task}")
        messages = found.transcript.messages if found and found.transcript else ()
        if task != "task-0" and not messages:  # this task's first request is arriving
            leader = store.load("s-task-0")
            turns = leader.transcript.messages if leader and leader.transcript else ()
            if not any(isinstance(m, AssistantTurn) for m in turns):
                early.append(task)
        return messages

    host = FleetHost(steps=1, stored=stored)
    tasks = [Task("crash", f"Do task-{n}.", session=f"s-task-{n}") for n in range(TASKS)]
    with serve(host) as url, Fleet(fleet_db) as fleet:
        workers = Workers(fleet_db, url, concurrency=TASKS)
        try:
            workers.start("w1")
            batch = fleet.submit_batch(tasks)
            state = fleet_wait(fleet, batch)
        finally:
            workers.stop()
            store.close()
    assert state == {"done": TASKS}
    assert early == []


def fleet_wait(fleet: Fleet, batch: str) -> dict[str, int]:
    import time

    deadline = time.monotonic() + 120.0  # only a bound on a broken run
    while not (state := fleet.status(batch)).finished:
        assert time.monotonic() < deadline, state.counts
        time.sleep(0.2)
    return dict(state.counts)
