"""Rewrites through the store contract, on SQLite and PostgreSQL: a rewrite and its archive
rows commit in one transaction (a fault injected anywhere in it leaves nothing changed),
and the schema migrates step by step."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.sessions_data import grown, request
from tests.support.stores import OpenStore
from warmloop.errors import SessionError
from warmloop.messages import Rewrite, Summary, UserText
from warmloop.sessions.lease import Lease
from warmloop.sessions.migrations import MIGRATIONS, migrate
from warmloop.sessions.persistence import SessionPersistence
from warmloop.sessions.sql import SqlStore
from warmloop.sessions.sqlite import SQLiteStore
from warmloop.transcript import Transcript, check_pairing, scratch_copy

Change = Callable[[Transcript], Rewrite]
PRUNE: Change = lambda t: t.replace_content({3: "[pruned: lookup 1.0]", 6: "[pruned]"})  # noqa: E731
FOLD: Change = lambda t: t.fold(2, 8, "<summary>steps 1 and 2</summary>")  # noqa: E731
CHANGES = {"replace": PRUNE, "fold": FOLD}


def stored_session(store: SqlStore) -> tuple[Lease, Transcript]:
    """A session of four steps with a request per step, all stored."""
    lease = store.acquire("demo")
    transcript = grown(4)
    store.append(lease, transcript, [request(p) for p in (2, 5, 8, 11)])
    return lease, transcript


def loaded(store: SqlStore) -> Transcript:
    stored = store.load("demo")
    assert stored is not None
    assert stored.transcript is not None
    return stored.transcript


def test_replace_content_archives_the_originals_with_their_revision(store: SqlStore) -> None:
    lease, transcript = stored_session(store)
    after = scratch_copy(transcript)
    rewrite = PRUNE(after)
    store.rewrite(lease, after, rewrite)
    assert loaded(store) == after
    archive = store.archive("demo")
    assert [(a.revision, a.position, a.message) for a in archive] == [
        (1, 3, transcript[3]),
        (1, 6, transcript[6]),
    ]
    [point] = store.rewrites("demo")
    assert (point.revision, point.kind, point.start, point.end, point.replaced) == (
        1,
        "replace",
        3,
        7,
        2,
    )
    assert lease.revision == 1


def test_fold_inserts_the_summary_and_shifts_every_later_row(store: SqlStore) -> None:
    lease, transcript = stored_session(store)
    after = scratch_copy(transcript)
    store.rewrite(lease, after, FOLD(after))
    again = loaded(store)
    assert again == after
    assert again[8] == Summary("<summary>steps 1 and 2</summary>", 2, 8)
    assert again.messages[9:] == transcript.messages[8:]  # shifted by one, unchanged
    check_pairing(again.visible_messages())
    # Request records follow their assistant turns.
    assert [r.position for r in store.requests("demo")] == [2, 5, 9, 12]
    assert store.archive("demo") == []  # a fold replaces nothing
    assert [(p.kind, p.start, p.end, p.length) for p in store.rewrites("demo")] == [
        ("fold", 2, 8, 15)
    ]


def test_a_later_fold_shifts_an_earlier_summary_and_keeps_loading(store: SqlStore) -> None:
    lease, transcript = stored_session(store)
    first = scratch_copy(transcript)
    store.rewrite(lease, first, first.fold(8, 11, "late step"))  # summary at 11
    second = scratch_copy(first)
    store.rewrite(lease, second, second.fold(2, 5, "first step"))  # shifts it to 12
    assert loaded(store) == second
    assert second[12] == Summary("late step", 9, 12)
    assert [(p.start, p.end) for p in store.rewrites("demo")] == [(9, 12), (2, 5)]


def test_a_rewrite_also_stores_messages_appended_since_the_last_write(store: SqlStore) -> None:
    lease, transcript = stored_session(store)
    after = scratch_copy(transcript)
    after.append(UserText("and one more thing"))  # appended, not stored yet
    store.rewrite(lease, after, PRUNE(after))
    assert loaded(store) == after


def test_a_no_op_rewrite_stores_nothing(store: SqlStore) -> None:
    lease, transcript = stored_session(store)
    after = scratch_copy(transcript)
    store.rewrite(lease, after, after.replace_content({3: transcript[3].content}))  # type: ignore[union-attr]
    assert store.rewrites("demo") == []
    assert lease.revision == 0


def test_a_stale_rewrite_is_refused(store: SqlStore) -> None:
    lease, transcript = stored_session(store)
    after = scratch_copy(transcript)
    PRUNE(after)
    rewrite = FOLD(after)  # revision 2, but the store holds revision 0
    with pytest.raises(SessionError, match="must create revision 1"):
        store.rewrite(lease, after, rewrite)
    assert loaded(store) == transcript


def _fail_on_insert(store: SqlStore, table: str) -> None:
    """A real database fault inside the rewrite's transaction: a trigger that raises."""
    if store.location.startswith("postgresql://"):
        store.raw(
            "CREATE FUNCTION injected_fault() RETURNS trigger AS $$ BEGIN "
            "RAISE EXCEPTION 'injected fault'; END $$ LANGUAGE plpgsql"
        )
        store.raw(
            f"CREATE TRIGGER injected BEFORE INSERT ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION injected_fault()"
        )
    else:
        store.raw(
            f"CREATE TRIGGER injected BEFORE INSERT ON {table} "
            "BEGIN SELECT RAISE(ABORT, 'injected fault'); END"
        )


