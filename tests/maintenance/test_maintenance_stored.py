"""Maintenance inside a stored session: a rewrite is stored (originals archived) before the
run adopts it, so a run that prunes and then fails leaves the pruned conversation in the
store; and a rewrite the store refuses leaves the live conversation untouched, because the
maintainer prunes a copy."""

from __future__ import annotations

from typing import Any

import pytest

from tests.maintenance.test_maintenance import FILES, POLICY, re_reader, read
from warmloop import Agent, RequestFailed, ScriptedModel
from warmloop.agent.result import RunAborted
from warmloop.maintenance.prune import PLACEHOLDER_MARK
from warmloop.messages import Rewrite, ToolResult
from warmloop.sessions.sql import SqlStore
from warmloop.transcript import Transcript, check_pairing


def placeholders(transcript: Transcript) -> list[ToolResult]:
    return [
        m
        for m in transcript
        if isinstance(m, ToolResult) and m.content.startswith(PLACEHOLDER_MARK)
    ]


async def test_a_run_that_prunes_then_fails_leaves_the_pruned_session_stored(
    store: SqlStore,
) -> None:
    # Six replies: five reads (the prompt reaches the trigger and prunes), then nothing left,
    # so the next request fails after the prune was adopted.
    model = ScriptedModel([re_reader] * 6, context_window=3_000)
    agent = Agent(model, [read], maintenance=POLICY, max_steps=8, max_result_chars=None)
    with pytest.raises(RequestFailed) as failed:
        await agent.run("Read every file.", session="s", store=store)
    live = failed.value.transcript
    assert live.revision > 0
    assert placeholders(live)
    stored = store.load("s")
    assert stored is not None
    assert stored.transcript is not None
    assert stored.transcript.revision == live.revision
    assert stored.transcript.messages == live.messages
    check_pairing(stored.transcript.messages)
    originals = [a.message for a in store.archive("s")]
    assert originals  # what the prune replaced is archived, whole
    assert all(isinstance(m, ToolResult) and m.content in FILES.values() for m in originals)


class RefusingRewrites:
    """A store whose `rewrite` fails (a full disk, say); everything else passes through."""

    def __init__(self, inner: SqlStore) -> None:
        self.inner = inner
        self.refused = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def rewrite(self, lease: Any, transcript_after: Transcript, rewrite: Rewrite) -> None:
        self.refused += 1
        raise OSError("disk full")


async def test_a_rewrite_the_store_refuses_leaves_the_live_conversation_as_it_was(
    store: SqlStore,
) -> None:
    refusing = RefusingRewrites(store)
    model = ScriptedModel([re_reader] * 8, context_window=3_000)
    agent = Agent(model, [read], maintenance=POLICY, max_steps=8, max_result_chars=None)
    with pytest.raises(RunAborted, match="OSError: disk full") as failed:
        await agent.run("Read every file.", session="s", store=refusing)
    assert refusing.refused == 1
    live = failed.value.transcript
    assert live.revision == 0
    assert not placeholders(live)
    # Whatever reached the store is the conversation before the prune, whole.
    stored = store.load("s")
    assert stored is not None
    assert stored.transcript is not None
    assert stored.transcript.revision == 0
    assert not placeholders(stored.transcript)
    assert [m.content for m in stored.transcript if isinstance(m, ToolResult)] == [
        FILES[p] for p in "abcd"
    ][: len([m for m in stored.transcript if isinstance(m, ToolResult)])]
    # The model's requests never carried a placeholder: the prune was never adopted.
    assert all(PLACEHOLDER_MARK not in r.stream for r in model.requests)
