"""Approvals: a call of a tool marked `needs_approval` ends the run waiting, stored in its
session with the call unanswered; another agent (another process) resumes it with the
decisions; while it waits, `agent.waiting(session)` keeps the cache warm as a pause of that
tool, so the resumed request reads the cache.

Time is faked (`FakeTime`); the model is the scripted model named as Sonnet 4.6, its usage
from the cache simulator on the fake clock (`SimulatedCache`), one provider cache shared
by both agents as by two processes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.agent.test_keepalive import SimulatedCache
from tests.support.fake_time import FakeTime
from warmloop import Agent, ConfigurationError, ScriptedModel, SQLiteStore, ToolResult, call, tool
from warmloop.agent.approvals import ToolDenied, WaitingForApproval
from warmloop.providers.scripted import Reply

SONNET = "anthropic:claude-sonnet-4-6"
INSTRUCTIONS = "You release the project when asked; deploy only what was reviewed. " * 500
DEPLOYED: list[str] = []


@tool(needs_approval=True)
def deploy(version: str) -> str:
    """Deploy a version to production.

    Args:
        version: The version to deploy.
    """
    DEPLOYED.append(version)
    return f"{version} is live"


@tool
def notify(text: str) -> str:
    """Tell the team.

    Args:
        text: What to say.
    """
    DEPLOYED.append(f"told: {text}")
    return "sent"


def agent(model: ScriptedModel | SimulatedCache, time: FakeTime | None = None) -> Agent:
    keepalive = time.policy() if time is not None else None
    return Agent(model, [deploy, notify], instructions=INSTRUCTIONS, keepalive=keepalive)


async def waiting_run(path: Path, *replies: Reply) -> WaitingForApproval:
    DEPLOYED.clear()
    first = agent(ScriptedModel(list(replies), name=SONNET))
    with pytest.raises(WaitingForApproval) as waited:
        await first.run("Release 2.1.", session="release", store=path)
    return waited.value


async def test_a_call_that_needs_approval_waits_and_any_agent_resumes_it(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    waited = await waiting_run(path, call("deploy", version="2.1"))
    [asked] = waited.interruptions
    assert (asked.name, waited.session) == ("deploy", "release")
    assert DEPLOYED == []
    assert "agent.resume('release'" in str(waited)
    store = SQLiteStore(path)
    stored = store.load("release")
    assert stored is not None
    assert stored.transcript is not None
    assert stored.transcript.pending_calls() == (asked,)  # stored, unanswered

    # Another process: a new agent, the same store.
    second = agent(ScriptedModel([call("submit", answer="2.1 released")], name=SONNET))
    run = await second.resume("release", approvals={asked.id: True}, store=path)
    assert run.output == "2.1 released"
    assert DEPLOYED == ["2.1"]
    result = next(m for m in run.transcript if isinstance(m, ToolResult) and m.name == "deploy")
    assert result.content == "2.1 is live"
    assert len(run.requests) == 1  # the stored request is never sent again


async def test_a_denied_call_is_answered_with_the_denial_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    path = tmp_path / "sessions.db"
    waited = await waiting_run(path, call("deploy", version="2.1"))
    [asked] = waited.interruptions
    second = agent(ScriptedModel([call("submit", answer="not released")], name=SONNET))
    decisions = {asked.id: ToolDenied("not on a Friday")}
    run = await second.resume("release", approvals=decisions, store=path)
    assert DEPLOYED == []
    result = next(m for m in run.transcript if isinstance(m, ToolResult) and m.name == "deploy")
    assert result.is_error
    assert "not on a Friday" in result.content
    assert run.output == "not released"


async def test_calls_after_one_that_waits_wait_too_and_an_undecided_one_keeps_it_waiting(
    tmp_path: Path,
) -> None:
    path = tmp_path / "sessions.db"
    both = Reply(calls=(("deploy", '{"version": "2.1"}'), ("notify", '{"text": "done"}')))
    waited = await waiting_run(path, both)
    assert [c.name for c in waited.interruptions] == ["deploy", "notify"]
    assert DEPLOYED == []  # notify needs no approval, but it comes after one that waits
    again = agent(ScriptedModel([], name=SONNET))
    with pytest.raises(WaitingForApproval) as still:
        await again.resume("release", store=path)
    assert still.value.interruptions == waited.interruptions
    with pytest.raises(ConfigurationError, match="does not wait for a decision"):
        await again.resume("release", approvals={"call_9_9": True}, store=path)
    deploy_id = waited.interruptions[0].id
    done = agent(ScriptedModel([call("submit", answer="released")], name=SONNET))
    await done.resume("release", approvals={deploy_id: True}, store=path)
    assert DEPLOYED == ["2.1", "told: done"]


async def approved_after(minutes: float, path: Path, *, keepalive: bool) -> tuple[Agent, int, int]:
    """A run waits for approval (process A); process B keeps it warm while a person takes
    `minutes` to approve (or not: `keepalive`), then resumes it. B's agent, its keep-alives,
    and what the resumed request read from the cache."""
    time = FakeTime()
    model_a = SimulatedCache(ScriptedModel([call("deploy", version="2.1")], name=SONNET), time)
    with pytest.raises(WaitingForApproval) as waited:
        await agent(model_a, time).run("Release 2.1.", session="release", store=path)
    inner = ScriptedModel([call("submit", answer="released")], name=SONNET)
    model_b = SimulatedCache(inner, time)
    model_b.cache = model_a.cache  # one provider, two processes
    second = agent(model_b, time if keepalive else None)
    approved = asyncio.Event()

    async def person() -> None:
        left = minutes * 60.0
        while left > 270.0:
            model_b.sent.clear()
            time.advance(270.0)
            left -= 270.0
            if keepalive:
                await asyncio.wait_for(model_b.sent.wait(), 30)  # a hang guard, not a timing
        time.advance(left)
        approved.set()

    async with second.waiting("release", store=path, since=0.0):
        await asyncio.gather(person(), approved.wait())
    decisions = {waited.value.interruptions[0].id: True}
    run = await second.resume("release", approvals=decisions, store=path)
    return second, len(inner.keepalives), run.requests[0].usage.cache_read_tokens


async def test_the_wait_is_kept_warm_as_a_pause_of_the_tool_and_the_resume_reads_it(
    tmp_path: Path,
) -> None:
    second, pings, read = await approved_after(20, tmp_path / "kept.db", keepalive=True)
    assert pings == 4  # 4.5, 9, 13.5 and 18 minutes: the cache outlives the 20th
    assert read > 8_000  # the instructions and the turn that asked, from the cache
    assert list(second.learned.pauses["tool:deploy"]) == [1_200.0]  # learned for next time
    _, none, cold = await approved_after(20, tmp_path / "cold.db", keepalive=False)
    assert (none, cold) == (0, 0)
