"""Worker processes for the crash and race tests (forked, so they start in milliseconds).

`crash_worker` runs an agent on one stored session round after round (tool calls, then a
rewrite through the store API) until it is killed. Its store is wrapped by `AckingStore`,
which announces each write before it starts and, once the store returns, appends what the
write acknowledged to a log: the parent kills the worker at random points and checks that
everything acknowledged is still there. `race_worker` takes turns at one session on command.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any

from tests.support.stores import open_spec
from warmloop import Agent, ScriptedModel, call, tool
from warmloop.errors import SessionBusy, TranscriptError
from warmloop.messages import Message, Rewrite, Summary, ToolResult
from warmloop.providers.base import Rendered
from warmloop.providers.scripted import Reply
from warmloop.sessions.lease import Lease
from warmloop.sessions.ledger import ArchivedMessage, RewritePoint, StoredRequest
from warmloop.sessions.session import SessionInfo, StoredSession
from warmloop.sessions.sql import SqlStore
from warmloop.transcript import Transcript
from warmloop.transcript_file import dumps_message

SESSION = "crashy"


def identity(message: Message) -> str:
    """What must survive of a message: its JSON (a summary's text only: a later fold
    shifts the span a summary records, never its text)."""
    if isinstance(message, Summary):
        return "summary:" + message.text
    return dumps_message(message)


class Log:
    """An append-only log of JSON lines, each one write(2) that the kernel keeps even if
    the process dies right after. A kill inside a large write can still cut it short, so
    every entry starts on a line of its own: a cut line never runs into the next worker's
    first entry (readers skip it)."""

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def write(self, **entry: Any) -> None:
        os.write(self.fd, ("\n" + json.dumps(entry) + "\n").encode())


class AckingStore:
    """A real store whose writes are announced before and acknowledged after in a log."""

    def __init__(self, store: SqlStore, log: Log) -> None:
        self.store, self.log = store, log
        self.location = store.location

    def acquire(self, session_id: str, *, seconds: float | None = None) -> Lease:
        return self.store.acquire(session_id, seconds=seconds)

    def renew(self, lease: Lease) -> None:
        self.store.renew(lease)

    def release(self, lease: Lease) -> None:
        self.store.release(lease)

    def append(
        self,
        lease: Lease,
        transcript: Transcript,
        requests: Sequence[StoredRequest] = (),
        *,
        cache_ttl: str = "",
    ) -> None:
        start = lease.length
        self.log.write(phase="append")
        self.store.append(lease, transcript, requests, cache_ttl=cache_ttl)
        self.log.write(ack=[identity(m) for m in transcript.messages[start:]])

    def rewrite(self, lease: Lease, transcript_after: Transcript, rewrite: Rewrite) -> None:
        self.log.write(phase="rewrite")
        self.store.rewrite(lease, transcript_after, rewrite)
        self.log.write(ack=[identity(m) for m in transcript_after.messages])

    def load(self, session_id: str) -> StoredSession | None:
        return self.store.load(session_id)

    def info(self, session_id: str) -> SessionInfo | None:
        return self.store.info(session_id)

    def sessions(self) -> list[SessionInfo]:
        return self.store.sessions()

    def requests(self, session_id: str) -> list[StoredRequest]:
        return self.store.requests(session_id)

    def archive(self, session_id: str) -> list[ArchivedMessage]:
        return self.store.archive(session_id)

    def rewrites(self, session_id: str) -> list[RewritePoint]:
        return self.store.rewrites(session_id)

    def close(self) -> None:
        self.store.close()


def _script(rng: random.Random, tag: str) -> list[Reply]:
    """One to three steps of one or two tool calls each, then a submit."""
    steps = [
        Reply(
            calls=tuple(
                ("lookup", json.dumps({"key": f"{tag}.{s}.{c}"})) for c in range(rng.randint(1, 2))
            )
        )
        for s in range(rng.randint(1, 3))
    ]
    return [*steps, call("submit", answer=tag)]


def _rewrite(store: AckingStore, rng: random.Random) -> None:
    """Prune one tool result or fold a span of whole steps, through the store API."""
    lease = store.acquire(SESSION)
    try:
        stored = store.load(SESSION)
        assert stored is not None
        transcript = stored.transcript
        if transcript is None or transcript.pending_calls():
            return
        after = Transcript(
            transcript.messages,
            id=transcript.id,
            conversation=transcript.conversation,
            revision=transcript.revision,
            meta=transcript.meta,
        )
        results = [i for i, m in enumerate(after) if isinstance(m, ToolResult)]
        if rng.random() < 0.5 and results:
            index = rng.choice(results)
            change = after.replace_content({index: f"[pruned at revision {after.revision + 1}]"})
        else:
            bounds = [
                i
                for i in range(1, len(after) + 1)
                if i == len(after) or not isinstance(after[i], ToolResult)
            ]
            start, end = sorted(rng.sample(bounds, 2)) if len(bounds) > 1 else (1, 1)
            try:
                change = after.fold(start, end, f"summary of {start}-{end} at {after.revision}")
            except TranscriptError:
                return  # it would cut an earlier fold: skip this round's rewrite
        store.rewrite(lease, after, change)
    finally:
        store.release(lease)


def crash_worker(spec: str, log_path: str, seed: int) -> None:
    """Run rounds on the session until killed (each round: a run, then a rewrite)."""
    log = Log(log_path)
    rng = random.Random(seed)

    @tool
    def lookup(key: str) -> str:
        """Look a key up (slowly enough to be killed inside)."""
        log.write(phase="tool")
        time.sleep(rng.uniform(0.0, 0.004))
        return f"value of {key}"

    store = AckingStore(open_spec(spec), log)
    for round_ in range(1000):
        tag = f"{seed}.{round_}"
        agent = Agent(ScriptedModel(_script(rng, tag)), [lookup])
        agent.run_sync(f"task {tag}", session=SESSION, store=store)
        _rewrite(store, rng)
    log.write(phase="finished")


def race_worker(spec: str, connection: Connection) -> None:
    """On each round number received, try to resume the session and run one step; report
    `busy` or `won`, then (when won) hold the lease until told to finish."""
    store = open_spec(spec)
    while (number := connection.recv()) is not None:

        def reply(rendered: Rendered, number: int = number) -> Reply:
            connection.send(("won", number))
            assert connection.recv() == "finish"
            return call("submit", answer=str(number))

        agent = Agent(ScriptedModel([reply]), [])
        try:
            agent.run_sync(f"round {number}", session="race", store=store)
        except SessionBusy:
            connection.send(("busy", number))
        else:
            connection.send(("done", number))
    store.close()
