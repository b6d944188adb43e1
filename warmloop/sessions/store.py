"""The one contract every session store keeps (SQLite embedded, PostgreSQL for many workers).

Writes need the session's lease (`acquire`): `append` stores what is new since the last
write, and `rewrite` stores a rewrite with its archive rows; each is one transaction that
first checks the lease token, the stored length and the revision (a compare-and-swap), so a
write either lands whole or not at all, and only from the lease holder. Reads need no lease.

The contract is synchronous, one for the event loop and for sync code (the CLI): a run calls
it from worker threads (`off_loop`), never on the loop, and runs sharing a store call it
from several threads at once, so every store must be thread-safe.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from warmloop.messages import Rewrite
from warmloop.sessions.lease import Lease
from warmloop.sessions.ledger import ArchivedMessage, RewritePoint, StoredRequest
from warmloop.sessions.session import SessionInfo, StoredSession
from warmloop.transcript import Transcript


@runtime_checkable
class SessionStore(Protocol):
    """Sessions, their messages (one row each, by position), archive, rewrites and requests."""

    location: str
    """Where the store is, for messages (a file path or a URL without its password)."""

    def acquire(self, session_id: str, *, seconds: float | None = None) -> Lease:
        """Take the session's lease, creating an empty session if there is none.
        Raises SessionBusy at once while another live holder has it."""
        ...

    def release(self, lease: Lease) -> None:
        """Give the lease up (a no-op if it was lost)."""
        ...

    def renew(self, lease: Lease) -> None:
        """Extend the lease by `lease.seconds` from now (the heartbeat of a live holder);
        SessionBusy if it was lost."""
        ...

    def append(
        self,
        lease: Lease,
        transcript: Transcript,
        requests: Sequence[StoredRequest] = (),
        *,
        cache_ttl: str = "",
    ) -> None:
        """Store `transcript.messages[lease.length:]`, its identity and meta, and `requests`,
        in one transaction; renews the lease."""
        ...

    def rewrite(self, lease: Lease, transcript_after: Transcript, rewrite: Rewrite) -> None:
        """Store a rewrite in one transaction: archive `rewrite.replaced`, bring the rows to
        `transcript_after` (a fold shifts the rows from its `end` on), bump the revision.
        If anything fails, nothing changes. A no-op rewrite stores nothing."""
        ...

    def load(self, session_id: str) -> StoredSession | None:
        """The session and its transcript, or None if there is no such session."""
        ...

    def info(self, session_id: str) -> SessionInfo | None:
        """The session's row, or None."""
        ...

    def sessions(self) -> list[SessionInfo]:
        """Every session, most recently updated first."""
        ...

    def requests(self, session_id: str) -> list[StoredRequest]:
        """The session's model requests, in order."""
        ...

    def archive(self, session_id: str) -> list[ArchivedMessage]:
        """Every original a rewrite replaced, by revision then position."""
        ...

    def rewrites(self, session_id: str) -> list[RewritePoint]:
        """Every stored rewrite, by revision."""
        ...

    def close(self) -> None:
        """Close connections; the store is unusable afterwards."""
        ...
