"""Maintenance in a running agent: prune at the trigger, re-read behind a placeholder, fold
when pruning is not enough (the summary request reads the cache), pause futile folds, a
forced maintenance point on a context overflow, and the cold resume."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any

import pytest

from warmloop import Agent, RequestFailed, ScriptedModel, Summary, call, tool
from warmloop.errors import ContextWindowExceeded
from warmloop.maintenance.planner import MaintenancePolicy
from warmloop.maintenance.prune import PLACEHOLDER_MARK, PrunePolicy
from warmloop.messages import ToolResult
from warmloop.providers.base import ModelResponse, Rendered
from warmloop.providers.scripted import Reply
from warmloop.transcript import check_pairing

FILES = {name: f"<{name}>" + name * 2_400 for name in "abcdef"}


@tool
def read(path: str) -> str:
    """Read a file."""
    return FILES[path]


@tool
def keep(path: str) -> str:
    """Read a file whose contents must never be pruned."""
    return FILES[path]


POLICY = MaintenancePolicy(prune=PrunePolicy(tail_tokens=600, tail_messages=4, min_tokens=100))
KEEPING = MaintenancePolicy(
    prune=PrunePolicy(tail_tokens=600, tail_messages=4, exclude_tools=frozenset({"keep"}))
)


def last_tool_content(rendered: Rendered) -> str:
    return str(rendered.payload["messages"][-1]["content"])


def read_paths(messages: list[dict[str, Any]]) -> dict[str, str]:
    """Each read's result content by its call's path, the call found by the result's id (a
    placeholder does not name the call it stands for: the call stands beside it)."""
    paths = {
        made["id"]: json.loads(made["function"]["arguments"])["path"]
        for m in messages
        for made in m.get("tool_calls") or ()
    }
    return {paths[m["tool_call_id"]]: str(m["content"]) for m in messages if m["role"] == "tool"}


def re_reader(rendered: Rendered) -> Reply:
    """Reads a..e, then, finding a's result pruned, reads it again and submits it."""
    messages = rendered.payload["messages"]
    contents = [str(m.get("content") or "") for m in messages]
    read_a = [c for c in contents if c.startswith("<a>")]
    done = read_paths(messages)
    pruned_a = done.get("a", "").startswith(PLACEHOLDER_MARK)
    if len(done) < 5:
        return call("read", path="abcde"[len(done)])
    if pruned_a and not read_a:
        return call("read", path="a")
    return call("submit", answer=last_tool_content(rendered)[:50])


def test_pruning_at_the_trigger_and_reading_the_data_again_behind_a_placeholder() -> None:
    model = ScriptedModel([re_reader] * 8, context_window=3_000)
    run = Agent(model, [read], maintenance=POLICY, max_steps=8, max_result_chars=None).run_sync(
        "Read every file."
    )
    assert run.outputs.model_dump() == {"answer": FILES["a"][:50]}
    prunes = [e for e in run.maintenance if e.kind == "prune"]
    assert prunes
    assert all(e.reason == "trigger" for e in prunes)
    assert all(e.tokens_after < e.tokens_before for e in prunes)
    results = [m for m in run.transcript if isinstance(m, ToolResult) and m.name == "read"]
    placeholder = f"{PLACEHOLDER_MARK}2,403 characters; call the tool again to see them]"
    assert results[0].content == placeholder
    assert results[-1].content == FILES["a"]  # the re-read brought the data back
    check_pairing(run.transcript.messages)
    assert all(r.prefix.bust is None for r in run.requests)
    assert any(r.prefix.maintenance for r in run.requests)
    assert run.transcript.revision == len(run.maintenance)


def test_a_fold_replaces_what_pruning_cannot_and_its_request_reads_the_cache() -> None:
    steps = [call("keep", path=p) for p in "abcdef"]
    model = ScriptedModel(steps, context_window=3_000)
    summary = "I kept files a to d; they all repeat their name."

    model.enqueue(call("submit", answer="done"))
    original_send = model.send
    queue: list[Any] = []

    async def send(rendered: Rendered, *, session_id: str) -> ModelResponse:
        if "Context maintenance" in last_tool_content(rendered):
            queue.append(rendered)
            model._queue.insert(0, Reply(text=summary))
        return await original_send(rendered, session_id=session_id)

    model.send = send  # type: ignore[method-assign]
    run = Agent(model, [keep], maintenance=KEEPING, max_steps=8, max_result_chars=None).run_sync(
        "Keep every file."
    )
    folds = [e for e in run.maintenance if e.kind == "fold"]
    assert folds
    summary_request = queue[0]
    at = next(i for i, r in enumerate(model.requests) if r is summary_request)
    before = model.requests[at - 1]
    assert summary_request.stream.startswith(before.stream)  # the conversation, plus one ask
    usage = folds[0].usage
    assert usage is not None  # it read everything the request before it left in the cache
    assert usage.cache_read_tokens == len(before.stream) // 4
    summaries = [m for m in run.transcript.visible_messages() if isinstance(m, Summary)]
    assert [s.text for s in summaries] == [summary] * len(folds)
    last_payload = model.requests[-1].stream
    assert summary in last_payload
    assert "<a>" not in last_payload
    check_pairing(run.transcript.visible_messages())
    assert run.usage.prompt_tokens == sum(u.prompt_tokens for u in run.usages())
    assert len(run.usages()) == len(run.requests) + len(folds)


