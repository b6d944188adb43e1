"""Store fixtures: every store test runs on SQLite and on a real PostgreSQL server.

The PostgreSQL server comes from `scripts/postgres.sh` (its URL in $WARMLOOP_TEST_POSTGRES,
as `scripts/test.sh` sets it, or started here); the tests get one throwaway database per
test session and a fresh schema per test. They skip, saying why, only when no server can
be started.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import pytest

from warmloop.messages import Rewrite
from warmloop.sessions.lease import Lease
from warmloop.sessions.ledger import ArchivedMessage, RewritePoint, StoredRequest
from warmloop.sessions.session import SessionInfo, StoredSession
from warmloop.sessions.sql import SqlStore
from warmloop.sessions.sqlite import SQLiteStore
from warmloop.sessions.store import SessionStore
from warmloop.transcript import Transcript

POSTGRES_VARIABLE = "WARMLOOP_TEST_POSTGRES"
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "postgres.sh"
STORES = ["sqlite", "postgres"]

OpenStore = Callable[..., SqlStore]


_STARTED: dict[str, str] = {}
"""What scripts/postgres.sh gave this test session: its URL ("url") or why it failed ("why")."""


def _server_url() -> str:
    """The test server's URL: $WARMLOOP_TEST_POSTGRES, else what scripts/postgres.sh prints,
    run once per test session (each fleet test asks; a server that cannot be started, after
    an install try of up to 15 minutes, is not tried again per test), else a skip."""
    url = os.environ.get(POSTGRES_VARIABLE, "").strip()
    if url:
        return url
    if not _STARTED:
        _STARTED.update(_start_server())
    if "why" in _STARTED:
        pytest.skip(_STARTED["why"])
    return _STARTED["url"]


def _start_server() -> dict[str, str]:
    try:
        done = subprocess.run(
            ["bash", str(SCRIPT)], capture_output=True, text=True, timeout=900, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"why": f"PostgreSQL could not be started ({exc}); its session tests need a server"}
    if done.returncode != 0:
        why = " ".join(done.stderr.split()[-40:])
        return {"why": f"PostgreSQL could not be started by scripts/postgres.sh: {why}"}
    return {"url": done.stdout.strip()}


def with_database(url: str, name: str) -> str:
    """`url` pointing at database `name`."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def with_schema(url: str, schema: str) -> str:
    """`url` whose connections use `schema` (a fresh namespace per test)."""
    options = quote(f"-csearch_path={schema}", safe="")
    return f"{url}{'&' if '?' in url else '?'}options={options}"


def admin(url: str, statement: str) -> None:
    """Run one statement outside a transaction (CREATE/DROP DATABASE need that)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(statement.encode())


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """A throwaway database on the test server, dropped at the end of the test session."""
    server = _server_url()
    name = "warmloop_test_" + secrets.token_hex(4)
    admin(server, f"CREATE DATABASE {name}")
    yield with_database(server, name)
    admin(server, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(params=STORES)
def store_spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Where a fresh, empty store lives: a SQLite file or a PostgreSQL schema of its own."""
    if request.param == "sqlite":
        yield str(tmp_path / "sessions.db")
        return
    database: str = request.getfixturevalue("postgres_database")
    schema = "s_" + secrets.token_hex(6)
    admin(database, f"CREATE SCHEMA {schema}")
    yield with_schema(database, schema)
    admin(database, f"DROP SCHEMA {schema} CASCADE")


def open_spec(spec: str, **options: Any) -> SqlStore:
    """The store at `spec`, with store options (a clock, a lease length)."""
    if spec.startswith("postgresql://"):
        from warmloop.sessions.postgres import PostgresStore

        return PostgresStore(spec, **options)
    return SQLiteStore(spec, **options)


@pytest.fixture
def make_store(store_spec: str) -> Iterator[OpenStore]:
    """Opens stores on the test's store (several may be open at once); closes them all."""
    opened: list[SqlStore] = []

    def factory(**options: Any) -> SqlStore:
        store = open_spec(store_spec, **options)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


@pytest.fixture
def store(make_store: OpenStore) -> SqlStore:
    """A fresh store of each kind."""
    return make_store()


class ThreadRecordingStore:
    """A real store that records which thread each contract call ran on (`calls`: the
    method's name and `threading.get_ident()`), so a test can tell a call made on the
    event loop's thread from one moved off it."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self.location = store.location
        self.calls: list[tuple[str, int]] = []

    def _called(self, name: str) -> None:
        self.calls.append((name, threading.get_ident()))

    def acquire(self, session_id: str, *, seconds: float | None = None) -> Lease:
        self._called("acquire")
        return self.store.acquire(session_id, seconds=seconds)

    def release(self, lease: Lease) -> None:
        self._called("release")
        self.store.release(lease)

    def renew(self, lease: Lease) -> None:
        self._called("renew")
        self.store.renew(lease)

    def append(
        self,
        lease: Lease,
        transcript: Transcript,
        requests: Sequence[StoredRequest] = (),
        *,
        cache_ttl: str = "",
    ) -> None:
        self._called("append")
        self.store.append(lease, transcript, requests, cache_ttl=cache_ttl)

    def rewrite(self, lease: Lease, transcript_after: Transcript, rewrite: Rewrite) -> None:
        self._called("rewrite")
        self.store.rewrite(lease, transcript_after, rewrite)

    def load(self, session_id: str) -> StoredSession | None:
        self._called("load")
        return self.store.load(session_id)

    def info(self, session_id: str) -> SessionInfo | None:
        self._called("info")
        return self.store.info(session_id)

    def sessions(self) -> list[SessionInfo]:
        self._called("sessions")
        return self.store.sessions()

    def requests(self, session_id: str) -> list[StoredRequest]:
        self._called("requests")
        return self.store.requests(session_id)

    def archive(self, session_id: str) -> list[ArchivedMessage]:
        self._called("archive")
        return self.store.archive(session_id)

    def rewrites(self, session_id: str) -> list[RewritePoint]:
        self._called("rewrites")
        return self.store.rewrites(session_id)

    def close(self) -> None:
        self._called("close")
        self.store.close()