def _heal(store: SqlStore, table: str) -> None:
    if store.location.startswith("postgresql://"):
        store.raw(f"DROP TRIGGER injected ON {table}")
    else:
        store.raw("DROP TRIGGER injected")


@pytest.mark.parametrize(
    ("kind", "table"),
    [("replace", "archive"), ("replace", "rewrites"), ("fold", "messages"), ("fold", "rewrites")],
)
def test_a_fault_mid_transaction_leaves_nothing_changed(
    store: SqlStore, kind: str, table: str
) -> None:
    """The fault strikes while archiving (`archive`: nothing rewritten yet), after a fold
    deleted the rows it shifts (`messages`), or at the last insert, after every row was
    rewritten (`rewrites`): the rollback must undo all of it."""
    lease, transcript = stored_session(store)
    before = (loaded(store).dump(), store.archive("demo"), store.rewrites("demo"))
    before_requests = store.requests("demo")
    _fail_on_insert(store, table)
    after = scratch_copy(transcript)
    rewrite = CHANGES[kind](after)
    with pytest.raises(SessionError, match="injected fault"):
        store.rewrite(lease, after, rewrite)
    assert (loaded(store).dump(), store.archive("demo"), store.rewrites("demo")) == before
    assert store.requests("demo") == before_requests
    _heal(store, table)
    store.rewrite(lease, after, rewrite)  # the lease is intact: the same rewrite now lands
    assert loaded(store) == after


async def test_the_recorder_adopts_a_rewrite_only_once_it_is_stored(store: SqlStore) -> None:
    """Through the loop's own path (`stored`, as the runner calls it): a failed store
    changes nothing, and a stored rewrite becomes the session's transcript."""
    lease, transcript = stored_session(store)
    recorder = SessionPersistence(store, lease, transcript)
    scratch = scratch_copy(transcript)
    rewrite = PRUNE(scratch)
    _fail_on_insert(store, "archive")
    with pytest.raises(SessionError):
        await recorder.stored(scratch, rewrite)
    assert transcript.revision == 0
    assert recorder.transcript is transcript
    assert loaded(store) == transcript
    _heal(store, "archive")
    await recorder.stored(scratch, rewrite)
    adopted = recorder.transcript
    assert adopted is scratch
    assert adopted.revision == 1
    assert adopted.id == transcript.id
    assert transcript.revision == 0  # the caller's copy was never touched
    assert loaded(store) == adopted


def test_a_schema_newer_than_this_warmloop_is_refused(make_store: OpenStore) -> None:
    make_store().raw("UPDATE warmloop_schema SET version = 99")
    with pytest.raises(SessionError, match="schema version 99, newer than this warmloop"):
        make_store()


def test_migrations_apply_each_missing_step_once(store: SqlStore) -> None:
    stored_session(store)
    step = ["ALTER TABLE sessions ADD COLUMN note TEXT NOT NULL DEFAULT 'v2'"]
    with store.transaction(write=True) as cur:
        assert migrate(cur, (*MIGRATIONS, step)) == len(MIGRATIONS) + 1
    with store.transaction(write=True) as cur:
        assert migrate(cur, (*MIGRATIONS, step)) == len(MIGRATIONS) + 1  # not applied again
    assert store.raw("SELECT note FROM sessions") == [("v2",)]
    assert loaded(store).messages == grown(4).messages


# Round three (issue 32): resume. A store of schema version 2 (before the told window) opens
# with its sessions intact and no told window.
def test_a_version_2_store_gains_the_told_window(tmp_path: Path) -> None:
    path = tmp_path / "v2.db"
    with sqlite3.connect(path) as connection:
        cursor = connection.cursor()
        assert migrate(cursor, MIGRATIONS[:2]) == 2
        cursor.execute("INSERT INTO sessions (id, context_window) VALUES ('old', 9000)")
    store = SQLiteStore(str(path))
    assert store.raw("SELECT version FROM warmloop_schema") == [(len(MIGRATIONS),)]
    info = store.info("old")
    assert info is not None
    assert (info.meta.context_window, info.meta.told_window) == (9000, None)
    store.close()


# Issue 36: a store of schema version 3 (before the learned cache facts) opens with its
# sessions intact, nothing learned yet.
def test_a_version_3_store_gains_the_learned_cache_facts(tmp_path: Path) -> None:
    path = tmp_path / "v3.db"
    with sqlite3.connect(path) as connection:
        cursor = connection.cursor()
        assert migrate(cursor, MIGRATIONS[:3]) == 3
        cursor.execute("INSERT INTO sessions (id, told_window) VALUES ('old', 9000)")
    store = SQLiteStore(str(path))
    assert store.raw("SELECT version FROM warmloop_schema") == [(len(MIGRATIONS),)]
    info = store.info("old")
    assert info is not None
    meta = info.meta
    assert (meta.told_window, meta.cache_minimum, meta.cache_survived, meta.cache_evicted) == (
        9000,
        None,
        0,
        0,
    )
    store.close()
