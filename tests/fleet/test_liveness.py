"""Which workers are alive, by the database's clock: a worker is dead once it missed
MISSED_BEATS heartbeats (or said it left); one live worker at a time claims a dead one's
tasks, and a claimer that dies itself loses the claim to the next. And the bound on a
take-up follows from the periods."""

from __future__ import annotations

import math
import time

import psycopg
import pytest

from warmloop.errors import ConfigurationError
from warmloop.fleet.liveness import MISSED_BEATS, Liveness, Periods

GIVE_UP = 60.0  # only a bound on a broken run


def dead(liveness: Liveness, name: str) -> None:
    """Wait, on the database, until `name` missed its beats."""
    deadline = time.monotonic() + GIVE_UP
    while liveness.alive(name):
        assert time.monotonic() < deadline, f"{name} stayed alive"
        time.sleep(0.05)


def test_one_live_worker_claims_a_dead_one_and_loses_the_claim_when_it_dies(
    fleet_db: str,
) -> None:
    liveness = Liveness(fleet_db)
    try:
        liveness.register("gone", 0.1)
        for name in ("a", "b"):
            liveness.register(name, 600.0)
        assert liveness.alive("gone") is True
        assert liveness.alive("never") is None
        dead(liveness, "gone")
        assert liveness.claim("a") == ["gone"]
        assert liveness.claim("b") == []  # a lives: its claim stands
        assert liveness.claim("a") == ["gone"]  # a keeps its own claim
        liveness.leave("a")  # a died too (said at once)
        assert liveness.claim("b") == ["a", "gone"]
        states = {w.name: w for w in liveness.workers()}
        assert [n for n, w in sorted(states.items()) if w.alive] == ["b"]
        assert states["gone"].taken_by == "b"
        liveness.register("gone", 600.0)  # restarted under its name: its own again
        assert liveness.alive("gone") is True
        assert {w.name: w.taken_by for w in liveness.workers()}["gone"] is None
    finally:
        liveness.close()


def test_the_bound_follows_from_the_heartbeat_and_the_lease() -> None:
    assert Periods(1.0, 120.0).bound == 121.0  # the lease outlasts 3 missed beats
    assert Periods(60.0, 30.0).bound == 60.0 * MISSED_BEATS + 60.0
    for bad in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ConfigurationError, match="positive number of seconds"):
            Periods(heartbeat=bad)
        with pytest.raises(ConfigurationError, match="positive number of seconds"):
            Periods(lease=bad)


def test_a_worker_keeps_beating_after_the_database_cut_its_connection(fleet_db: str) -> None:
    liveness = Liveness(fleet_db)
    try:
        liveness.register("w", 600.0)
        with psycopg.connect(fleet_db, autocommit=True) as admin:  # as a restart would
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        with pytest.raises(psycopg.OperationalError):
            liveness.beat("w")  # this beat is lost (the worker logs it)...
        liveness.beat("w")  # ...the next one goes through on a new connection
        assert liveness.alive("w") is True
    finally:
        liveness.close()
