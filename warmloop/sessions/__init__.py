"""Sessions that persist, resume and survive a crash: stores with one contract (SQLite
embedded, PostgreSQL for many workers), leases, and the loop's persistence hook."""

from warmloop.sessions.lease import LEASE_SECONDS, Lease
from warmloop.sessions.locate import default_store_path, open_store
from warmloop.sessions.recorder import SessionRecorder
from warmloop.sessions.records import ArchivedMessage, RewritePoint, StoredRequest
from warmloop.sessions.resume import INTERRUPTED_BY_STOP, open_session
from warmloop.sessions.session import SessionInfo, StoredSession, validate_session_id
from warmloop.sessions.sqlite import SQLiteStore
from warmloop.sessions.store import SessionStore
from warmloop.sessions.warmth import Warmth, warmth
from warmloop.transcript import scratch_copy

__all__ = [
    "INTERRUPTED_BY_STOP",
    "LEASE_SECONDS",
    "ArchivedMessage",
    "Lease",
    "RewritePoint",
    "SQLiteStore",
    "SessionInfo",
    "SessionRecorder",
    "SessionStore",
    "StoredRequest",
    "StoredSession",
    "Warmth",
    "default_store_path",
    "open_session",
    "open_store",
    "scratch_copy",
    "validate_session_id",
    "warmth",
]
