"""Which workers of a fleet are alive: each registers and beats in a table of the fleet's
own (`warmloop_fleet.workers`, plain columns: nothing in it is ever deserialized), by the
database's clock, so machines whose clocks differ agree.

A worker beats every `heartbeat` seconds and is dead once MISSED_BEATS periods pass without
a beat (a worker slowed by a loaded machine or a database blip misses one or two and stays
alive). A worker that stops on a signal says so at once (`leave`). The table also records
which live worker has claimed a dead one's tasks (`claim`), so two live workers never take
the same tasks over; a claimer that dies itself loses its claim to the next.
"""

from __future__ import annotations

import math
import os
import socket
from dataclasses import dataclass
from typing import Any

import psycopg

from warmloop.errors import ConfigurationError
from warmloop.sessions.lease import LEASE_SECONDS

HEARTBEAT_SECONDS = 5.0
"""How often a worker beats (and looks for dead workers' tasks), by default."""
MISSED_BEATS = 3
"""Periods without a beat after which a worker is dead."""
_SCHEMA = (
    "CREATE SCHEMA IF NOT EXISTS warmloop_fleet;"
    " CREATE TABLE IF NOT EXISTS warmloop_fleet.workers ("
    " name TEXT PRIMARY KEY, host TEXT NOT NULL, pid INTEGER NOT NULL,"
    " heartbeat_seconds DOUBLE PRECISION NOT NULL,"
    " started_at TIMESTAMPTZ NOT NULL, beat_at TIMESTAMPTZ NOT NULL,"
    " taken_by TEXT, taken_at TIMESTAMPTZ)"
)
_LOCK = 0x77A2_6D12  # an advisory lock key: workers starting together create the table once


def _alive(row: str) -> str:
    """SQL: the worker of the workers row `row` (an alias) is alive."""
    return (
        f"{row}.beat_at > now() - make_interval(secs => {row}.heartbeat_seconds * {MISSED_BEATS})"
    )


@dataclass(frozen=True)
class Periods:
    """A fleet's timing: how often workers beat, and how long a session lease lives.

    A task of a worker killed at time 0 is taken up by a live worker by `bound` seconds:
    its worker is dead `dead_after` seconds after its last beat, its session's lease
    expires at most `lease` seconds after its last renewal (on the dead worker's own host
    at once: its process is gone), and live workers look every `heartbeat` seconds. Then a
    worker polling the queue starts it (`queues.POLL_SECONDS`).
    """

    heartbeat: float = HEARTBEAT_SECONDS
    lease: float = LEASE_SECONDS

    def __post_init__(self) -> None:
        for what, value in (("heartbeat", self.heartbeat), ("lease", self.lease)):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigurationError(f"the {what} period is a number of seconds: {value!r}")
            if not math.isfinite(value) or value <= 0:
                raise ConfigurationError(
                    f"the {what} period must be a positive number of seconds, got {value!r}"
                )

    @property
    def dead_after(self) -> float:
        """Seconds without a beat after which a worker is dead."""
        return self.heartbeat * MISSED_BEATS

    @property
    def bound(self) -> float:
        """Seconds from a worker's death until a live worker has taken its tasks up."""
        return max(self.dead_after, self.lease) + self.heartbeat


DEFAULT_PERIODS = Periods()


@dataclass(frozen=True)
class WorkerState:
    """One registered worker as the table says: alive or not, and when it last beat."""

    name: str
    host: str
    pid: int
    alive: bool
    seconds_since_beat: float
    heartbeat: float
    taken_by: str | None


class Liveness:
    """The workers table of the fleet's database `url` (created on first use; `create`
    False, by a command that only reads: never, and a fleet without it has no worker)."""

    def __init__(self, url: str, *, create: bool = True) -> None:
        self.url = url
        self._connection: psycopg.Connection[Any] = psycopg.connect(url, autocommit=True)
        if not create:
            return
        with self._connection.transaction():
            self._connection.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
            self._connection.execute(_SCHEMA)

    @property
    def _db(self) -> psycopg.Connection[Any]:
        """The connection, made again when a database restart cut it: a worker whose beats
        failed on a dead connection would look dead for good while it runs."""
        if self._connection.broken or self._connection.closed:
            self._connection = psycopg.connect(self.url, autocommit=True)
        return self._connection

    def close(self) -> None:
        self._connection.close()

    def register(self, name: str, heartbeat: float) -> None:
        """`name` is alive from now on (a restart under a dead worker's name revives it,
        and whoever had claimed its tasks lets them be: DBOS recovers them here)."""
        self._db.execute(
            "INSERT INTO warmloop_fleet.workers"
            " (name, host, pid, heartbeat_seconds, started_at, beat_at)"
            " VALUES (%s, %s, %s, %s, now(), now()) ON CONFLICT (name) DO UPDATE SET"
            " host = excluded.host, pid = excluded.pid,"
            " heartbeat_seconds = excluded.heartbeat_seconds, started_at = now(),"
            " beat_at = now(), taken_by = NULL, taken_at = NULL",
            (name, socket.gethostname(), os.getpid(), heartbeat),
        )

    def beat(self, name: str) -> None:
        self._db.execute(
            "UPDATE warmloop_fleet.workers SET beat_at = now() WHERE name = %s", (name,)
        )

    def leave(self, name: str) -> None:
        """`name` stopped: dead at once, its tasks free to take up when their leases lapse."""
        self._db.execute(
            "UPDATE warmloop_fleet.workers SET beat_at = 'epoch' WHERE name = %s", (name,)
        )

    def workers(self) -> list[WorkerState]:
        """Every registered worker, by name (none where no worker ever made the table)."""
        found = self._db.execute("SELECT to_regclass('warmloop_fleet.workers')").fetchone()
        if found is None or found[0] is None:
            return []
        rows = self._db.execute(
            f"SELECT w.name, w.host, w.pid, {_alive('w')}, EXTRACT(EPOCH FROM now() - w.beat_at),"
            " w.heartbeat_seconds, w.taken_by FROM warmloop_fleet.workers w ORDER BY w.name",
        ).fetchall()
        return [WorkerState(r[0], r[1], r[2], r[3], float(r[4]), r[5], r[6]) for r in rows]

    def alive(self, name: str) -> bool | None:
        """Whether `name` is alive (None: it never registered here)."""
        row = self._db.execute(
            f"SELECT {_alive('w')} FROM warmloop_fleet.workers w WHERE w.name = %s", (name,)
        ).fetchone()
        return None if row is None else bool(row[0])

    def claim(self, me: str) -> list[str]:
        """The dead workers whose tasks `me` now takes up: those no live worker has claimed
        (`me` keeps its own claims until their tasks are all taken up)."""
        rows = self._db.execute(
            "UPDATE warmloop_fleet.workers w SET taken_by = %s, taken_at = now()"
            f" WHERE w.name <> %s AND NOT ({_alive('w')}) AND (w.taken_by IS NULL"
            " OR w.taken_by = %s OR NOT EXISTS (SELECT 1 FROM warmloop_fleet.workers c"
            f" WHERE c.name = w.taken_by AND {_alive('c')}))"
            " RETURNING w.name",
            (me, me, me),
        ).fetchall()
        return sorted(r[0] for r in rows)
