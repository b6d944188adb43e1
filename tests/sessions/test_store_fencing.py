"""Fencing in the session store, on SQLite and PostgreSQL: a write under the right token
but from a stale view of the session is refused, an old holder's `release` never frees a new
holder's lease, and stored rows whose call/result pairing is broken are refused on load."""

from __future__ import annotations

import copy

import pytest

from tests.sessions.test_store_contract import Clock
from tests.support.sessions_data import grown, step
from tests.support.stores import OpenStore
from warmloop.errors import SessionBusy, SessionError
from warmloop.sessions.sql import SqlStore


def test_a_write_with_the_right_token_but_a_stale_length_is_refused(store: SqlStore) -> None:
    lease = store.acquire("demo")
    stale = copy.copy(lease)  # a view of the session taken before the next write
    transcript = grown(1)
    store.append(lease, transcript)
    behind = grown(1)
    behind.extend(step(2))
    with pytest.raises(SessionError, match="expected 0 at revision 0"):
        store.append(stale, behind)
    stored = store.load("demo")
    assert stored is not None
    assert stored.transcript == transcript  # the stale write left nothing


def test_an_old_holders_release_leaves_the_new_holders_lease_alone(
    make_store: OpenStore,
) -> None:
    clock = Clock()
    first, second = make_store(clock=clock, lease_seconds=60), make_store(clock=clock)
    third = make_store(clock=clock)
    old = first.acquire("demo")
    clock.now += 61  # the first worker stalled past its lease; the second took it over
    new = second.acquire("demo")
    first.release(old)  # the old holder wakes up and lets go of what it no longer holds
    with pytest.raises(SessionBusy):
        third.acquire("demo")
    second.append(new, grown(1))  # the new holder still writes
    second.release(new)
    third.acquire("demo")


def test_stored_rows_whose_pairing_is_broken_are_refused_on_load(store: SqlStore) -> None:
    lease = store.acquire("demo")
    transcript = grown(2)
    store.append(lease, transcript)
    result_at = next(i for i, m in enumerate(transcript) if m.kind == "tool_result")
    body = store.raw(f"SELECT body FROM messages WHERE position = {result_at}")[0][0]
    call_id = transcript[result_at].call_id  # type: ignore[union-attr]
    damaged = str(body).replace(call_id, "call_from_nowhere").replace("'", "''")
    store.raw(f"UPDATE messages SET body = '{damaged}' WHERE position = {result_at}")
    with pytest.raises(SessionError, match="session 'demo' is damaged"):
        store.load("demo")
