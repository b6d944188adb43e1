"""Opening a stored session for a run: take its lease, load its transcript (or start one),
close a step a crash cut short, and hand the loop its persistence hook."""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

from warmloop.errors import ConfigurationError, SessionError
from warmloop.messages import Meta
from warmloop.sessions.lease import Heartbeat, Lease
from warmloop.sessions.locate import open_store
from warmloop.sessions.off_loop import off_loop
from warmloop.sessions.persistence import SessionPersistence
from warmloop.sessions.session import validate_session_id
from warmloop.sessions.store import SessionStore
from warmloop.sessions.timeline import stored_pauses
from warmloop.transcript import Transcript

INTERRUPTED_BY_STOP = (
    "Not executed: the process stopped before this call finished; the session was resumed."
)


@asynccontextmanager
async def open_session(
    session_id: str,
    store: SessionStore | str | os.PathLike[str] | None = None,
    *,
    conversation_id: str | None = None,
    cache_ttl: str = "",
    close_pending: bool = True,
) -> AsyncIterator[SessionPersistence]:
    """The recorder of session `session_id` in `store` (a store, a spec for `open_store`,
    or None for the default), holding its lease until the block ends.

    Raises SessionBusy at once if another holder has it. While the block runs, a heartbeat
    renews the lease, so a long tool or model call keeps it. A call whose result was never
    stored (the process stopped during the tool) gets an "interrupted" error result,
    stored before the block starts, so pairing holds (unless `close_pending` is False: the
    run resuming there answers them itself). Every store call (opening the store,
    the lease, loading) runs off the event loop; sync code enters through `asyncio.run`.
    """
    validate_session_id(session_id)
    owned = not isinstance(store, SessionStore)
    opened = await off_loop(open_store, store) if not isinstance(store, SessionStore) else store
    try:
        lease = await off_loop(opened.acquire, session_id)
        heartbeat = Heartbeat(opened.renew, lease)
        try:
            heartbeat.start()  # a call may outlast the lease
            yield await _recorder(
                opened, lease, session_id, conversation_id, cache_ttl, close_pending
            )
        finally:
            await off_loop(heartbeat.stop)  # it may be inside a renewal
            # If releasing fails the lease expires by itself; the run's outcome matters more.
            with suppress(SessionError):
                await off_loop(opened.release, lease)
    finally:
        if owned:
            await off_loop(opened.close)


async def _recorder(
    store: SessionStore,
    lease: Lease,
    session_id: str,
    conversation_id: str | None,
    cache_ttl: str,
    close_pending: bool,
) -> SessionPersistence:
    stored = await off_loop(store.load, session_id)
    transcript = stored.transcript if stored is not None else None
    if transcript is None:
        transcript = Transcript(conversation=conversation_id, meta=Meta(created_at=time.time()))
    elif conversation_id is not None and conversation_id != transcript.conversation:
        raise ConfigurationError(
            f"session {session_id!r} continues conversation {transcript.conversation!r}; "
            f"conversation_id {conversation_id!r} cannot change it"
        )
    recorder = SessionPersistence(store, lease, transcript, cache_ttl=cache_ttl)
    if close_pending and transcript.answer_pending(INTERRUPTED_BY_STOP):
        await recorder.appended(transcript, ())
    if stored is not None:  # what its requests' times say, for the agent to learn
        requests = await off_loop(store.requests, session_id)
        recorder.pauses = stored_pauses(transcript, requests, interrupted=INTERRUPTED_BY_STOP)
    return recorder
