"""Keep-alives inside a run: beside a slow tool, priced as maintenance, never in the way.

Time is faked (`FakeTime`: the pinger's clock and sleep); the slow tool waits on an event
the test sets, so nothing depends on the machine's speed. The model is the scripted model
named as Anthropic Sonnet 4.6 (5m cache), its usage computed by the cache simulator on the
fake clock (`SimulatedCache`), so a keep-alive that comes too late, or none, shows as a
cache write on the request after the pause.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from tests.support.fake_time import FakeTime
from tests.support.run_records import sent
from warmloop import (
    Agent,
    Event,
    KeptAlive,
    MaintenanceEvent,
    ScriptedModel,
    SystemText,
    Toolbox,
    Transcript,
    UserText,
    call,
    tool,
)
from warmloop.cli.view import notes
from warmloop.errors import ProviderError
from warmloop.keepalive.pauses import RunPauses
from warmloop.memory import Learned
from warmloop.messages import AssistantTurn, ToolCall
from warmloop.providers.base import ModelResponse, Rendered, WrappedModel
from warmloop.sessions.sqlite import SQLiteStore
from warmloop.simulate import Block, CacheSimulator, SimRequest

SONNET = "anthropic:claude-sonnet-4-6"
INSTRUCTIONS = "You run the project's tests and report what failed. " * 600  # ~8k tokens


class SimulatedCache(WrappedModel):
    """The scripted model, its usage from the cache simulator on the fake clock: one block
    per message, the 5-minute breakpoint on the last (Anthropic's rules)."""

    def __init__(self, model: ScriptedModel, time: FakeTime, *, fail_keepalives: bool = False):
        super().__init__(model)
        self.time = time
        self.cache = CacheSimulator(model.facts.profile)
        self.fail_keepalives = fail_keepalives
        self.sent = asyncio.Event()
        self.usages: list[Any] = []

    async def send(self, rendered: Rendered, *, session_id: str) -> ModelResponse:
        if rendered.keepalive and self.fail_keepalives:
            self.sent.set()
            raise ProviderError("overloaded (529)")
        response = await self.model.send(rendered, session_id=session_id)
        items = [rendered.payload["tools"], *rendered.payload["messages"]]
        texts = [json.dumps(item, sort_keys=True) for item in items]
        blocks = [Block(len(t) // 4, hashlib.sha256(t.encode()).hexdigest()) for t in texts]
        blocks[-1] = Block(blocks[-1].tokens, blocks[-1].key, "5m")
        usage = self.cache.request(SimRequest(self.time.now, tuple(blocks), 1))
        self.usages.append((rendered.keepalive, usage))
        self.sent.set()
        return ModelResponse(response.turn, usage, response.format_error)


def scripted(name: str = SONNET) -> ScriptedModel:
    return ScriptedModel(
        [call("run_tests", suite="all"), call("submit", answer="2 failed")], name=name
    )


def slow_tool(started: asyncio.Event, release: asyncio.Event, expected: float | None = None) -> Any:
    @tool(expected_seconds=expected)
    async def run_tests(suite: str) -> str:
        """Run the test suite."""
        started.set()
        await release.wait()
        return f"{suite}: 2 failed, 140 passed"

    return run_tests


async def eight_minute_run(
    *,
    keepalive: bool = True,
    name: str = SONNET,
    fail: bool = False,
    expected: float | None = None,
    on_event: Callable[[Event], None] | None = None,
    on_maintenance: Callable[[MaintenanceEvent], None] | None = None,
    **run: Any,
) -> tuple[Any, SimulatedCache, ScriptedModel]:
    """A run whose one tool takes eight (fake) minutes; returns the run and the models."""
    time = FakeTime()
    inner = scripted(name)
    model = SimulatedCache(inner, time, fail_keepalives=fail)
    started, release = asyncio.Event(), asyncio.Event()
    agent = Agent(
        model,
        Toolbox([slow_tool(started, release, expected)], timeout=None),
        instructions=INSTRUCTIONS,
        keepalive=time.policy() if keepalive else None,
        on_event=on_event,
        on_maintenance=on_maintenance,
    )
    task = asyncio.create_task(agent.run("Run the tests.", **run))
    await started.wait()
    model.sent.clear()
    time.advance(270.0)  # the moment the 5-minute cache is pinged
    if keepalive and inner.facts.profile.provider == "anthropic" and expected is None:
        await asyncio.wait_for(
            model.sent.wait(), 30
        )  # out while the tool still runs (a hang guard)
        assert not release.is_set()
    time.advance(210.0)  # eight minutes after the request
    release.set()
    return await task, model, inner


async def test_an_eight_minute_tool_on_a_5m_cache_is_kept_warm_and_billed_as_maintenance() -> None:
    run, _model, inner = await eight_minute_run()
    assert len(inner.keepalives) == 1
    after = run.requests[1].usage  # the request after the tool
    assert after.cache_read_tokens == run.requests[0].usage.prompt_tokens  # all of it
    assert after.cache_write_tokens < 100  # only what the tool appended
    events = [e for e in run.maintenance if e.kind == "keepalive"]
    assert len(events) == 1
    assert events[0].usage is not None
    assert events[0].usage.cache_read_tokens == run.requests[0].usage.prompt_tokens
    assert events[0].usage.cache_write_tokens == 0
    # Priced with the run, and shown by the CLI as maintenance.
    cost = run.cost()
    assert cost.total is not None
    assert len(cost.usages) == len(run.requests) + 1
    shown = "\n".join(line.plain for line in notes(run))
    assert "keep-alive during a pause" in shown
    assert "maintenance: 1 keep-alive(s) during pauses, $" in shown


async def test_a_keep_alive_is_an_event_while_the_tool_runs_and_on_maintenance_sees_it() -> None:
    events: list[Event] = []
    maintained: list[MaintenanceEvent] = []
    run, _, _ = await eight_minute_run(on_event=events.append, on_maintenance=maintained.append)
    kinds = [type(e).__name__ for e in events]
    kept = kinds.index("KeptAlive")
    assert kinds.index("ToolStarted") < kept < kinds.index("ToolFinished")
    ping = events[kept]
    assert isinstance(ping, KeptAlive)
    assert maintained == [ping.event] == [e for e in run.maintenance if e.kind == "keepalive"]


async def test_without_the_keep_alive_the_request_after_the_tool_rewrites_the_cache() -> None:
    run, _, inner = await eight_minute_run(keepalive=False)
    assert inner.keepalives == []
    assert run.requests[1].usage.cache_read_tokens == 0
    assert run.requests[1].usage.cache_write_tokens > run.requests[0].usage.prompt_tokens


async def test_the_keep_alive_changes_nothing_in_the_transcript_or_the_stored_session(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / "on.db")
    warm, _, _ = await eight_minute_run(session="tests", store=store)
    cold, _, _ = await eight_minute_run(
        keepalive=False, session="tests", store=SQLiteStore(tmp_path / "off.db")
    )
    assert warm.transcript.messages == cold.transcript.messages
    stored = store.load("tests")
    assert stored is not None
    assert stored.transcript is not None
    assert stored.transcript.messages == warm.transcript.messages
    assert len(store.requests("tests")) == len(warm.requests)


async def test_a_failed_keep_alive_never_fails_the_run() -> None:
    run, _, _ = await eight_minute_run(fail=True)
    assert run.outputs.answer == "2 failed"
    assert any("keep-alive failed" in warning for warning in run.warnings)
    assert not [e for e in run.maintenance if e.kind == "keepalive"]


async def test_a_cache_without_a_ttl_or_living_for_hours_is_never_pinged() -> None:
    for name in ("scripted", "deepseek:deepseek-chat"):
        run, _, inner = await eight_minute_run(name=name)
        assert inner.keepalives == []
        assert not [e for e in run.maintenance if e.kind == "keepalive"]


async def test_nothing_is_pinged_once_the_run_is_over() -> None:
    time = FakeTime()
    inner = ScriptedModel([call("submit", answer="done")], name=SONNET)
    agent = Agent(inner, instructions=INSTRUCTIONS, keepalive=time.policy())
    await agent.run("Say done.")
    time.advance(3_600.0)
    await asyncio.sleep(0)
    assert inner.keepalives == []
    assert time.sleepers == []


async def test_a_tool_declared_to_wait_for_hours_is_let_go_cold_at_once() -> None:
    """`expected_seconds` is the rule's history until the agent has timed the tool: three
    hours is longer than the pings one miss pays for, so none is sent."""
    run, _, inner = await eight_minute_run(expected=3 * 3_600.0)
    assert inner.keepalives == []
    assert run.requests[1].usage.cache_read_tokens == 0


async def test_waiting_between_runs_keeps_the_conversation_warm_until_the_block_ends() -> None:
    time = FakeTime()
    inner = ScriptedModel(
        [call("submit", answer="ready"), call("submit", answer="approved")], name=SONNET
    )
    model = SimulatedCache(inner, time)
    agent = Agent(model, instructions=INSTRUCTIONS, keepalive=time.policy())
    first = await agent.run("Prepare the release.")
    approved = asyncio.Event()

    async def human() -> None:  # answers twenty minutes later
        for _ in range(4):
            model.sent.clear()
            time.advance(270.0)
            await asyncio.wait_for(model.sent.wait(), 30)  # a hang guard, not a timing
        time.advance(120.0)
        approved.set()

    before = first.transcript.dump()
    async with agent.waiting(first.transcript, since=0.0) as wait:
        await asyncio.gather(human(), approved.wait())
    assert len(inner.keepalives) == 4
    assert [e.kind for e in wait.maintenance] == ["keepalive"] * 4
    assert first.transcript.dump() == before  # nothing appended
    second = await agent.run("Approved: go on.", history=first.transcript)
    assert second.requests[0].usage.cache_read_tokens >= first.requests[0].usage.prompt_tokens
    time.advance(3_600.0)  # the block is over: nothing more is pinged
    await asyncio.sleep(0)
    assert len(inner.keepalives) == 4
    assert time.sleepers == []


async def test_waiting_on_a_cache_already_gone_sends_nothing() -> None:
    time = FakeTime()
    inner = ScriptedModel([call("submit", answer="ready")], name=SONNET)
    agent = Agent(inner, instructions=INSTRUCTIONS, keepalive=time.policy())
    first = await agent.run("Prepare the release.")
    async with agent.waiting(first.transcript, since=400.0) as wait:
        for _ in range(3):
            time.advance(300.0)
            await asyncio.sleep(0)
    assert inner.keepalives == []
    assert wait.maintenance == []


async def test_a_cold_prune_that_leaves_little_to_re_send_is_not_worth_a_keep_alive() -> None:
    """A miss costs what the resume re-writes after its cold prune: 50,000 tokens read at
    0.1 per keep-alive against re-writing 2,000 at 1.25 is no bargain, the whole 50,000 is."""
    found = []
    for cold in (None, 2_000):
        time = FakeTime()
        inner = ScriptedModel(name=SONNET)
        pauses = RunPauses(inner, time.policy(), Learned(), lambda e: None, lambda w: None)
        conversation = Transcript()
        conversation.append(SystemText(INSTRUCTIONS))
        conversation.append(UserText("Run the tests."))
        sent(pauses, inner.render(conversation, ()), 0.0, 50_000, cold)
        async with pauses.pause("tool:run_tests", inner.facts, "c", 0):
            time.advance(270.0)
            for _ in range(5):
                await asyncio.sleep(0)
        found.append(len(inner.keepalives))
    assert found == [1, 0]


async def test_a_stored_session_s_tool_times_are_the_next_run_s_history(tmp_path: Path) -> None:
    """A new process (a fresh agent) runs on a stored session whose `run_tests` took eight
    minutes (the times written in the store): that, not the tool's declared three hours,
    is the rule's history, so the first pause is pinged at once."""
    path = tmp_path / "sessions.db"
    quick = ScriptedModel(
        [call("run_tests", suite="all"), call("submit", answer="2 failed")], name=SONNET
    )
    done = asyncio.Event()
    done.set()
    first = Agent(
        quick, Toolbox([slow_tool(done, done)]), instructions=INSTRUCTIONS, keepalive=None
    )
    await first.run("Run the tests.", session="tests", store=SQLiteStore(path))
    with sqlite3.connect(path) as db:  # the first run's requests went out eight minutes apart
        for seq, sent_at in ((0, 1_000.0), (1, 1_480.0)):
            db.execute("UPDATE requests SET sent_at = ? WHERE seq = ?", (sent_at, seq))

    time = FakeTime()
    inner = scripted()
    model = SimulatedCache(inner, time)
    started, release = asyncio.Event(), asyncio.Event()
    agent = Agent(
        model,
        Toolbox([slow_tool(started, release, expected=3 * 3_600.0)], timeout=None),
        instructions=INSTRUCTIONS,
        keepalive=time.policy(),
    )
    task = asyncio.create_task(
        agent.run("Run them again.", session="tests", store=SQLiteStore(path))
    )
    await started.wait()
    model.sent.clear()
    time.advance(270.0)
    await asyncio.wait_for(model.sent.wait(), 30)  # a hang guard: without the history, none
    release.set()
    run = await task
    assert len(inner.keepalives) == 1
    assert agent.learned.pauses["tool:run_tests"][0] == 480.0
    assert run.requests[1].usage.cache_read_tokens >= run.requests[0].usage.prompt_tokens
    # The run follows one another process finished: the stored run is learned, followed
    # by this one (the gap since the session's last request), which ends as a follow-up.
    assert len(agent.learned.follow_ups) == 1
    assert agent.learned.follow_ups[0] >= 0.0
    ends = [(end.requests, end.first, end.followed) for end in agent.learned.run_ends]
    assert ends == [(2, True, True), (2, False, False)]
    conversation = run.transcript.conversation
    assert {end.conversation for end in agent.learned.run_ends} == {conversation}


# Round three (issue 38): what the agent feeds the keep-alive rule.


def started_pauses(time: FakeTime, learned: Learned) -> tuple[RunPauses, ScriptedModel, Transcript]:
    """A run's pauses after its first request, sent now on the fake clock."""
    inner = ScriptedModel(name=SONNET)
    pauses = RunPauses(inner, time.policy(), learned, lambda e: None, lambda w: None)
    conversation = Transcript([SystemText(INSTRUCTIONS), UserText("Run the tests.")])
    sent(pauses, inner.render(conversation, ()), time.now, 50_000)
    return pauses, inner, conversation


async def test_a_pause_and_a_gap_are_measured_from_the_last_request() -> None:
    time, learned = FakeTime(), Learned()
    time.now = 10_000.0
    pauses, inner, conversation = started_pauses(time, learned)
    async with pauses.pause("tool:run_tests", inner.facts, "c", 0):
        time.advance(2.0)
    assert list(learned.pauses["tool:run_tests"]) == [2.0]
    time.advance(5.0)
    sent(pauses, inner.render(conversation, ()), time.now, 50_000)
    assert list(learned.gaps) == [7.0]


async def test_a_submit_alone_or_the_extract_step_opens_no_pause() -> None:
    time, learned = FakeTime(), Learned()
    pauses, inner, conversation = started_pauses(time, learned)
    done = asyncio.Event()
    done.set()
    toolbox = Toolbox([slow_tool(done, done)])
    submit = AssistantTurn(tool_calls=(ToolCall("call_1_0", "submit", '{"answer": "x"}'),))
    tests = AssistantTurn(tool_calls=(ToolCall("call_2_0", "run_tests", '{"suite": "all"}'),))
    for turn, extracting in ((submit, False), (submit, True), (tests, True)):
        async with pauses.for_turn(turn, toolbox, inner.facts, conversation, extracting=extracting):
            time.advance(2.0)
    assert dict(learned.pauses) == {}
    async with pauses.for_turn(tests, toolbox, inner.facts, conversation, extracting=False):
        time.advance(2.0)
    assert list(learned.pauses) == ["tool:run_tests"]


async def test_waiting_reads_the_cache_age_from_the_conversation_when_not_told() -> None:
    """Without `since`, the time since the conversation's last request is its own record:
    a cache just written is pinged, one written 500 s ago on a 5-minute TTL is gone."""
    sent = []
    for age in (0.0, 500.0):
        time = FakeTime()
        inner = ScriptedModel([call("submit", answer="ready")], name=SONNET)
        agent = Agent(inner, instructions=INSTRUCTIONS, keepalive=time.policy())
        first = await agent.run("Prepare the release.")
        meta = first.transcript.meta
        assert meta.last_request_at is not None
        first.transcript.meta = replace(meta, last_request_at=meta.last_request_at - age)
        async with agent.waiting(first.transcript):
            time.advance(280.0)
            for _ in range(50):  # turns of the loop for a due keep-alive to go out
                await asyncio.sleep(0)
        sent.append(len(inner.keepalives))
    assert sent == [1, 0]


async def test_a_keep_alive_event_touches_no_message() -> None:
    run, _, _ = await eight_minute_run()
    events = [e for e in run.maintenance if e.kind == "keepalive"]
    assert len(events) == 1
    assert events[0].messages == 0
    assert events[0].revision == run.transcript.revision
