"""The rows a store keeps beside a session's messages (its requests, archived originals and
rewrite points) as a store reads them back: each column checked against the type the schema
declares before it is used, so a store damaged or edited by hand (SQLite keeps text in an
integer column, or bytes anywhere) is a SessionError naming the table and column, not a
traceback later. Shared by both SQL stores."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from warmloop.errors import SessionError, TranscriptError
from warmloop.facts.usage import Usage
from warmloop.messages import Message
from warmloop.sessions.ledger import ArchivedMessage, RewritePoint, StoredRequest
from warmloop.sessions.migrations import Row
from warmloop.transcript_file import message_from_json

Kind = Literal["integer", "time", "text"]

REQUEST_COLUMNS: tuple[tuple[str, Kind], ...] = (
    ("position", "integer"),
    ("sent_at", "time"),
    ("seconds", "time"),
    ("input_tokens", "integer"),
    ("cache_read_tokens", "integer"),
    ("cache_write_tokens", "integer"),
    ("output_tokens", "integer"),
    ("cache_write_1h_tokens", "integer"),
)
"""The columns `requests` reads, in its SELECT's order. `input_tokens` holds the uncached
part of the prompt (what `Usage.input_tokens` meant before issue 45): rows written before
and after read the same."""
ARCHIVE_COLUMNS: tuple[tuple[str, Kind], ...] = (
    ("revision", "integer"),
    ("position", "integer"),
    ("body", "text"),
    ("archived_at", "time"),
)
REWRITE_COLUMNS: tuple[tuple[str, Kind], ...] = (
    ("revision", "integer"),
    ("kind", "text"),
    ("span_start", "integer"),
    ("span_end", "integer"),
    ("replaced", "integer"),
    ("at", "time"),
    ("length", "integer"),
)
REWRITE_KINDS = frozenset({"replace", "fold"})


def damaged(session_id: str, table: str, column: str, value: object) -> SessionError:
    """The error for a value the store never writes there."""
    shown = repr(value)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    return SessionError(
        f"session {session_id!r}: {table}.{column} holds {shown}, which is not what the store "
        "writes there; the store was damaged or edited by hand (fix or delete that row)"
    )


def _fits(value: object, kind: Kind) -> bool:
    if kind == "text":
        return isinstance(value, str)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if kind == "integer":
        return isinstance(value, int)
    return math.isfinite(value)


def checked(session_id: str, table: str, row: Row, columns: Sequence[tuple[str, Kind]]) -> Row:
    """`row` when each column holds its kind (integers, finite times, text), else the
    SessionError naming the first that does not."""
    for value, (column, kind) in zip(row, columns, strict=True):
        if not _fits(value, kind):
            raise damaged(session_id, table, column, value)
    return row


def lease_row(session_id: str, row: Row) -> tuple[str | None, str | None, float, int, int]:
    """A session's lease columns as `acquire` reads them (token, holder, expiry, length,
    revision), each of the kind the store writes (a held lease with its expiry time); else
    the SessionError naming the first that is not, never a TypeError mid-comparison."""
    token, holder, until, length, revision = row
    for column, value in (("lease_token", token), ("lease_holder", holder)):
        if value is not None and not isinstance(value, str):
            raise damaged(session_id, "sessions", column, value)
    if token is not None and holder is None:  # a lease is always taken by someone
        raise damaged(session_id, "sessions", "lease_holder", holder)
    if until is None and token is None:
        until = 0.0  # never leased
    if not _fits(until, "time"):
        raise damaged(session_id, "sessions", "lease_expires", until)
    for column, value in (("length", length), ("revision", revision)):
        if not _fits(value, "integer"):
            raise damaged(session_id, "sessions", column, value)
    return token, holder, float(until), int(length), int(revision)


def _message(session_id: str, table: str, body: str) -> Message:
    try:
        return message_from_json(body)
    except (TranscriptError, ValueError, TypeError, RecursionError) as exc:
        raise SessionError(
            f"session {session_id!r}: a {table} row holds no readable message ({exc}); the "
            "store was damaged or edited by hand (fix or delete that row)"
        ) from exc


def request_record(session_id: str, row: Row) -> StoredRequest:
    """A `requests` row (REQUEST_COLUMNS) as a StoredRequest."""
    r = checked(session_id, "requests", row, REQUEST_COLUMNS)
    # input_tokens holds the uncached part, as it always has: the prompt is the three parts
    usage = Usage.of_parts(r[3], r[4], r[5], r[6], cache_write_1h_tokens=r[7])
    return StoredRequest(r[0], float(r[1]), float(r[2]), usage)


def archive_record(session_id: str, row: Row) -> ArchivedMessage:
    """An `archive` row (ARCHIVE_COLUMNS) as an ArchivedMessage."""
    r = checked(session_id, "archive", row, ARCHIVE_COLUMNS)
    return ArchivedMessage(r[0], r[1], _message(session_id, "archive", r[2]), float(r[3]))


def rewrite_record(session_id: str, row: Row) -> RewritePoint:
    """A `rewrites` row (REWRITE_COLUMNS) as a RewritePoint."""
    r = checked(session_id, "rewrites", row, REWRITE_COLUMNS)
    if r[1] not in REWRITE_KINDS:
        raise damaged(session_id, "rewrites", "kind", r[1])
    return RewritePoint(r[0], r[1], r[2], r[3], r[4], float(r[5]), r[6])


def message_rows(session_id: str, rows: Sequence[Row], length: int) -> list[str]:
    """The bodies of a session's `messages` rows (position, body), which must be exactly
    positions 0 to `length` - 1 in order; SessionError otherwise (compared row by row: a
    damaged length of 10^18 is never counted up to)."""
    if len(rows) != length:
        raise SessionError(
            f"session {session_id!r} is damaged: {len(rows)} message rows for {length} "
            "messages (fix the session's length or delete the session)"
        )
    bodies: list[str] = []
    for expected, row in enumerate(rows):
        position, body = checked(
            session_id, "messages", row, (("position", "integer"), ("body", "text"))
        )
        if position != expected:
            raise SessionError(
                f"session {session_id!r} is damaged: message row {position} where row "
                f"{expected} belongs (fix or delete that row)"
            )
        bodies.append(body)
    return bodies
