"""A stored session: its validated name and what the store knows about it besides messages.

A session id is a name the user picks (`warmloop run --session NAME`); it is validated like
a conversation id (a short safe alphabet) and only ever used as a key in a store, never as
a filesystem path (I5). The conversation it holds keeps its own transcript id.
"""

from __future__ import annotations

from dataclasses import dataclass

from warmloop.facts.usage import Usage
from warmloop.messages import Meta, validate_id
from warmloop.transcript import Transcript


def validate_session_id(value: object) -> str:
    """`value` if it is a safe session id (1 to 64 letters, digits, `_` or `-`)."""
    return validate_id(value, "session id")


@dataclass(frozen=True)
class SessionInfo:
    """One session row: identity, meta, the cache TTL in use, request totals and its lease.

    `transcript_id` is empty until the first step is stored. `length` counts the stored
    messages; `requests` the model requests recorded (one per step) and `usage` their sum.
    """

    id: str
    transcript_id: str
    conversation: str
    revision: int
    length: int
    meta: Meta
    provider: str
    cache_ttl: str
    requests: int
    usage: Usage
    lease_holder: str = ""
    lease_expires: float | None = None

    def idle_seconds(self, now: float) -> float | None:
        """Seconds since the last model request (None when none was sent yet)."""
        last = self.meta.last_request_at
        return None if last is None else max(0.0, now - last)


@dataclass(frozen=True)
class StoredSession:
    """A session as loaded: its row and its transcript (None before the first step)."""

    info: SessionInfo
    transcript: Transcript | None
