"""A PostgreSQL restart mid-batch, with real parts: a cluster of the test's own, a batch of
three tasks, a `warmloop worker` process running them at once on the loopback fleet host.

The host parks each task's second model request; once all three are parked the server is
stopped (fast: every connection is cut, as in a restart or a failover) and the requests are
answered, so each task meets the outage as it stores the response. The server stays down
until the worker has said, for each task, that the database is away; then it starts again.
Every task ends done, exactly once; no request is sent again once its response was stored
and no tool runs again once its result was stored (the host checks each arrival against
the store); only the three answered while the database was down are sent a second time.
"""

from __future__ import annotations

import subprocess
import time
from collections import Counter
from collections.abc import Iterator, Sequence

import pytest

from benchmarks.fleet_host import FleetHost, serve
from tests.support.fleet_workers import Workers
from tests.support.own_postgres import Cluster
from warmloop.errors import SessionBusy, SessionError
from warmloop.fleet.client import BatchStatus, Fleet
from warmloop.fleet.tasks import Task
from warmloop.messages import AssistantTurn, Message
from warmloop.sessions.postgres import PostgresStore
from warmloop.transcript import check_pairing

pytestmark = pytest.mark.crash

TASKS = 3
STEPS = 2
HOLDS = {(f"task-{n}", 1, "request") for n in range(TASKS)}
GIVE_UP = 600.0  # seconds: only a bound on a broken run (a loaded machine stays far below it)
POLL = 0.2


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    try:
        own = Cluster()
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"no PostgreSQL cluster of the test's own could be made ({exc})")
    try:
        own.start()
        yield own
    finally:
        own.remove()


def test_a_lease_a_restart_kept_from_being_released_is_taken_back_by_its_store(
    cluster: Cluster,
) -> None:
    worker, other = PostgresStore(cluster.url), PostgresStore(cluster.url)
    try:
        lease = worker.acquire("s")
        cluster.stop()
        with pytest.raises(SessionError):
            worker.release(lease)  # the run ended while the database was away
        cluster.start()
        with pytest.raises(SessionBusy):
            other.acquire("s")  # any other holder waits for the lease, as before
        worker.release(worker.acquire("s"))  # at once: no wait for its own lease
    finally:
        worker.close()
        other.close()


def _away(lines: Sequence[str]) -> bool:
    """Whether the worker said, for every task, that the database is away."""
    return all(
        any(f"session s-task-{n}: the database is away" in line for line in lines)
        for n in range(TASKS)
    )


def _finished(fleet: Fleet, batch_id: str) -> BatchStatus:
    deadline = time.monotonic() + GIVE_UP
    while not (state := fleet.status(batch_id)).finished:
        assert time.monotonic() < deadline, f"the batch did not finish: {state.counts}"
        time.sleep(POLL)
    return state


def test_a_database_restart_mid_batch_leaves_every_task_done_once(cluster: Cluster) -> None:
    def stored(task: str) -> Sequence[Message]:
        store = PostgresStore(cluster.url)  # a fresh one: the test's reads ride no blip
        try:
            found = store.load(f"s-{task}")
        finally:
            store.close()
        return found.transcript.messages if found and found.transcript else ()

    host = FleetHost(steps=STEPS, hold=set(HOLDS), answer_held=True, stored=stored)
    tasks = [Task("crash", f"Do task-{n}.", session=f"s-task-{n}") for n in range(TASKS)]
    with serve(host) as url, Fleet(cluster.url) as fleet:
        workers = Workers(cluster.url, url, concurrency=TASKS)
        try:
            workers.start("w1")
            batch_id = fleet.submit_batch(tasks)
            parked = [host.held.get(timeout=GIVE_UP) for _ in HOLDS]
            cluster.stop()
            for arrival in parked:
                host.release(arrival)  # answered while the database is down
            assert workers.wait_for(_away, GIVE_UP), "\n".join(workers.lines)
            cluster.start()
            state = _finished(fleet, batch_id)
        finally:
            workers.stop()
    assert [t.result.status if t.result else t.status for t in state.tasks] == ["done"] * TASKS
    answers = [t.result.outputs["answer"] for t in state.tasks if t.result and t.result.outputs]
    assert answers == [f"task-{n} done" for n in range(TASKS)]
    assert host.violations == []
    requests = Counter((a.task, a.step) for a in host.requests())
    assert {k: n for k, n in requests.items() if n > 1} == {(t, s): 2 for t, s, _ in HOLDS}
    assert len(requests) == TASKS * (STEPS + 1)
    returns = Counter((a.task, a.call) for a in host.log if a.kind == "tool-return")
    assert set(returns.values()) == {1}
    for n in range(TASKS):
        transcript = stored(f"task-{n}")
        check_pairing(transcript)
        assert sum(isinstance(m, AssistantTurn) for m in transcript) == STEPS + 1
