"""The session row as a store writes it after each step (`write_session_row`) and reads it
back: the SELECT (the session's columns with its request totals) and its decoding into a
`SessionInfo`, each column checked against the type the schema declares, so a store damaged
or edited by hand is a clear error, not a crash later. Shared by both SQL stores."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

from warmloop.errors import SessionError
from warmloop.facts.model_names import split_model_name
from warmloop.facts.usage import Usage
from warmloop.messages import Meta
from warmloop.sessions.lease import Lease
from warmloop.sessions.migrations import Cursor, Row
from warmloop.sessions.session import SessionInfo
from warmloop.transcript import Transcript

SESSION_ROW = (
    "s.id, s.transcript_id, s.conversation, s.revision, s.length, s.created_at, s.updated_at,"
    " s.last_request_at, s.model, s.tools_fingerprint, s.parent, s.provider, s.cache_ttl,"
    " s.lease_holder, s.lease_expires, s.lease_token,"
    " COALESCE(r.n, 0), COALESCE(r.i, 0), COALESCE(r.cr, 0), COALESCE(r.cw, 0),"
    " COALESCE(r.o, 0), COALESCE(r.cw1, 0), s.context_window, s.told_window,"
    " s.cache_minimum, s.cache_survived, s.cache_evicted"
    " FROM sessions s LEFT JOIN (SELECT session, COUNT(*) AS n, SUM(input_tokens) AS i,"
    " SUM(cache_read_tokens) AS cr, SUM(cache_write_tokens) AS cw, SUM(output_tokens) AS o,"
    " SUM(cache_write_1h_tokens) AS cw1 FROM requests GROUP BY session) r"
    " ON r.session = s.id"
)
"""What follows `SELECT` to read session rows (add a WHERE or ORDER BY): `session_info`
decodes each, by position."""


_COLUMNS = (
    *("id", "transcript_id", "conversation", "revision", "length", "created_at", "updated_at"),
    *("last_request_at", "model", "tools_fingerprint", "parent", "provider", "cache_ttl"),
    *("lease_holder", "lease_expires", "lease_token", "requests", "input_tokens"),
    *("cache_read_tokens", "cache_write_tokens", "output_tokens", "cache_write_1h_tokens"),
    "context_window",
    "told_window",
    *("cache_minimum", "cache_survived", "cache_evicted"),
)
_INTEGERS = frozenset({3, 4, 16, 17, 18, 19, 20, 21, 25, 26})
_TIMES = frozenset({5, 6, 7, 14})
_TEXTS = frozenset({0, 1, 2, 8, 9, 10, 11, 12, 13})


def _checked(row: Row) -> Row:
    """The row `SESSION_ROW` reads, each column of the type the schema declares; a store edited by
    hand (SQLite keeps text in an integer column) is a SessionError naming the column."""
    for index, value in enumerate(row):
        if index in _INTEGERS:  # PostgreSQL's SUM of BIGINT is NUMERIC: a whole Decimal
            whole = isinstance(value, Decimal) and value == value.to_integral_value()
            ok = (isinstance(value, int) and not isinstance(value, bool)) or whole
        elif index in _TIMES:
            ok = value is None or (isinstance(value, int | float) and not isinstance(value, bool))
        elif index in _TEXTS:
            ok = isinstance(value, str) or (index == 13 and value is None)
        else:
            ok = True
        if not ok:
            raise SessionError(
                f"session {row[0]!r}: {_COLUMNS[index]} holds {value!r}, which is not what "
                "the store writes there; the store was damaged or edited by hand (fix or delete "
                "that row)"
            )
    return row


def session_info(row: Row, now: float) -> SessionInfo:
    """The session a `SESSION_ROW` row describes, its lease shown only while live at
    `now`; SessionError naming the column if the row is damaged."""
    row = _checked(row)
    window, told, least = (
        value if isinstance(value, int) and value > 0 else None for value in (*row[22:24], row[24])
    )
    survived, evicted = (max(0, int(value)) for value in row[25:27])
    meta = Meta(
        row[5], row[6], row[7], row[8], row[9], row[10], window, told, least, survived, evicted
    )
    # the column holds the uncached part (schema 1 on): a prompt is its three parts
    uncached, read, written, output, written_1h = (int(v) for v in row[17:22])
    usage = Usage.of_parts(uncached, read, written, output, cache_write_1h_tokens=written_1h)
    live = row[15] is not None and row[14] is not None and row[14] > now
    return SessionInfo(
        row[0],
        row[1],
        row[2],
        int(row[3]),
        int(row[4]),
        meta,
        row[11],
        row[12],
        int(row[16]),
        usage,
        row[13] if live else "",
        row[14] if live else None,
    )


def write_session_row(
    cur: Cursor,
    lease: Lease,
    transcript: Transcript,
    clock: Callable[[], float],
    expires: float,
    cache_ttl: str,
    *,
    held: bool = False,
) -> bool:
    """Write the session row after a step or rewrite (`clock`: the time, when the
    transcript has no `updated_at`). `held`: only if the row is still what the lease expects
    (the lease's token, length and revision, this transcript or none), in the same
    statement (`SqlStore._hold` reads it to say why when not); returns whether the row was
    written."""
    meta = transcript.meta
    check = (
        " AND lease_token = ? AND length = ? AND revision = ?"
        " AND (transcript_id IS NULL OR transcript_id = '' OR transcript_id = ?)"
    )
    cur.execute(
        "UPDATE sessions SET transcript_id = ?, conversation = ?, revision = ?, length = ?,"
        " created_at = COALESCE(?, created_at), updated_at = ?, last_request_at = ?,"
        " model = ?, tools_fingerprint = ?, parent = ?, provider = ?,"
        " cache_ttl = CASE WHEN ? = '' THEN cache_ttl ELSE ? END, lease_expires = ?,"
        " context_window = COALESCE(?, context_window), told_window = ?,"
        " cache_minimum = ?, cache_survived = ?, cache_evicted = ?"
        " WHERE id = ?" + (check if held else ""),
        (
            transcript.id,
            transcript.conversation,
            transcript.revision,
            len(transcript),
            meta.created_at,
            meta.updated_at or clock(),
            meta.last_request_at,
            meta.model,
            meta.tools_fingerprint,
            meta.parent,
            split_model_name(meta.model)[0],
            cache_ttl,
            cache_ttl,
            expires,
            meta.context_window,
            meta.told_window,
            meta.cache_minimum,
            meta.cache_survived,
            meta.cache_evicted,
            lease.session_id,
            *((lease.token, lease.length, lease.revision, transcript.id) if held else ()),
        ),
    )
    return bool(cur.rowcount == 1)
