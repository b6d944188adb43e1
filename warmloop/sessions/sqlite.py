"""The embedded session store: one SQLite file in WAL mode (the default store).

Writers are serialised by `BEGIN IMMEDIATE` (short transactions; another process waits for
the database lock, never for a lease). A step's commit is at `synchronous=NORMAL`: in WAL
mode it is in the WAL file when `append` returns, so it survives a crash of the process
(SIGKILL included) at once, without an fsync per step (an fsync costs milliseconds; the rest
of a step's write about a tenth of one). The durable transactions (`durable=True`: the
lease's release at the end of every run, and rewrites) commit at `synchronous=FULL`, whose
fsync of the WAL also makes every earlier step of the file durable: once a run returns, its
steps survive a crash of the machine too (a durable commit that wrote nothing, the release
of a lease already lost, checkpoints the WAL instead, which syncs it). `sync_each_step=True`
makes every write durable (an fsync each step) for a machine that may lose power mid-run.
"""

from __future__ import annotations

import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from warmloop.errors import SessionError
from warmloop.sessions.lease import LEASE_SECONDS
from warmloop.sessions.migrations import (
    MIGRATIONS,
    SCHEMA_TABLE,
    Cursor,
    Params,
    Row,
    migrate,
    refuse_newer,
    stored_version,
)
from warmloop.sessions.sql import SqlStore

BUSY_TIMEOUT_MS = 10_000
STEP_SYNC = "NORMAL"
"""How a write that is not durable commits: in the WAL, synced at the next durable one."""


def refuse_special(path: Path) -> None:
    """A store path that is there but no regular file (a FIFO, a device such as a link to
    /dev/zero, a directory) is a SessionError: it holds no store, and reading it could
    block or never end; an empty size is no sign of an empty store then."""
    try:
        mode = path.stat().st_mode  # through a link, to what it names
    except FileNotFoundError:
        return  # a new store: created on first write
    except OSError as exc:
        raise SessionError(f"cannot open the session store {path}: {exc.strerror}") from exc
    if not stat.S_ISREG(mode):
        kind = (
            "a directory"
            if stat.S_ISDIR(mode)
            else "a named pipe"
            if stat.S_ISFIFO(mode)
            else "a device"
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "not a regular file"
        )
        raise SessionError(
            f"cannot open the session store {path}: it is {kind}, not a SQLite file; "
            "pass --store a file path"
        )


class SQLiteStore(SqlStore):
    """Sessions in one SQLite file (created with its schema on first use)."""

    def __init__(
        self,
        path: str | Path,
        *,
        lease_seconds: float = LEASE_SECONDS,
        clock: Callable[[], float] = time.time,
        read_only: bool = False,
        sync_each_step: bool = False,
    ) -> None:
        super().__init__(lease_seconds=lease_seconds, clock=clock)
        self.sync_each_step = sync_each_step
        """Every write at `synchronous=FULL` (an fsync each step), not only the durable ones."""
        self.path = Path(path)
        self.location = str(self.path)
        self._lock = threading.Lock()
        if not self.path.parent.is_dir():
            raise SessionError(
                f"cannot open the session store {self.path}: its directory does not exist"
            )
        refuse_special(self.path)
        if read_only and self._open_read_only():
            return
        try:
            self._connection = self._connect(str(self.path), uri=False)
            self._refuse_foreign(self._tables())  # before WAL mode rewrites its header
            self._connection.execute("PRAGMA journal_mode = WAL")
            self._connection.execute(f"PRAGMA synchronous = {STEP_SYNC}")
        except sqlite3.Error as exc:
            raise SessionError(f"cannot open the session store {self.path}: {exc}") from exc
        with self.transaction(write=True) as cur:
            migrate(cur)

    def _connect(self, target: str, *, uri: bool) -> sqlite3.Connection:
        connection = sqlite3.connect(
            target, isolation_level=None, check_same_thread=False, timeout=0, uri=uri
        )
        connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        return connection

    def _open_read_only(self) -> bool:
        """Open the file for reading only, for commands that only read: a file that is
        missing or holds no table reads as an empty store (an empty one in memory, the file
        left uncreated), another application's database is refused, and nothing is ever
        written to either. False for a store of an older schema, which is upgraded as a
        writer would (the only write a reader makes, and to warmloop's own file)."""
        try:
            if self.path.exists() and self.path.stat().st_size > 0:
                uri = f"file:{quote(str(self.path.resolve()))}?mode=ro"
                self._connection = self._connect(uri, uri=True)
            else:
                self._connection = self._connect(":memory:", uri=False)
        except (sqlite3.Error, OSError) as exc:
            raise SessionError(f"cannot open the session store {self.path}: {exc}") from exc
        tables = self._tables()
        self._refuse_foreign(tables)
        if not tables:  # nothing stored yet: read an empty store
            self._connection.close()
            self._connection = self._connect(":memory:", uri=False)
            with self.transaction(write=True) as cur:
                migrate(cur)
            return True
        with self.transaction(write=False) as cur:
            version = stored_version(cur)
        if version < len(MIGRATIONS):
            self._connection.close()
            return False
        refuse_newer(version)
        return True

    def _tables(self) -> list[str]:
        with self.transaction(write=False) as cur:
            cur.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            return [str(name) for (name,) in cur.fetchall()]

    def _refuse_foreign(self, tables: list[str]) -> None:
        """Another application's database (tables, none of them warmloop's version table)
        is refused before anything is written to it; the connection is closed."""
        if tables and SCHEMA_TABLE not in tables:
            self._connection.close()
            shown = ", ".join(tables[:5]) + (", ..." if len(tables) > 5 else "")
            raise SessionError(
                f"{self.path} is not a warmloop session store (it holds other tables: "
                f"{shown}); pass --store a file warmloop wrote, or a new path"
            )

    @contextmanager
    def transaction(self, *, write: bool, durable: bool = False) -> Iterator[Cursor]:
        with self._lock:
            full = write and (durable or self.sync_each_step)
            if full:  # outside the transaction: SQLite ignores it inside one
                self._connection.execute("PRAGMA synchronous = FULL")
            cursor = self._connection.cursor()
            try:
                changes = self._connection.total_changes
                cursor.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                yield cursor
                cursor.execute("COMMIT")
                if full and self._connection.total_changes == changes:
                    # A commit that wrote nothing (a lost lease's release) syncs nothing:
                    # a checkpoint syncs the WAL, and with it the steps before.
                    cursor.execute("PRAGMA wal_checkpoint(PASSIVE)")
            except BaseException as exc:
                if self._connection.in_transaction:
                    self._connection.rollback()
                if isinstance(exc, sqlite3.Error):
                    raise SessionError(f"session store {self.path}: {exc}") from exc
                raise
            finally:
                cursor.close()
                if full:
                    self._connection.execute(f"PRAGMA synchronous = {STEP_SYNC}")

    def raw(self, sql: str, params: Params = ()) -> list[Row]:
        """Run one statement outside the contract (tests inject faults with it)."""
        with self.transaction(write=True) as cur:
            cur.execute(sql, params)
            return cur.fetchall()

    def close(self) -> None:
        with self._lock:
            self._connection.close()
