"""A task's stored input, output and error read as JSON, never unpickled.

DBOS keeps a workflow's input and output in the fleet's database, serialized by whichever
serializer the row's `serialization` column names, and its readers obey that column: a row
that says `py_pickle` is unpickled, whatever serializer the reader was given (dbos 3.4.0,
`_serialization.deserialize_args`). So whoever can write a row of the fleet's database would
run code on every machine that reads the batch. The fleet writes portable JSON (`SERIALIZER`,
given to DBOS by workers and submitters alike), and `batch status` reads the rows here,
with SQL and `json.loads`: a row in any other format is reported as unreadable, not run.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import psycopg
from dbos import DBOSPortableJSONSerializer
from psycopg.rows import TupleRow

from warmloop.messages import JsonData

SERIALIZER = DBOSPortableJSONSerializer()
"""How the fleet's workflows store their input, output and errors (plain JSON)."""
FORMAT = SERIALIZER.name()
MAX_ROW_CHARS = 64 * 2**20
"""The longest stored value read; a task and its result are far below it."""
_QUERY = (
    "SELECT s.workflow_uuid, s.serialization, COALESCE(i.inputs, s.inputs),"
    " COALESCE(o.output, s.output), COALESCE(o.error, s.error)"
    " FROM dbos.workflow_status s"
    " LEFT JOIN dbos.workflow_input i ON i.workflow_uuid = s.workflow_uuid"
    " LEFT JOIN dbos.workflow_output o ON o.workflow_uuid = s.workflow_uuid"
    " WHERE s.workflow_uuid = ANY(%s)"
)


@dataclass(frozen=True)
class Stored:
    """One workflow's stored values as JSON (None where absent), or why they are not."""

    task: JsonData = None
    output: JsonData = None
    error: str = ""
    unreadable: str = ""


def _json(text: str | None, what: str) -> JsonData:
    if text is None:
        return None
    if len(text) > MAX_ROW_CHARS:
        raise ValueError(f"its {what} is over {MAX_ROW_CHARS:,} characters")
    try:
        value: JsonData = json.loads(text)
    except RecursionError:
        raise ValueError(f"its {what} is nested too deeply") from None
    return value


def _read(row: TupleRow) -> Stored:
    _, serialization, inputs, output, error = row
    if serialization != FORMAT:
        return Stored(
            unreadable=f"stored as {serialization!r}, not the fleet's {FORMAT!r}; "
            "not read (a row the fleet did not write could run code if unpickled)"
        )
    try:
        args = _json(inputs, "input")
        positional = args.get("positionalArgs") if isinstance(args, dict) else None
        task = positional[0] if isinstance(positional, list) and positional else None
        failed = _json(error, "error")
        message = failed.get("message") if isinstance(failed, dict) else failed
        return Stored(task, _json(output, "output"), "" if message is None else str(message))
    except ValueError as exc:
        return Stored(unreadable=f"not readable as JSON: {exc}")


def read_stored(db: psycopg.Connection[TupleRow], workflow_ids: Sequence[str]) -> dict[str, Stored]:
    """The stored values of `workflow_ids` (those that exist), by id."""
    rows = db.execute(_QUERY, (list(workflow_ids),)).fetchall()
    return {str(row[0]): _read(row) for row in rows}
