"""The loop's persistence hook: after the loop appends a complete unit (an assistant turn as
soon as it arrives, with its correction when it did not parse; each tool result as it
comes) it awaits `appended`, which
stores what is new in one transaction. Rewrites go through `stored`, which
stores them with their archive rows before the loop adopts them. Every store call runs in
a worker thread (`off_loop`): the event loop never waits on the database.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from warmloop.messages import AssistantTurn, Meta, Rewrite
from warmloop.sessions.lease import Lease
from warmloop.sessions.ledger import StoredRequest
from warmloop.sessions.off_loop import off_loop
from warmloop.sessions.store import SessionStore
from warmloop.sessions.timeline import StoredPauses
from warmloop.transcript import Transcript

if TYPE_CHECKING:
    from warmloop.wire.request_record import RequestRecord


class SessionPersistence:
    """Persists one run of a stored session; `transcript` is the session's conversation,
    which the run continues in place (same id, no fork)."""

    def __init__(
        self,
        store: SessionStore,
        lease: Lease,
        transcript: Transcript,
        *,
        cache_ttl: str = "",
    ) -> None:
        self.store = store
        self.pauses = StoredPauses()
        """The pauses the session's stored requests show (for the agent to learn)."""
        self.lease = lease
        self.transcript = transcript
        self.cache_ttl = cache_ttl
        self._requests = 0  # how many of the run's request records are stored
        self._learned = learned_facts(transcript.meta)  # the learned facts last stored

    async def appended(self, transcript: Transcript, requests: Sequence[RequestRecord]) -> None:
        """Store the messages and request records that are new since the last call."""
        new = requests[self._requests :]
        start = self.lease.length
        learned = learned_facts(transcript.meta) != self._learned
        if len(transcript) == start and not new and not learned:
            return
        # Each request produced one assistant turn, appended right after it was received.
        turns = [
            i for i in range(start, len(transcript)) if isinstance(transcript[i], AssistantTurn)
        ]
        sent_at = transcript.meta.last_request_at or 0.0
        stored = [
            StoredRequest(
                turns[n] if n < len(turns) else len(transcript) - 1, sent_at, r.seconds, r.usage
            )
            for n, r in enumerate(new)
        ]
        await off_loop(self.store.append, self.lease, transcript, stored, cache_ttl=self.cache_ttl)
        self._requests += len(new)
        self._learned = learned_facts(transcript.meta)
        self.transcript = transcript

    async def stored(self, scratch: Transcript, rewrite: Rewrite) -> None:
        """Store a rewrite already applied to a scratch copy (with its archive rows, one
        transaction); the copy becomes the session's transcript. Raises, changing nothing,
        if the store fails."""
        await off_loop(self.store.rewrite, self.lease, scratch, rewrite)
        self.transcript = scratch


def learned_facts(meta: Meta) -> tuple[int | None, int | None, int, int]:
    """What a session learned from the wire and stores even when no message is new: the
    window a rejection named, and its model's cache minimum and returns."""
    return meta.context_window, meta.cache_minimum, meta.cache_survived, meta.cache_evicted
