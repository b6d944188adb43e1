"""The embedded session store: one SQLite file in WAL mode (the default store).

Writers are serialised by `BEGIN IMMEDIATE` (short transactions; another process waits for
the database lock, never for a lease). `synchronous=FULL`: a committed step survives a
crash of the process and of the machine.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from warmloop.errors import SessionError
from warmloop.sessions.lease import LEASE_SECONDS
from warmloop.sessions.schema import Cursor, migrate
from warmloop.sessions.sql import SqlStore

BUSY_TIMEOUT_MS = 10_000


class SQLiteStore(SqlStore):
    """Sessions in one SQLite file (created with its schema on first use)."""

    def __init__(
        self,
        path: str | Path,
        *,
        lease_seconds: float = LEASE_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(lease_seconds=lease_seconds, clock=clock)
        self.path = Path(path)
        self.location = str(self.path)
        if not self.path.parent.is_dir():
            raise SessionError(
                f"cannot open the session store {self.path}: its directory does not exist"
            )
        try:
            self._connection = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=0
            )
            self._connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self._connection.execute("PRAGMA journal_mode = WAL")
            self._connection.execute("PRAGMA synchronous = FULL")
        except sqlite3.Error as exc:
            raise SessionError(f"cannot open the session store {self.path}: {exc}") from exc
        self._lock = threading.Lock()
        with self.transaction(write=True) as cur:
            migrate(cur)

    @contextmanager
    def transaction(self, *, write: bool) -> Iterator[Cursor]:
        with self._lock:
            cursor = self._connection.cursor()
            try:
                cursor.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                yield cursor
                cursor.execute("COMMIT")
            except BaseException as exc:
                if self._connection.in_transaction:
                    self._connection.rollback()
                if isinstance(exc, sqlite3.Error):
                    raise SessionError(f"session store {self.path}: {exc}") from exc
                raise
            finally:
                cursor.close()

    def raw(self, sql: str, params: Any = ()) -> list[Any]:
        """Run one statement outside the contract (tests inject faults with it)."""
        with self.transaction(write=True) as cur:
            cur.execute(sql, params)
            return cur.fetchall()

    def close(self) -> None:
        with self._lock:
            self._connection.close()
