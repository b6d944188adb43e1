"""The session store contract, run on SQLite and on a real PostgreSQL server: sessions are
created under a lease, steps append and load back exactly, one holder at a time."""

from __future__ import annotations

import multiprocessing
import os
from dataclasses import replace

import pytest

from tests.support.sessions_data import grown, request, seeded, step
from tests.support.stores import OpenStore, open_spec
from warmloop.errors import ConfigurationError, SessionBusy, SessionError
from warmloop.facts.usage import Usage
from warmloop.messages import AssistantTurn, ToolCall
from warmloop.sessions.sql import SqlStore
from warmloop.sessions.store import SessionStore


class Clock:
    """A clock the test moves by hand (lease expiry without sleeping)."""

    def __init__(self, now: float = 10_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_both_stores_keep_the_one_contract(store: SqlStore) -> None:
    assert isinstance(store, SessionStore)


def test_a_new_session_is_created_empty_under_its_lease(store: SqlStore) -> None:
    lease = store.acquire("demo")
    stored = store.load("demo")
    assert stored is not None
    assert stored.transcript is None
    assert (stored.info.length, stored.info.revision, stored.info.requests) == (0, 0, 0)
    assert stored.info.lease_holder == lease.holder
    assert store.load("other") is None
    assert store.info("other") is None


def test_steps_appended_one_transaction_each_load_back_exactly(store: SqlStore) -> None:
    lease = store.acquire("demo")
    transcript = seeded()
    for k in range(1, 4):
        transcript.extend(step(k))
        store.append(lease, transcript, [request(len(transcript) - 3)], cache_ttl="5m")
        assert lease.length == len(transcript)
    stored = store.load("demo")
    assert stored is not None
    assert stored.transcript is not None
    assert stored.transcript == transcript  # id, conversation, revision, meta, messages
    assert stored.transcript.dump() == transcript.dump()
    assert stored.info.cache_ttl == "5m"
    assert stored.info.provider == "scripted"


def test_request_usage_is_recorded_and_summed(store: SqlStore) -> None:
    lease = store.acquire("demo")
    transcript = grown(2)
    store.append(lease, transcript, [request(2, 10), request(5, 20)])
    transcript.extend(step(3))
    store.append(lease, transcript, [request(8, 30)])
    assert [r.position for r in store.requests("demo")] == [2, 5, 8]
    assert store.requests("demo")[0].usage == Usage(10, 20, 3, 7, 1)
    info = store.info("demo")
    assert info is not None
    assert info.requests == 3
    assert info.usage == Usage(60, 120, 9, 21, 3)


def test_a_second_holder_gets_session_busy_at_once(make_store: OpenStore) -> None:
    first, second = make_store(), make_store()
    lease = first.acquire("demo")
    with pytest.raises(SessionBusy, match=r"'demo' is in use by .*lease for another"):
        second.acquire("demo")
    first.append(lease, grown(1))
    first.release(lease)
    second.acquire("demo")  # free once released


def test_an_expired_lease_is_taken_over_and_its_old_holder_fenced_off(
    make_store: OpenStore,
) -> None:
    clock = Clock()
    first, second = make_store(clock=clock, lease_seconds=60), make_store(clock=clock)
    old = first.acquire("demo")
    transcript = grown(1)
    first.append(old, transcript)
    clock.now += 61  # the first worker stalled past its lease
    new = second.acquire("demo")
    transcript.extend(step(2))
    with pytest.raises(SessionBusy, match="lease was lost"):
        first.append(old, transcript)
    second.append(new, transcript)
    stored = second.load("demo")
    assert stored is not None
    assert stored.transcript == transcript


def test_a_live_holder_keeps_its_lease_by_writing(make_store: OpenStore) -> None:
    clock = Clock()
    first, second = make_store(clock=clock, lease_seconds=60), make_store(clock=clock)
    lease = first.acquire("demo")
    transcript = grown(1)
    for k in range(2, 5):
        clock.now += 40
        transcript.extend(step(k))
        first.append(lease, transcript)  # each write renews the lease
    with pytest.raises(SessionBusy):
        second.acquire("demo")


def _take_and_vanish(spec: str) -> None:
    store = open_spec(spec)
    store.acquire("demo")
    os._exit(0)  # dies holding the lease (no release, no cleanup)


def test_a_lease_left_by_a_dead_process_on_this_host_is_free_at_once(
    store: SqlStore, store_spec: str
) -> None:
    child = multiprocessing.get_context("fork").Process(target=_take_and_vanish, args=(store_spec,))
    child.start()
    child.join()
    info = store.info("demo")
    assert info is not None
    assert info.lease_holder.split(":")[1] == str(child.pid)
    store.acquire("demo")  # its lease has not expired, but its holder is gone


def test_append_refuses_a_transcript_changed_in_place(store: SqlStore) -> None:
    lease = store.acquire("demo")
    transcript = grown(2)
    store.append(lease, transcript)
    transcript.replace_content({3: "[pruned]"})
    with pytest.raises(SessionError, match="changed in place"):
        store.append(lease, transcript)
    stored = store.load("demo")
    assert stored is not None
    assert stored.transcript is not None
    assert stored.transcript.revision == 0


def test_one_session_holds_one_conversation(store: SqlStore) -> None:
    lease = store.acquire("demo")
    store.append(lease, grown(1))
    with pytest.raises(SessionError, match="holds transcript"):
        store.append(lease, grown(2))


def test_a_step_whose_results_were_never_stored_still_loads(store: SqlStore) -> None:
    lease = store.acquire("demo")
    transcript = grown(1)
    transcript.append(AssistantTurn(tool_calls=(ToolCall("call_9_0", "lookup", "{}"),)))
    store.append(lease, transcript)
    stored = store.load("demo")
    assert stored is not None
    assert stored.transcript is not None
    assert [c.id for c in stored.transcript.pending_calls()] == ["call_9_0"]


def test_a_damaged_row_is_a_session_error_naming_the_session(store: SqlStore) -> None:
    lease = store.acquire("demo")
    store.append(lease, grown(1))
    store.raw('UPDATE messages SET body = \'{"kind": "nope"}\' WHERE position = 1')
    with pytest.raises(SessionError, match="session 'demo' is damaged"):
        store.load("demo")


@pytest.mark.parametrize("name", ["../etc/passwd", "a/b", "", "x" * 65, "naïve"])
def test_session_ids_outside_the_safe_alphabet_are_refused(store: SqlStore, name: str) -> None:
    with pytest.raises(ConfigurationError, match="session id"):
        store.acquire(name)
    assert store.sessions() == []


def test_sessions_lists_every_session_most_recent_first(store: SqlStore) -> None:
    for name, updated in (("old", 1.0), ("new", 2.0), ("middle", 1.5)):
        lease = store.acquire(name)
        transcript = grown(1)
        transcript.meta = replace(transcript.meta, updated_at=updated)
        store.append(lease, transcript)
        store.release(lease)
    assert [s.id for s in store.sessions()] == ["new", "middle", "old"]
    assert all(s.lease_holder == "" for s in store.sessions())
