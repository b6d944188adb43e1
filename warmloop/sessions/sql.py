"""The store logic both SQL stores share; each supplies connections, transactions and its
dialect (SQLite serialises writers with BEGIN IMMEDIATE, PostgreSQL locks the session row).

Every write is one transaction that begins by checking the lease (token, stored length and
revision) on the session row, so a write lands whole, once, and only from the holder.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager

from warmloop.errors import SessionBusy, SessionError, TranscriptError
from warmloop.messages import Rewrite
from warmloop.sessions.lease import Lease, holder_alive_here, holder_gone, holder_name, new_token
from warmloop.sessions.ledger import ArchivedMessage, RewritePoint, StoredRequest
from warmloop.sessions.migrations import Cursor, Params, Row
from warmloop.sessions.record_rows import (
    archive_record,
    lease_row,
    message_rows,
    request_record,
    rewrite_record,
)
from warmloop.sessions.session import SessionInfo, StoredSession, validate_session_id
from warmloop.sessions.session_row import SESSION_ROW, session_info, write_session_row
from warmloop.transcript import Transcript, check_pairing
from warmloop.transcript_file import dumps_message, messages_from_json


class SqlStore(ABC):
    """A session store over a SQL database (see `store.SessionStore` for the contract)."""

    location: str
    lock_row = ""
    """Appended to the SELECT that reads the session row inside a write (`FOR UPDATE`)."""

    def __init__(self, *, lease_seconds: float, clock: Callable[[], float]) -> None:
        self.lease_seconds = lease_seconds
        self.clock = clock
        self._let_go: dict[str, str] = {}
        """Lease tokens whose release failed (the database away), by session: their runs
        ended, so this store's next `acquire` of the session takes them back at once rather
        than waiting out its own lease."""

    @abstractmethod
    def transaction(self, *, write: bool, durable: bool = False) -> AbstractContextManager[Cursor]:
        """One transaction; its cursor takes `?` placeholders. Database errors leave it
        rolled back and surface as SessionError. `durable`: its commit, and every commit
        before it, survive a crash of the machine once it returns (the end of a run and
        rewrites); any other commit survives a crash of the process."""

    @abstractmethod
    def raw(self, sql: str, params: Params = ()) -> list[Row]:
        """Run one statement outside the contract, in its own transaction (for tests and
        repairs; the SQL is the backend's own)."""

    @abstractmethod
    def close(self) -> None:
        """Close the store's connections."""

    def acquire(self, session_id: str, *, seconds: float | None = None) -> Lease:
        validate_session_id(session_id)
        now, token, holder = self.clock(), new_token(), holder_name()
        expires = now + (self.lease_seconds if seconds is None else seconds)
        with self.transaction(write=True) as cur:
            cur.execute(
                "INSERT INTO sessions (id, created_at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING",
                (session_id, now),
            )
            cur.execute(
                "SELECT lease_token, lease_holder, lease_expires, length, revision"
                f" FROM sessions WHERE id = ?{self.lock_row}",
                (session_id,),
            )
            row = cur.fetchone()
            assert row is not None  # inserted above when it was not there
            held, other, until, length, revision = lease_row(session_id, row)
            ours = held is not None and held == self._let_go.get(session_id)
            # `lease_row` holds a taken lease to have a holder: `other` is set when `held` is
            live = (
                held is not None
                and other is not None
                and not ours
                and (until > now or holder_alive_here(other))
            )
            if live and other is not None and not holder_gone(other):
                raise SessionBusy(
                    f"session {session_id!r} is in use by {other} (lease for another "
                    f"{until - now:.0f} s); try again when it has finished, or once the lease "
                    "expires if that worker died"
                )
            cur.execute(
                "UPDATE sessions SET lease_token = ?, lease_holder = ?, lease_expires = ?"
                " WHERE id = ?",
                (token, holder, expires, session_id),
            )
            cur.execute("SELECT COUNT(*) FROM requests WHERE session = ?", (session_id,))
            counted = cur.fetchone()
            assert counted is not None  # COUNT(*) always answers one row
            requests = int(counted[0])
        self._let_go.pop(session_id, None)
        return Lease(
            session_id, token, holder, expires, int(length), int(revision), requests, expires - now
        )

    def renew(self, lease: Lease) -> None:
        expires = self.clock() + lease.seconds
        with self.transaction(write=True) as cur:
            cur.execute(
                f"SELECT lease_token FROM sessions WHERE id = ?{self.lock_row}",
                (lease.session_id,),
            )
            row = cur.fetchone()
            if row is not None and row[0] == lease.token:
                cur.execute(
                    "UPDATE sessions SET lease_expires = ? WHERE id = ?",
                    (expires, lease.session_id),
                )
            else:
                raise SessionBusy(
                    f"session {lease.session_id!r}: this worker's lease was lost (taken over "
                    "after it expired); nothing more will be written"
                )
        lease.expires_at = expires

    def release(self, lease: Lease) -> None:
        try:  # durable: what the run stored survives the machine once it returns
            with self.transaction(write=True, durable=True) as cur:
                cur.execute(
                    "UPDATE sessions SET lease_token = NULL, lease_holder = '',"
                    " lease_expires = NULL WHERE id = ? AND lease_token = ?",
                    (lease.session_id, lease.token),
                )
        except SessionError:
            self._let_go[lease.session_id] = lease.token
            raise

    def _hold(self, cur: Cursor, lease: Lease, transcript: Transcript) -> None:
        """Inside a write: the lease is still ours and the row is what we last wrote."""
        cur.execute(
            "SELECT lease_token, lease_holder, length, revision, transcript_id"
            f" FROM sessions WHERE id = ?{self.lock_row}",
            (lease.session_id,),
        )
        row = cur.fetchone()
        if row is None or row[0] != lease.token:
            holder = row[1] if row is not None and row[1] else "nobody"
            raise SessionBusy(
                f"session {lease.session_id!r}: this worker's lease was lost (it expired and "
                f"is now held by {holder}); nothing was written"
            )
        if (int(row[2]), int(row[3])) != (lease.length, lease.revision):
            raise SessionError(
                f"session {lease.session_id!r} holds {row[2]} messages at revision {row[3]}, "
                f"but this worker expected {lease.length} at revision {lease.revision}"
            )
        if row[4] and row[4] != transcript.id:
            raise SessionError(
                f"session {lease.session_id!r} holds transcript {row[4]!r}, not {transcript.id!r}"
            )

    def _rows(self, lease: Lease, transcript: Transcript, start: int) -> list[tuple[str, int, str]]:
        return [
            (lease.session_id, position, dumps_message(transcript[position]))
            for position in range(start, len(transcript))
        ]

    def append(
        self,
        lease: Lease,
        transcript: Transcript,
        requests: Sequence[StoredRequest] = (),
        *,
        cache_ttl: str = "",
    ) -> None:
        if transcript.revision != lease.revision or len(transcript) < lease.length:
            raise SessionError(
                f"session {lease.session_id!r}: the transcript was changed in place "
                "(a rewrite must go through store.rewrite)"
            )
        expires = self.clock() + self.lease_seconds
        with self.transaction(write=True) as cur:
            # The lease's check and the row's update are one statement; only when it
            # writes nothing is the row read, to say why (`_hold` raises).
            if not write_session_row(
                cur, lease, transcript, self.clock, expires, cache_ttl, held=True
            ):
                self._hold(cur, lease, transcript)
                raise SessionError(f"session {lease.session_id!r}: its row could not be updated")
            cur.executemany(
                "INSERT INTO messages (session, position, body) VALUES (?, ?, ?)",
                self._rows(lease, transcript, lease.length),
            )
            cur.executemany(
                "INSERT INTO requests (session, seq, position, sent_at, seconds, input_tokens,"
                " cache_read_tokens, cache_write_tokens, cache_write_1h_tokens, output_tokens)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [_request_row(lease, lease.requests + n, r) for n, r in enumerate(requests)],
            )
        lease.length, lease.requests = len(transcript), lease.requests + len(requests)
        lease.expires_at = expires

    def rewrite(self, lease: Lease, transcript_after: Transcript, rewrite: Rewrite) -> None:
        if not rewrite.replaced and rewrite.folded is None:
            return
        after, session = transcript_after, lease.session_id
        grows = 1 if rewrite.folded is not None else 0
        if rewrite.revision != lease.revision + 1 or after.revision != rewrite.revision:
            raise SessionError(
                f"session {session!r} is at revision {lease.revision}; a rewrite must create "
                f"revision {lease.revision + 1} (got {rewrite.revision}, transcript at "
                f"{after.revision})"
            )
        if len(after) < lease.length + grows:
            raise SessionError(f"session {session!r}: the rewritten transcript is too short")
        now = self.clock()
        positions = [index for index, _ in rewrite.replaced]
        if rewrite.folded is not None:
            kind, (start, end) = "fold", rewrite.folded
        else:
            kind, start, end = "replace", min(positions), max(positions) + 1
        with self.transaction(write=True, durable=True) as cur:
            self._hold(cur, lease, after)
            cur.executemany(
                "INSERT INTO archive (session, revision, position, body, archived_at)"
                " VALUES (?, ?, ?, ?, ?)",
                [
                    (session, rewrite.revision, i, dumps_message(m), now)
                    for i, m in rewrite.replaced
                ],
            )
            if rewrite.folded is not None:
                first = min(end, lease.length)  # rows from here on move or are new
                self._shift(cur, session, end)
            else:
                first = lease.length
                cur.executemany(
                    "UPDATE messages SET body = ? WHERE session = ? AND position = ?",
                    [(dumps_message(after[i]), session, i) for i in positions if i < first],
                )
            cur.execute(
                "DELETE FROM messages WHERE session = ? AND position >= ?", (session, first)
            )
            cur.executemany(
                "INSERT INTO messages (session, position, body) VALUES (?, ?, ?)",
                self._rows(lease, after, first),
            )
            cur.execute(
                "INSERT INTO rewrites (session, revision, kind, span_start, span_end, replaced,"
                " at, length) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (session, rewrite.revision, kind, start, end, len(positions), now, len(after)),
            )
            expires = now + self.lease_seconds
            write_session_row(cur, lease, after, self.clock, expires, "")
        lease.length, lease.revision, lease.expires_at = len(after), after.revision, expires

    def _shift(self, cur: Cursor, session: str, end: int) -> None:
        """A fold inserts its summary at `end`: records of rows from there on move by one."""
        for table, column in (
            ("archive", "position"),
            ("requests", "position"),
            ("rewrites", "span_start"),
            ("rewrites", "span_end"),
        ):
            # Negate first: a unique key must not collide with itself while shifting.
            cur.execute(
                f"UPDATE {table} SET {column} = -{column} - 2 WHERE session = ? AND {column} >= ?",
                (session, end),
            )
            cur.execute(
                f"UPDATE {table} SET {column} = -{column} - 1 WHERE session = ? AND {column} < 0",
                (session,),
            )

    def info(self, session_id: str) -> SessionInfo | None:
        validate_session_id(session_id)
        with self.transaction(write=False) as cur:
            cur.execute(f"SELECT {SESSION_ROW} WHERE s.id = ?", (session_id,))
            row = cur.fetchone()
        return None if row is None else session_info(row, self.clock())

    def sessions(self) -> list[SessionInfo]:
        with self.transaction(write=False) as cur:
            cur.execute(f"SELECT {SESSION_ROW} ORDER BY COALESCE(s.updated_at, s.created_at) DESC")
            rows = cur.fetchall()
        now = self.clock()
        return [session_info(row, now) for row in rows]

    def load(self, session_id: str) -> StoredSession | None:
        validate_session_id(session_id)
        with self.transaction(write=False) as cur:
            cur.execute(f"SELECT {SESSION_ROW} WHERE s.id = ?", (session_id,))
            row = cur.fetchone()
            if row is None:
                return None
            cur.execute(
                "SELECT position, body FROM messages WHERE session = ? ORDER BY position",
                (session_id,),
            )
            rows = cur.fetchall()
        info = session_info(row, self.clock())
        bodies = message_rows(session_id, rows, info.length)
        if not info.transcript_id:
            return StoredSession(info, None)
        try:
            transcript = Transcript(
                messages_from_json(bodies),
                id=info.transcript_id,
                conversation=info.conversation,
                revision=info.revision,
                meta=info.meta,
            )
            _check_pairing(transcript)
        except (TranscriptError, ValueError, TypeError, RecursionError) as exc:
            raise SessionError(f"session {session_id!r} is damaged: {exc}") from exc
        return StoredSession(info, transcript)

    def requests(self, session_id: str) -> list[StoredRequest]:
        with self.transaction(write=False) as cur:
            cur.execute(
                "SELECT position, sent_at, seconds, input_tokens, cache_read_tokens,"
                " cache_write_tokens, output_tokens, cache_write_1h_tokens FROM requests"
                " WHERE session = ? ORDER BY seq",
                (session_id,),
            )
            rows = cur.fetchall()
        return [request_record(session_id, r) for r in rows]

    def archive(self, session_id: str) -> list[ArchivedMessage]:
        with self.transaction(write=False) as cur:
            cur.execute(
                "SELECT revision, position, body, archived_at FROM archive WHERE session = ?"
                " ORDER BY revision, position",
                (session_id,),
            )
            rows = cur.fetchall()
        return [archive_record(session_id, r) for r in rows]

    def rewrites(self, session_id: str) -> list[RewritePoint]:
        with self.transaction(write=False) as cur:
            cur.execute(
                "SELECT revision, kind, span_start, span_end, replaced, at, length FROM rewrites"
                " WHERE session = ? ORDER BY revision",
                (session_id,),
            )
            rows = cur.fetchall()
        return [rewrite_record(session_id, r) for r in rows]


def _request_row(lease: Lease, seq: int, request: StoredRequest) -> Params:
    usage = request.usage
    return (
        lease.session_id,
        seq,
        request.position,
        request.sent_at,
        request.seconds,
        usage.uncached_tokens,  # the column's meaning since schema 1: the uncached part
        usage.cache_read_tokens,
        usage.cache_write_tokens,
        usage.cache_write_1h_tokens,
        usage.output_tokens,
    )


def _check_pairing(transcript: Transcript) -> None:
    """Pairing of a stored transcript, allowing a step whose results were never stored."""
    messages = list(transcript.messages)
    pending = transcript.pending_calls()
    if pending:
        scratch = Transcript(messages)
        scratch.answer_pending("-")
        messages = list(scratch.messages)
    check_pairing(messages)
