"""Rate limits shared by every worker of a fleet, kept in the fleet's PostgreSQL database.

Each provider key has a row in `warmloop_limits.keys` (its pause: until when a provider's
429 asked everyone to wait) and one row per request sent in `warmloop_limits.sent` (when,
and its tokens). Taking room for a request locks the key's row (`SELECT ... FOR UPDATE`),
so workers on every machine take turns: each reads the requests of the last window, and
either records its own (`window.wait_seconds` says it fits) or sleeps for as long as that
says and tries again. A request's tokens are estimated from its rendered prompt before it
is sent and corrected with its usage after.

Why not pyrate-limiter (4.5.1, read and tried against this database): its PostgreSQL
bucket counts requests across processes, but it keeps a weighted item as one row per unit
(a 6,000-token request inserts 6,000 rows) in a `SMALLINT` weight column, so a request of
more than 32,767 tokens fails with "smallint out of range"; an item cannot be corrected
once put (the estimate stands, where this limiter corrects it with the usage); nothing
pauses a key until a time for every worker (a 429's wait); and under contention its
`LOCK ... NOWAIT` refuses rather than waits. Moving only the request count onto it would
keep the token count, the correction and the pause here, over a second table and lock.

Times are the workers' clocks (`clock`, the epoch's seconds): machines of one fleet keep
their clocks in step (NTP), as they must for DBOS's own limiter. Tests inject `clock` and
`sleep`.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from warmloop.errors import ConfigurationError
from warmloop.fleet.outage import unreachable
from warmloop.fleet.window import WINDOW, KeyUse, Limit, bounded_pause, wait_seconds
from warmloop.sessions.off_loop import off_loop

try:
    import psycopg
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ConfigurationError(
        "fleet rate limits need psycopg: pip install 'warmloop[fleet]'"
    ) from exc
if TYPE_CHECKING:
    from psycopg.rows import TupleRow

SCHEMA_LOCK = 0x77A2_6D21
"""An advisory lock key: workers starting together create the tables one at a time."""
SCHEMA = (
    "CREATE SCHEMA IF NOT EXISTS warmloop_limits",
    "CREATE TABLE IF NOT EXISTS warmloop_limits.keys ("
    " key text PRIMARY KEY, paused_until double precision NOT NULL DEFAULT 0)",
    "CREATE TABLE IF NOT EXISTS warmloop_limits.sent ("
    " id bigserial PRIMARY KEY, key text NOT NULL, at double precision NOT NULL,"
    " tokens bigint NOT NULL)",
    "CREATE INDEX IF NOT EXISTS sent_key_at ON warmloop_limits.sent (key, at)",
)

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


class SharedLimiter:
    """Room for requests under a `Limit`, per provider key, across every worker on the
    database `url`. Thread-safe (one connection, one transaction at a time)."""

    def __init__(self, url: str, *, clock: Clock = time.time, sleep: Sleep = asyncio.sleep) -> None:
        self.clock, self.sleep = clock, sleep
        self._url = url
        self._lock = threading.Lock()
        try:
            self._db: psycopg.Connection[TupleRow] = psycopg.connect(url)
        except psycopg.Error as exc:
            raise unreachable(url, exc) from exc
        with self._lock, self._db.transaction():
            self._db.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            for statement in SCHEMA:
                self._db.execute(statement)

    def _connection(self) -> psycopg.Connection[TupleRow]:
        """The connection, opened again if the database dropped it (a restart, a failover):
        the call that met the drop raised, and DBOS tries the task's step again."""
        if self._db.broken:
            self._db.close()
            self._db = psycopg.connect(self._url)
        return self._db

    def close(self) -> None:
        self._db.close()

    def _try(self, key: str, limit: Limit, tokens: int) -> tuple[int | None, float]:
        """One turn: (the id of the request's row, 0) when it fits now, else (None, the
        seconds to wait)."""
        now = self.clock()
        with self._lock, self._connection().transaction():
            db = self._db
            db.execute(
                "INSERT INTO warmloop_limits.keys (key) VALUES (%s) ON CONFLICT DO NOTHING",
                (key,),
            )
            row = db.execute(
                "SELECT paused_until FROM warmloop_limits.keys WHERE key = %s FOR UPDATE", (key,)
            ).fetchone()
            paused_until = float(row[0]) if row else 0.0
            db.execute(
                "DELETE FROM warmloop_limits.sent WHERE key = %s AND at <= %s",
                (key, now - WINDOW),
            )
            sent = [
                KeyUse(float(at), int(count))
                for at, count in db.execute(
                    "SELECT at, tokens FROM warmloop_limits.sent WHERE key = %s", (key,)
                )
            ]
            wait = wait_seconds(sent, now, limit, tokens, paused_until)
            if wait > 0:
                return None, wait
            found = db.execute(
                "INSERT INTO warmloop_limits.sent (key, at, tokens) VALUES (%s, %s, %s)"
                " RETURNING id",
                (key, now, tokens),
            ).fetchone()
            assert found is not None
            return int(found[0]), 0.0

    async def acquire(self, key: str, limit: Limit, tokens: int) -> int:
        """Wait until a request of `tokens` fits under `limit` for `key`, and count it; the
        id of its record (for `settle`)."""
        while True:
            sent, wait = await off_loop(self._try, key, limit, tokens)
            if sent is not None:
                return sent
            await self.sleep(wait)

    def _settle(self, sent: int, tokens: int) -> None:
        with self._lock, self._connection().transaction():
            self._db.execute(
                "UPDATE warmloop_limits.sent SET tokens = %s WHERE id = %s", (tokens, sent)
            )

    async def settle(self, sent: int, tokens: int) -> None:
        """Correct a counted request's tokens with what its usage says it took."""
        await off_loop(self._settle, sent, tokens)

    def _pause(self, key: str, until: float) -> None:
        with self._lock, self._connection().transaction():
            self._db.execute(
                "INSERT INTO warmloop_limits.keys (key, paused_until) VALUES (%s, %s)"
                " ON CONFLICT (key) DO UPDATE SET paused_until = GREATEST("
                # a NaN or infinite pause (an earlier warmloop stored hints unchecked) is
                # none: GREATEST keeps NaN, which PostgreSQL orders above every number
                " CASE WHEN warmloop_limits.keys.paused_until IN ('NaN', 'Infinity') THEN 0"
                " ELSE warmloop_limits.keys.paused_until END, EXCLUDED.paused_until)",
                (key, until),
            )

    async def pause(self, key: str, seconds: float) -> None:
        """Hold every worker's requests for `key` back `seconds` from now (a provider's
        429 hint, bounded by `window.bounded_pause`); a longer pause already set stays."""
        await off_loop(self._pause, key, self.clock() + bounded_pause(seconds))
