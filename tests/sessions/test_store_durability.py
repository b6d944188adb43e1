"""When the SQLite store fsyncs: a step's commit goes to the WAL at `synchronous=NORMAL` (it
survives a killed process; the crash tests kill workers mid-step), and the durable commits
(the lease's release at the end of every run, and rewrites) run at `synchronous=FULL`, whose
fsync of the WAL makes every earlier step durable against a crash of the machine too.
Whether an fsync happens is read from the statements SQLite runs (its trace callback): a
lost machine cannot be simulated here."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.support.sessions_data import seeded, step
from warmloop.sessions.sqlite import SQLiteStore


def traced(store: SQLiteStore) -> list[str]:
    statements: list[str] = []
    store._connection.set_trace_callback(statements.append)
    return statements


def synced(statements: list[str], write: Callable[[], None]) -> bool:
    """Whether `write` committed at synchronous=FULL (and the connection went back after)."""
    statements.clear()
    write()
    full = [i for i, s in enumerate(statements) if s == "PRAGMA synchronous = FULL"]
    commits = [i for i, s in enumerate(statements) if s == "COMMIT"]
    assert commits, statements
    if full:
        assert full[0] < commits[-1] < len(statements) - 1, statements
        assert statements[-1] == "PRAGMA synchronous = NORMAL", statements
    return bool(full)


def test_a_step_commits_to_the_wal_and_the_release_syncs_it(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    try:
        statements = traced(store)
        lease = store.acquire("demo")
        transcript = seeded()
        assert not synced(statements, lambda: store.append(lease, transcript))
        transcript.extend(step(1))
        assert not synced(statements, lambda: store.append(lease, transcript))
        assert synced(statements, lambda: store.release(lease))
        assert store.raw("PRAGMA synchronous") == [(1,)]  # NORMAL again for the next step
        loaded = store.load("demo")
        assert loaded is not None
        assert loaded.transcript == transcript
    finally:
        store.close()


def test_sync_each_step_fsyncs_every_step(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db", sync_each_step=True)
    try:
        statements = traced(store)
        lease = store.acquire("demo")
        transcript = seeded()
        assert synced(statements, lambda: store.append(lease, transcript))
    finally:
        store.close()


def test_a_release_that_writes_nothing_still_syncs_the_steps_before_it(tmp_path: Path) -> None:
    """A lease lost to another holder: its release updates no row, so its commit would
    sync nothing; a checkpoint syncs the WAL instead."""
    now = [1_000.0]
    store = SQLiteStore(tmp_path / "s.db", lease_seconds=10, clock=lambda: now[0])
    try:
        statements = traced(store)
        lost = store.acquire("demo")
        store.append(lost, seeded())
        now[0] += 60  # the lease expired: another holder takes the session
        store.acquire("demo")
        statements.clear()
        store.release(lost)
        assert "PRAGMA wal_checkpoint(PASSIVE)" in statements, statements
        statements.clear()
        store.release(store.acquire("other"))  # a release that writes: its commit syncs
        assert "PRAGMA wal_checkpoint(PASSIVE)" not in statements, statements
    finally:
        store.close()
