"""The fleet's database away: which errors say so, and how they are told.

A fleet's PostgreSQL restarts, fails over or drops a connection now and then. To a command
(`batch submit`, `batch status`, `worker`) that is a one-line error naming the database
without its credentials; to a task it is a blip (`is_blip`), tried again rather than the
end of the task.
"""

from __future__ import annotations

import psycopg
import psycopg_pool
import sqlalchemy.exc

from warmloop.errors import FleetUnavailable
from warmloop.providers.redact import redact_url, scrub, url_secrets

DATABASE_ERRORS: tuple[type[BaseException], ...] = (
    psycopg.Error,
    psycopg_pool.PoolTimeout,
    sqlalchemy.exc.SQLAlchemyError,
)
"""What DBOS (SQLAlchemy over psycopg), the limiter and the session store raise when the
database fails."""
_BLIPS: tuple[type[BaseException], ...] = (
    psycopg.OperationalError,  # refused, lost, AdminShutdown (a restart), ...
    psycopg_pool.PoolTimeout,  # no connection came back while it was down
    sqlalchemy.exc.OperationalError,
    sqlalchemy.exc.InterfaceError,
)


def is_blip(exc: BaseException) -> bool:
    """Whether `exc`, or an error it was raised from (a SessionError wraps psycopg's), says
    the database was away: a connection refused, lost or shut down by an administrator."""
    seen: set[int] = set()
    found: BaseException | None = exc
    while found is not None and id(found) not in seen:
        if isinstance(found, _BLIPS):
            return True
        if isinstance(found, sqlalchemy.exc.DBAPIError) and found.connection_invalidated:
            return True
        seen.add(id(found))
        found = found.__cause__ or found.__context__
    return False


def unreachable(url: str, exc: BaseException) -> FleetUnavailable:
    """The one-line error for a database that failed a command, its credentials hidden."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    reason = scrub(first, url_secrets(url))
    return FleetUnavailable(
        f"the fleet's database {redact_url(url)} cannot be reached ({reason}); "
        "check that PostgreSQL runs and the URL is right"
    )
