"""Crash tests: a real worker process running a stored session (tool calls, then rewrites
through the store API) is SIGKILLed at random points, on SQLite and on PostgreSQL. After
every kill the session loads, holds only complete steps (or one assistant turn whose tools
never finished), resumes with pairing intact, and its live messages plus its archive hold
every message the store ever acknowledged."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import random
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.support.session_workers import SESSION, crash_worker, identity
from tests.support.stores import open_spec
from warmloop.messages import AssistantTurn, ToolResult
from warmloop.sessions.resume import open_session
from warmloop.sessions.sql import SqlStore
from warmloop.transcript import Transcript, check_pairing

KILLS = 50  # per store
PHASES = ("append", "tool", "rewrite", "rewritten", None)
"""Where each kill is aimed: shortly after the worker announces a step's write, a tool or a
rewrite's write; just after a rewrite was acknowledged (so rewrites land however slow the
machine); None: a random moment."""
POLL = 0.0005
HANG_GUARD = 600.0
"""Seconds a worker may take to reach a phase before the test calls it hung: a guard
against a hang, not a speed check (each kill waits for its phase, however slow)."""


def read_log(path: Path) -> list[dict[str, object]]:
    """The worker's complete log lines. A line the worker is still writing (read while it
    writes) has no newline yet, and one a kill cut short is not JSON: both are left out."""
    if not path.exists():
        return []
    complete = path.read_text().rpartition("\n")[0]
    entries = []
    for line in complete.splitlines():
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # cut by a kill mid-write; every entry starts on a line of its own
    return entries


def reached(entries: list[dict[str, object]], phase: str) -> bool:
    """Whether the worker entered `phase` ("rewritten": a rewrite was acknowledged)."""
    if phase == "rewritten":
        started = [i for i, e in enumerate(entries) if e.get("phase") == "rewrite"]
        return any("ack" in e for e in entries[started[0] + 1 :]) if started else False
    return any(e.get("phase") == phase for e in entries)


def kill_at(
    process: multiprocessing.process.BaseProcess, log: Path, phase: str | None, rng: random.Random
) -> str:
    """SIGKILL the worker shortly after it enters `phase` (or at a random moment); returns
    the last phase it had announced."""
    seen = len(read_log(log))
    if phase is None:
        time.sleep(rng.uniform(0.005, 0.15))
    else:
        deadline = time.monotonic() + HANG_GUARD
        while not reached(read_log(log)[seen:], phase):
            assert time.monotonic() < deadline, f"the worker never reached {phase!r}"
            assert process.is_alive(), "the worker died before it was killed"
            time.sleep(POLL)
        if phase != "rewritten":
            time.sleep(rng.uniform(0.0, 0.004))  # before, inside or just after the write
    assert process.pid is not None
    os.kill(process.pid, signal.SIGKILL)
    process.join()
    phases = [e["phase"] for e in read_log(log) if "phase" in e]
    return str(phases[-1]) if phases else "start"


def check_stored_steps_are_whole(transcript: Transcript) -> None:
    """Each result is stored as it comes, in call order: after the last assistant turn, the
    stored results answer the first calls of the turn, none skipped (a fleet worker resumes
    there without running a returned tool again)."""
    last = max((i for i, m in enumerate(transcript) if isinstance(m, AssistantTurn)), default=-1)
    if last < 0:
        return
    turn = transcript[last]
    assert isinstance(turn, AssistantTurn)
    results = [m for m in transcript.messages[last + 1 :] if isinstance(m, ToolResult)]
    answered = [r.call_id for r in results]
    assert answered == [c.id for c in turn.tool_calls[: len(answered)]], (answered, turn)


async def resume(store: SqlStore) -> Transcript:
    """The session resumed (a cut step closed) and released again."""
    async with open_session(SESSION, store) as recorder:  # the killed holder is gone: no wait
        resumed = recorder.transcript
        assert not resumed.pending_calls()
        check_pairing(resumed.messages)
    return resumed


def check_after_kill(spec: str, log: Path) -> int:
    """Load, check, resume (closing a cut step) and account for every acknowledged message;
    returns the session's message count."""
    acknowledged = {str(i) for e in read_log(log) for i in e.get("ack", [])}  # type: ignore[attr-defined]
    store = open_spec(spec)
    try:
        stored = store.load(SESSION)
        if stored is None or stored.transcript is None:
            assert not acknowledged
            return 0
        check_stored_steps_are_whole(stored.transcript)
        resumed = asyncio.run(resume(store))
        kept = {identity(m) for m in resumed} | {
            identity(a.message) for a in store.archive(SESSION)
        }
        lost = acknowledged - kept
        assert not lost, f"{len(lost)} acknowledged messages lost, e.g. {sorted(lost)[:1]}"
        again = store.load(SESSION)
        assert again is not None
        assert again.transcript == resumed
        return len(resumed)
    finally:
        store.close()


@pytest.mark.crash
def test_sigkill_at_random_points_never_loses_an_acknowledged_message(
    store_spec: str, tmp_path: Path
) -> None:
    rng = random.Random(7)
    log = tmp_path / "acks.jsonl"
    context = multiprocessing.get_context("fork")
    killed_in: Counter[str] = Counter()
    length = 0
    for point in range(KILLS):
        worker = context.Process(target=crash_worker, args=(store_spec, str(log), point))
        worker.start()
        killed_in[kill_at(worker, log, PHASES[point % len(PHASES)], rng)] += 1
        length = check_after_kill(store_spec, log)
    # Every kind of moment was hit: during a tool, a step's write and a rewrite's write.
    assert {"tool", "append", "rewrite"} <= set(killed_in), killed_in
    assert sum(killed_in.values()) == KILLS
    print(f"kill points by the worker's last phase: {dict(killed_in)}")
    store = open_spec(store_spec)
    assert store.rewrites(SESSION), "no rewrite ever landed"
    assert length > 50
    store.close()
