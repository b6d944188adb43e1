"""The fleet's database refuses a stored value marked as a pickle.

DBOS (3.4.0) reads a stored value by its row's `serialization` column, and a row that says
`py_pickle` is unpickled (`_serialization.deserialize_args`): by a worker as it dequeues a
task (`_core.execute_dequeued_workflow`), before any warmloop code runs. So whoever may write
a row of the fleet's database could run code on every worker. The fleet stores portable JSON
only (`stored.SERIALIZER`), so the database refuses anything else: a CHECK constraint on each
DBOS table with a `serialization` column admits only the fleet's format or NULL (read with
the fleet's serializer, as JSON). `workflow_input` and `workflow_output` have no such column:
their values are read as their `workflow_status` row says, so they are covered by it.

The limit: a constraint binds the roles that may INSERT and UPDATE the tables, not their
owner, who can drop it (as can a superuser). It defends against a writer with row rights
only: migrate the fleet's database as the owner, granting a second role its rows
(`DBOS.migrate(url, application_role=ROLE)`, then one `warmloop batch status` or worker as
the owner to add these constraints), and run workers and submitters as ROLE. Rows stored
before the constraints existed (an earlier warmloop stored pickles) are not checked, and
such a row cannot be updated any more: finish those tasks with the version that wrote them.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from warmloop.errors import ConfigurationError
from warmloop.fleet.stored import FORMAT

CONSTRAINT = "warmloop_json_only"
SCHEMA = "dbos"
TABLES = (
    "workflow_status",
    "operation_outputs",
    "notifications",
    "workflow_events",
    "workflow_events_history",
    "streams",
)
"""DBOS's tables whose rows name how their values are serialized."""
_LOCK = 0x77A2_6D11  # an advisory lock key: fleet processes starting together add them once
_MISSING = (
    "SELECT t.relname FROM pg_class t JOIN pg_namespace n ON n.oid = t.relnamespace"
    " WHERE n.nspname = %s AND t.relname = ANY(%s) AND NOT EXISTS ("
    " SELECT 1 FROM pg_constraint c WHERE c.conrelid = t.oid AND c.conname = %s)"
)


def require_json(url: str) -> None:
    """Add the constraints to the DBOS tables of the database `url` that lack them (once:
    a database that has them is only read). Raises psycopg's errors when it fails."""
    with psycopg.connect(url) as db, db.transaction():
        if not db.execute(_MISSING, (SCHEMA, list(TABLES), CONSTRAINT)).fetchall():
            return
        db.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
        for (table,) in db.execute(_MISSING, (SCHEMA, list(TABLES), CONSTRAINT)).fetchall():
            statement = sql.SQL(
                "ALTER TABLE {} ADD CONSTRAINT {}"
                " CHECK (serialization IS NULL OR serialization = {}) NOT VALID"
            ).format(sql.Identifier(SCHEMA, table), sql.Identifier(CONSTRAINT), FORMAT)
            try:
                db.execute(statement)
            except psycopg.errors.InsufficientPrivilege as exc:
                raise ConfigurationError(
                    f"the fleet's table {SCHEMA}.{table} lacks the constraint that refuses "
                    f"pickled rows, and this role cannot add it ({exc}); start one worker "
                    "or `warmloop batch status` as the owner of DBOS's tables first"
                ) from None
