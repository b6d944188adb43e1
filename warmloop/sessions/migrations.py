"""The session schema, one version at a time, and how a store is brought up to date.

One DDL serves SQLite and PostgreSQL (both read TEXT, BIGINT and DOUBLE PRECISION). The
version lives in `warmloop_schema`; `migrate` applies each missing step in one transaction
and refuses a database written by a newer warmloop.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol, TypeAlias

from warmloop.errors import SessionError

Row: TypeAlias = tuple[Any, ...]
"""A row as the database driver hands it back, typed as loosely as the drivers type it
(sqlite3's values are untyped, psycopg's `TupleRow` is this alias): what each column holds
is the schema's word, checked before use where a hand-edited store could break it
(`record_rows`, `session_row`)."""
Params: TypeAlias = Sequence[object]
"""A statement's `?` parameters, in order."""


class Cursor(Protocol):
    """The part of a DB-API cursor the stores use (sqlite3 and psycopg both have it)."""

    def execute(self, sql: str, params: Params = ..., /) -> object: ...

    def executemany(self, sql: str, params: Iterable[Params], /) -> object: ...

    def fetchone(self) -> Row | None: ...

    def fetchall(self) -> list[Row]: ...

    @property
    def rowcount(self) -> int: ...


V1 = (
    """CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        transcript_id TEXT NOT NULL DEFAULT '',
        conversation TEXT NOT NULL DEFAULT '',
        revision BIGINT NOT NULL DEFAULT 0,
        length BIGINT NOT NULL DEFAULT 0,
        created_at DOUBLE PRECISION,
        updated_at DOUBLE PRECISION,
        last_request_at DOUBLE PRECISION,
        model TEXT NOT NULL DEFAULT '',
        tools_fingerprint TEXT NOT NULL DEFAULT '',
        parent TEXT NOT NULL DEFAULT '',
        provider TEXT NOT NULL DEFAULT '',
        cache_ttl TEXT NOT NULL DEFAULT '',
        lease_token TEXT,
        lease_holder TEXT NOT NULL DEFAULT '',
        lease_expires DOUBLE PRECISION
    )""",
    """CREATE TABLE messages (
        session TEXT NOT NULL REFERENCES sessions (id),
        position BIGINT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (session, position)
    )""",
    """CREATE TABLE archive (
        session TEXT NOT NULL REFERENCES sessions (id),
        revision BIGINT NOT NULL,
        position BIGINT NOT NULL,
        body TEXT NOT NULL,
        archived_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (session, revision, position)
    )""",
    """CREATE TABLE rewrites (
        session TEXT NOT NULL REFERENCES sessions (id),
        revision BIGINT NOT NULL,
        kind TEXT NOT NULL,
        span_start BIGINT NOT NULL,
        span_end BIGINT NOT NULL,
        replaced BIGINT NOT NULL,
        at DOUBLE PRECISION NOT NULL,
        length BIGINT NOT NULL,
        PRIMARY KEY (session, revision)
    )""",
    """CREATE TABLE requests (
        session TEXT NOT NULL REFERENCES sessions (id),
        seq BIGINT NOT NULL,
        position BIGINT NOT NULL,
        sent_at DOUBLE PRECISION NOT NULL,
        seconds DOUBLE PRECISION NOT NULL,
        input_tokens BIGINT NOT NULL,
        cache_read_tokens BIGINT NOT NULL,
        cache_write_tokens BIGINT NOT NULL,
        cache_write_1h_tokens BIGINT NOT NULL,
        output_tokens BIGINT NOT NULL,
        PRIMARY KEY (session, seq)
    )""",
)

V2 = (
    # A window the provider named when it rejected a prompt: a learned fact of the session.
    "ALTER TABLE sessions ADD COLUMN context_window BIGINT",
)

V3 = (
    # The window the user stated for the session's model, used again when a resume states none.
    "ALTER TABLE sessions ADD COLUMN told_window BIGINT",
)

V4 = (
    # What the session's runs learned of its model's cache from the wire (issue 36): the least
    # prompt it cached, and how many returns inside the TTL found the cache or not.
    "ALTER TABLE sessions ADD COLUMN cache_minimum BIGINT",
    "ALTER TABLE sessions ADD COLUMN cache_survived BIGINT NOT NULL DEFAULT 0",
    "ALTER TABLE sessions ADD COLUMN cache_evicted BIGINT NOT NULL DEFAULT 0",
)

MIGRATIONS: tuple[Sequence[str], ...] = (V1, V2, V3, V4)
"""Step k brings the schema from version k to k + 1; append new steps, never edit one."""


SCHEMA_TABLE = "warmloop_schema"
"""The table holding the schema version: a database without it is no warmloop store."""


def stored_version(cursor: Cursor) -> int:
    """The version in an existing `warmloop_schema` (0 when it holds no row); a damaged
    one is a SessionError."""
    cursor.execute(f"SELECT version FROM {SCHEMA_TABLE}")
    row = cursor.fetchone()
    if row is None:
        return 0
    if isinstance(row[0], bool) or not isinstance(row[0], int):
        raise SessionError(
            f"the session store's {SCHEMA_TABLE}.version holds {str(row[0])[:40]!r}, not a "
            "version; the store was damaged or edited by hand"
        )
    return row[0]


def current_version(cursor: Cursor) -> int:
    """The stored schema version (0 for an empty database, whose version table it creates)."""
    cursor.execute(f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} (version BIGINT NOT NULL)")
    return stored_version(cursor)


def refuse_newer(version: int, migrations: Sequence[Sequence[str]] = MIGRATIONS) -> None:
    """A SessionError when `version` is newer than `migrations` know (upgrade warmloop)."""
    if version > len(migrations):
        raise SessionError(
            f"the session store has schema version {version}, newer than this warmloop "
            f"knows ({len(migrations)}); upgrade warmloop to use it"
        )


def migrate(cursor: Cursor, migrations: Sequence[Sequence[str]] = MIGRATIONS) -> int:
    """Apply every missing step inside the caller's transaction; returns the new version.
    A database newer than `migrations` is a SessionError (upgrade warmloop)."""
    version = current_version(cursor)
    refuse_newer(version, migrations)
    for step in migrations[version:]:
        for statement in step:
            cursor.execute(statement)
    if version == 0:
        cursor.execute("INSERT INTO warmloop_schema (version) VALUES (?)", (len(migrations),))
    elif version < len(migrations):
        cursor.execute("UPDATE warmloop_schema SET version = ?", (len(migrations),))
    return len(migrations)
