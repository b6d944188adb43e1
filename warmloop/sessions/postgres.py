"""The shared session store: PostgreSQL through psycopg 3 and a connection pool, for many
workers serving sessions at once.

A write locks its session row (`SELECT ... FOR UPDATE`) before checking the lease, so two
workers never interleave writes to one session; schema changes take an advisory lock so
workers starting together migrate once. Lease times come from each worker's clock.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from warmloop.errors import ConfigurationError, SessionError
from warmloop.sessions.lease import LEASE_SECONDS
from warmloop.sessions.migrations import Cursor, Params, Row, migrate
from warmloop.sessions.sql import SqlStore

try:
    import psycopg
    import psycopg_pool
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ConfigurationError(
        "a PostgreSQL session store needs psycopg and psycopg_pool; install them with: "
        "pip install 'warmloop[postgres]'"
    ) from exc

MIGRATION_LOCK = 0x77A2_6D10  # an arbitrary advisory lock key for schema changes
_PASSWORD = re.compile(r"(://[^:/@]*:)[^@]*@")


class _Cursor:
    """A psycopg cursor that takes the `?` placeholders the shared SQL is written with."""

    def __init__(self, cursor: psycopg.Cursor[Row]) -> None:
        self._cursor = cursor

    def execute(self, sql: str, params: Params | None = None, /) -> object:
        return self._cursor.execute(sql.replace("?", "%s"), params)

    def executemany(self, sql: str, params: Iterable[Params], /) -> None:
        rows = list(params)
        if rows:
            self._cursor.executemany(sql.replace("?", "%s"), rows)

    def fetchone(self) -> Row | None:
        return self._cursor.fetchone()

    def fetchall(self) -> list[Row]:
        return self._cursor.fetchall()

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount


class PostgresStore(SqlStore):
    """Sessions in a PostgreSQL database (`postgresql://user@host/db`); the schema is created
    or migrated on first use."""

    lock_row = " FOR UPDATE"

    def __init__(
        self,
        url: str,
        *,
        lease_seconds: float = LEASE_SECONDS,
        clock: Callable[[], float] = time.time,
        pool_size: int = 4,
        timeout: float = 10.0,
    ) -> None:
        super().__init__(lease_seconds=lease_seconds, clock=clock)
        self.location = _PASSWORD.sub(r"\1***@", url)
        try:
            # Checked before each loan: a connection a restart cut is replaced, not lent.
            self._pool = psycopg_pool.ConnectionPool(
                url,
                min_size=1,
                max_size=pool_size,
                timeout=timeout,
                open=False,
                check=psycopg_pool.ConnectionPool.check_connection,
            )
            self._pool.open(wait=True, timeout=timeout)
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise SessionError(f"cannot reach the session store {self.location}: {exc}") from exc
        with self.transaction(write=True) as cur:
            cur.execute("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))
            migrate(cur)

    @contextmanager
    def transaction(self, *, write: bool, durable: bool = False) -> Iterator[Cursor]:
        # Every commit is as durable as the server's `synchronous_commit` makes it. A read
        # of several statements (a load: the session's row, then its messages) is one
        # snapshot: under READ COMMITTED a commit between them reads as a damaged session.
        try:
            with (
                self._pool.connection() as connection,
                connection.transaction(),
                connection.cursor() as cursor,
            ):
                if not write:
                    cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                yield _Cursor(cursor)
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise SessionError(f"session store {self.location}: {exc}") from exc

    def raw(self, sql: str, params: Params = ()) -> list[Row]:
        """Run one statement outside the contract (tests inject faults with it)."""
        with self._pool.connection() as connection, connection.cursor() as cursor:
            cursor.execute(sql, params or None)
            return cursor.fetchall() if cursor.description else []

    def close(self) -> None:
        self._pool.close()
