"""A live holder keeps its session: a heartbeat renews the lease while a call outlasts it,
and a holder whose process still runs on this host is never taken over, expired or not.
On SQLite and a real PostgreSQL server; lease time is a hand-moved clock, the heartbeat is
waited on by event, never by wall time."""

from __future__ import annotations

import multiprocessing
import os
import threading
from typing import Any

import pytest

from tests.support.stores import OpenStore, open_spec
from warmloop import Agent, ScriptedModel, ToolResult, call, tool
from warmloop.errors import SessionBusy
from warmloop.sessions import lease as lease_module
from warmloop.sessions import sql
from warmloop.sessions.lease import Lease

LEASE = 120.0
STEP = 30.0
"""Fake seconds the clock moves between takeover attempts (a 300-second call in ten)."""


class Clock:
    def __init__(self, now: float = 50_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class Beats:
    """Counts renewals of the store it wraps, so a test can wait for the next one."""

    def __init__(self, renew: Any) -> None:
        self._renew = renew
        self.count = 0
        self.changed = threading.Condition()

    def __call__(self, held: Lease) -> None:
        self._renew(held)
        with self.changed:
            self.count += 1
            self.changed.notify_all()

    def wait_past(self, count: int) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: self.count > count, timeout=60), "no heartbeat"


def test_a_call_longer_than_the_lease_keeps_the_session_and_its_result(
    make_store: OpenStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    first, other = make_store(clock=clock, lease_seconds=LEASE), make_store(clock=clock)
    beats = Beats(first.renew)
    monkeypatch.setattr(first, "renew", beats)
    monkeypatch.setattr(lease_module, "heartbeat_seconds", lambda held: 0.005)
    started, finish = threading.Event(), threading.Event()

    @tool
    def run_suite() -> str:
        """Run the test suite (five minutes)."""
        started.set()
        assert finish.wait(120), "the test never let the tool finish"
        return "412 passed"

    model = ScriptedModel([call("run_suite"), call("submit", answer="green")])
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["run"] = Agent(model, [run_suite]).run_sync("Test.", session="s", store=first)
        except BaseException as exc:  # reported below, in the test's thread
            outcome["error"] = exc

    worker = threading.Thread(target=work)
    worker.start()
    try:
        assert started.wait(60), "the tool never started"
        # Another worker (another host: only the lease's expiry could free the session)
        # tries to take the session over all through the 300-second call.
        monkeypatch.setattr(sql, "holder_name", lambda: "elsewhere:4242:1")
        for _ in range(10):
            clock.now += STEP
            beats.wait_past(beats.count)
            with pytest.raises(SessionBusy):
                other.acquire("s")
    finally:
        finish.set()
        worker.join(120)
    assert "error" not in outcome, outcome.get("error")
    stored = first.load("s")
    assert stored is not None
    assert stored.transcript is not None
    results = [m for m in stored.transcript if isinstance(m, ToolResult)]
    assert results[0].content == "412 passed"  # the real result, not "interrupted"


def _hold_until_told(spec: str, held: Any, leave: Any) -> None:
    store = open_spec(spec)
    store.acquire("shared", seconds=0.001)  # expires at once: only liveness protects it
    held.set()
    leave.wait(60)


def test_a_live_holder_on_this_host_is_never_taken_over_even_expired(store_spec: str) -> None:
    context = multiprocessing.get_context("spawn")
    held, leave = context.Event(), context.Event()
    holder = context.Process(target=_hold_until_told, args=(store_spec, held, leave))
    holder.start()
    try:
        assert held.wait(60), "the holder never took the lease"
        store = open_spec(store_spec)
        with pytest.raises(SessionBusy, match="in use by"):
            store.acquire("shared")  # expired, but its process runs: it may be mid-call
        leave.set()
        holder.join(60)
        store.acquire("shared")  # its process is gone: taken over at once
    finally:
        leave.set()
        holder.join(60)


# Round three (issue 38): holders on another host, and a stop that waits for its renewal.


def test_an_expired_lease_held_on_another_host_is_taken_over(
    make_store: OpenStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker on another machine cannot be checked for life from here: once its lease
    has expired, the session is taken over (a fleet's recovery of a dead machine's run)."""
    clock = Clock()
    store = make_store(clock=clock, lease_seconds=LEASE)
    # A pid that runs here too, so only the host name tells the holder is elsewhere.
    monkeypatch.setattr(sql, "holder_name", lambda: f"elsewhere:{os.getppid()}:1")
    held = store.acquire("s")
    monkeypatch.undo()
    with pytest.raises(SessionBusy, match="elsewhere"):
        store.acquire("s")  # its lease still runs
    clock.now += LEASE + 1
    taken = store.acquire("s")
    assert taken.token != held.token
    assert taken.holder == lease_module.holder_name()


def test_stopping_a_heartbeat_waits_for_the_renewal_in_progress() -> None:
    """`stop` returns only once a renewal under way has finished its transaction, so the
    caller may release the lease or close the store after it."""
    entered, release = threading.Event(), threading.Event()
    finished: list[bool] = []

    def renew(held: Lease) -> None:
        entered.set()
        assert release.wait(60), "the renewal was never let finish"
        finished.append(True)

    held = Lease("s", "token", "here:1:1", 0.0, 0, 0, 0, seconds=0.004)
    beat = lease_module.Heartbeat(renew, held)
    thread = beat._thread
    join = thread.join

    def joined(timeout: float | None = None) -> None:
        release.set()  # stop waits now: let the renewal end
        join(timeout)

    thread.join = joined  # type: ignore[method-assign]
    beat.start()
    try:
        assert entered.wait(60), "no renewal started"
        beat.stop()
        assert finished == [True]
    finally:
        release.set()
        join(60)
