"""Two worker processes racing to resume one session, 100 rounds on each store: exactly one
wins each round (it holds the lease while the other tries), the other gets SessionBusy at
once, and the session ends with every round's messages exactly once, in order."""

from __future__ import annotations

import multiprocessing
from collections import Counter
from multiprocessing.connection import Connection, wait

import pytest

from tests.support.session_workers import identity, race_worker
from tests.support.stores import open_spec
from warmloop.messages import AssistantTurn, ToolResult, UserText
from warmloop.transcript import check_pairing

ROUNDS = 100
TIMEOUT = 30.0


def receive(connection: Connection) -> tuple[str, int]:
    if not connection.poll(TIMEOUT):
        raise AssertionError("a race worker did not answer in time")
    kind, number = connection.recv()
    return str(kind), int(number)


def race_round(number: int, ends: list[Connection]) -> int:
    """Start both workers at once; returns the index of the one that won."""
    for end in ends:
        end.send(number)
    reports: dict[int, str] = {}
    while len(reports) < len(ends):
        for ready in wait(ends, TIMEOUT):
            assert isinstance(ready, Connection)
            kind, got = receive(ready)
            assert got == number
            reports[ends.index(ready)] = kind
    assert sorted(reports.values()) == ["busy", "won"], reports  # exactly one winner
    winner = next(i for i, kind in reports.items() if kind == "won")
    ends[winner].send("finish")
    assert receive(ends[winner]) == ("done", number)
    return winner


@pytest.mark.crash
def test_two_workers_racing_to_resume_one_session_never_both_append(store_spec: str) -> None:
    context = multiprocessing.get_context("fork")
    pipes = [context.Pipe() for _ in range(2)]
    workers = [context.Process(target=race_worker, args=(store_spec, child)) for _, child in pipes]
    for worker in workers:
        worker.start()
    ends = [parent for parent, _ in pipes]
    try:
        wins = Counter(race_round(number, ends) for number in range(ROUNDS))
    finally:
        for end in ends:
            end.send(None)
        for worker in workers:
            worker.join(TIMEOUT)
    assert sum(wins.values()) == ROUNDS
    print(f"rounds won by each worker: {dict(wins)}")
    store = open_spec(store_spec)
    stored = store.load("race")
    assert store.info("race") is not None
    store.close()
    assert stored is not None
    assert stored.transcript is not None
    transcript = stored.transcript
    check_pairing(transcript.messages)
    asked = [m.text for m in transcript if isinstance(m, UserText)]
    assert asked == [f"round {n}" for n in range(ROUNDS)]  # none lost, none twice, in order
    assert sum(isinstance(m, AssistantTurn) for m in transcript) == ROUNDS
    assert sum(isinstance(m, ToolResult) for m in transcript) == ROUNDS
    assert len({identity(m) for m in transcript}) == len(transcript)  # no duplicate message
    assert stored.info.requests == ROUNDS
