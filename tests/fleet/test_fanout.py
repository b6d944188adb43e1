"""Cache-aware fan-out: a batch's first task of each agent goes alone, and the others are
enqueued only once the leader's stored usage shows the opening in the host's cache (a write,
or a read on its next request where the host reports reads only), so none of their first
requests can miss it; they share the batch's routing keys, the leader's first, so they
reach where it wrote.
Checked at the host as each request arrives, with real worker processes."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Literal

import pytest

from benchmarks.fleet_host import FleetHost, serve
from tests.support.fleet_workers import Workers
from warmloop.fleet.client import Fleet
from warmloop.fleet.fanout import batch_key
from warmloop.fleet.tasks import Task
from warmloop.keepalive.leader_first import written
from warmloop.messages import Message
from warmloop.sessions.postgres import PostgresStore

pytestmark = pytest.mark.slow  # real `warmloop worker` processes: the slow tier

TASKS = 6


@pytest.mark.parametrize("cache", ["writes", "reads"])
def test_the_others_start_once_the_leaders_usage_shows_the_opening_cached(
    fleet_db: str, cache: Literal["writes", "reads"]
) -> None:
    store = PostgresStore(fleet_db)
    early: list[str] = []

    def stored(task: str) -> Sequence[Message]:
        found = store.load(f"s-{task}")
        messages = found.transcript.messages if found and found.transcript else ()
        if task != "task-0" and not messages:  # this task's first request is arriving
            leader = store.info("s-task-0")
            if leader is None or not written(leader.usage):
                early.append(task)
        return messages

    # Two steps: where the host reports reads only, the leader's second request shows one.
    # Its answer is slow, so followers released on its first response alone arrive first
    # (whatever the load, a correct fan-out passes: the delay only exposes a wrong one).
    slow = {("task-0", 1): 2.0}
    host = FleetHost(steps=2, stored=stored, cache=cache, latency=lambda t, s: slow.get((t, s), 0))
    tasks = [Task("crash", f"Do task-{n}.", session=f"s-task-{n}") for n in range(TASKS)]
    told: list[str] = []
    with serve(host) as url, Fleet(fleet_db) as fleet:
        workers = Workers(fleet_db, url, concurrency=TASKS)
        try:
            workers.start("w1")
            batch = fleet.submit_batch(
                tasks,
                on_warm=told.append,
                on_unconfirmed=lambda agent, why: told.append(f"unconfirmed {agent}"),
                keys=2,
            )
            state = fleet_wait(fleet, batch)
        finally:
            workers.stop()
            store.close()
    assert state == {"done": TASKS}
    assert early == []
    assert told == ["crash"]
    # The tasks share the batch's two keys round robin, the leader's first; a task keeps its
    # key, so its own history stays where it was written.
    keys = {a.task: a.key for a in host.requests()}
    assert {(a.task, a.key) for a in host.requests()} == set(keys.items())
    assert [keys[f"task-{n}"] for n in range(TASKS)] == [
        batch_key(batch, "crash", n % 2) for n in range(TASKS)
    ]
    firsts = [a for a in host.requests() if a.step == 0]
    # Each follower's first request read the opening (tools, instructions) the leader wrote.
    assert all(a.usage["prompt_tokens_details"]["cached_tokens"] > 0 for a in firsts[1:])


def test_a_leader_whose_usage_never_shows_a_write_releases_the_others_with_a_warning(
    fleet_db: str,
) -> None:
    host = FleetHost(steps=1, cache="none")  # a host that reports no cache figures
    tasks = [Task("crash", f"Do task-{n}.", session=f"s-task-{n}") for n in range(3)]
    warned: list[tuple[str, str]] = []
    with serve(host) as url, Fleet(fleet_db) as fleet:
        workers = Workers(fleet_db, url, concurrency=3)
        try:
            workers.start("w1")
            batch = fleet.submit_batch(tasks, on_unconfirmed=lambda a, w: warned.append((a, w)))
            state = fleet_wait(fleet, batch)
        finally:
            workers.stop()
    assert state == {"done": 3}
    [(agent, why)] = warned
    assert agent == "crash"
    assert "showed no cache write or read before it ended" in why
    # Released when the leader ended: it had sent every request before any other task.
    leader = [a.seq for a in host.requests() if a.task == "task-0"]
    assert max(leader) < min(a.seq for a in host.requests() if a.task != "task-0")


def test_on_a_model_that_prewarms_the_warm_up_is_a_prewarm_and_every_task_goes_at_once(
    fleet_db: str,
) -> None:
    host = FleetHost()
    tasks = [Task("prewarm", f"Do task-{n}.", session=f"s-task-{n}") for n in range(3)]
    told: list[str] = []
    with serve(host) as url, Fleet(fleet_db) as fleet:
        workers = Workers(fleet_db, url, concurrency=3)
        try:
            workers.start("w1")
            batch = fleet.submit_batch(tasks, on_warm=told.append, keys=1)
            state = fleet_wait(fleet, batch)
        finally:
            workers.stop()
    assert state == {"done": 3}
    assert told == ["prewarm"]  # its usage showed the opening written
    warm, *sent = host.log
    assert [a.kind for a in host.log] == ["prewarm", "request", "request", "request"]
    assert warm.usage["output_tokens"] == 0  # nothing generated
    assert warm.key == batch_key(batch, "prewarm", 0)  # where the tasks are sent
    # The warm-up is the first task's first request marked prewarm, and appended nothing:
    # that task's conversation opens with the very prompt the warm-up sent.
    [leader] = [a for a in sent if a.task == "task-0"]
    assert json.loads(warm.body) == {
        **json.loads(leader.body),
        "prompt_cache_options": {"prewarm": True},
    }


def fleet_wait(fleet: Fleet, batch: str) -> dict[str, int]:
    import time

    deadline = time.monotonic() + 120.0  # only a bound on a broken run
    while not (state := fleet.status(batch)).finished:
        assert time.monotonic() < deadline, state.counts
        time.sleep(0.2)
    return dict(state.counts)