def test_automatic_folding_pauses_after_two_folds_that_do_not_help() -> None:
    model = ScriptedModel([call("keep", path=p) for p in "abcdef"], context_window=3_000)
    model.enqueue(call("submit", answer="done"))
    asked = 0
    original_send = model.send

    async def send(rendered: Rendered, *, session_id: str) -> ModelResponse:
        nonlocal asked
        if "Context maintenance" in last_tool_content(rendered):
            asked += 1  # a summary longer than all it replaces: the fold cannot help
            model._queue.insert(0, Reply(text="s" * 12_000))
        return await original_send(rendered, session_id=session_id)

    model.send = send  # type: ignore[method-assign]
    run = Agent(model, [keep], maintenance=KEEPING, max_steps=8, max_result_chars=None).run_sync(
        "Keep every file."
    )
    assert asked == 2
    assert [e.kind for e in run.maintenance] == ["fold", "fold"]
    assert all(e.tokens_after >= 0.8 * 3_000 for e in run.maintenance)


class Rejecting(ScriptedModel):
    """A provider that rejects any prompt longer than `limit` characters as too long."""

    def __init__(self, *args: Any, limit: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limit = limit
        self.rejected = 0

    async def send(self, rendered: Rendered, *, session_id: str) -> ModelResponse:
        if rendered.length > self.limit:
            self.rejected += 1
            raise ContextWindowExceeded("prompt is too long", window=self.limit // 4)
        return await super().send(rendered, session_id=session_id)


def test_a_context_overflow_is_a_forced_maintenance_point_and_one_retry() -> None:
    replies = [call("read", path=p) for p in "abcd"] + [call("submit", answer="ok")]
    model = Rejecting(replies, limit=7_000)
    run = Agent(model, [read], maintenance=POLICY).run_sync("Read them.")
    assert run.outputs.model_dump() == {"answer": "ok"}
    assert model.rejected >= 1
    assert run.maintenance[0].reason == "overflow"


def test_without_maintenance_a_context_overflow_fails_with_the_transcript() -> None:
    model = Rejecting([call("read", path=p) for p in "abcd"], limit=7_000)
    with pytest.raises(RequestFailed, match="too long") as info:
        Agent(model, [read], maintenance=None).run_sync("Read them.")
    check_pairing(info.value.transcript.messages)


def session(model: ScriptedModel) -> Any:
    model.enqueue(*[call("read", path=p) for p in "abcd"], call("submit", answer="read"))
    return Agent(model, [read], maintenance=POLICY).run_sync("Read them.")


def test_resuming_after_the_cache_went_cold_prunes_before_the_first_request() -> None:
    model = ScriptedModel(name="anthropic:claude-sonnet-4-6")
    first = session(model)
    assert first.maintenance == []  # a warm, short session is left alone
    idle = replace(first.transcript.meta, last_request_at=time.time() - 3_600)
    first.transcript.meta = idle  # an hour idle: past Anthropic's 5-minute cache
    model.enqueue(call("submit", answer="again"))
    second = Agent(model, [read], maintenance=POLICY).run_sync("And?", history=first.transcript)
    assert [(e.kind, e.reason) for e in second.maintenance] == [("prune", "cold")]
    assert second.maintenance[0].predicted_cost == 0.0
    assert second.requests[0].prefix.maintenance


def test_resuming_a_warm_session_leaves_it_alone() -> None:
    model = ScriptedModel(name="anthropic:claude-sonnet-4-6")
    first = session(model)
    model.enqueue(call("submit", answer="again"))
    second = Agent(model, [read], maintenance=POLICY).run_sync("And?", history=first.transcript)
    assert second.maintenance == []
    assert second.requests[0].prefix.bust is None
