"""How many keep-alives a pause gets (issue 49): as many as the rule pays for, counted over
the whole pause. With no history it is the rent-or-buy rule: one at each moment the cache
would expire, while the keep-alives of the pause, that one included, cost no more than the
miss they save (`pings_paid_for`), so a pause of any length gets the fewer of its ping
moments and that cap. A pinger that counted wrong would stop halfway through a long tool
call or `Agent.waiting` and lose the cache it was paying to keep.

Time is faked (`FakeTime`); the test moves the clock to each moment the pinger sleeps until
and waits for the keep-alive it sends there. The model is the scripted model named as
Anthropic Sonnet 4.6 (a 5-minute cache, keep-alives every 270 s); the costs are priced
from the prompt each keep-alive reports, by the rule's own public functions."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.fake_time import FakeTime
from tests.support.held_tool import HeldTool
from warmloop import Agent, MaintenanceEvent, Run, ScriptedModel, Tool, Toolbox, call
from warmloop.keepalive.rule import PauseCosts, pause_costs, ping_limit
from warmloop.providers.scripted import Reply

SONNET = "anthropic:claude-sonnet-4-6"
INSTRUCTIONS = "You run the project's tests and report what failed. " * 600  # ~8k tokens
TURNS = 200
"""Loop turns for a keep-alive (a task beside the pause, answered at once by the scripted
model) to go out and its pinger to sleep again or stop: a hang guard, never a timing."""


def costs_of(prompt: int) -> PauseCosts:
    """The prices of a pause after a request of `prompt` tokens, as the rule makes them
    where a cold resume re-sends the whole prompt."""
    facts = ScriptedModel(name=SONNET).facts
    assert facts.prices is not None
    ratio = facts.prices.rates.output / facts.prices.rates.input  # the one-token answer
    costs = pause_costs(facts.profile, prompt, output_ratio=ratio)
    assert costs is not None
    return costs


async def turns_until(done: int, events: Sequence[MaintenanceEvent]) -> None:
    """Turn the loop until the keep-alive due now went out (`events` grew past `done`) and
    its pinger is asleep again or finished."""
    for _ in range(TURNS):
        if len(events) > done:
            break
        await asyncio.sleep(0)
    assert len(events) > done, "the keep-alive due now never went out"
    for _ in range(TURNS):
        await asyncio.sleep(0)


def next_wake(time: FakeTime) -> float | None:
    """When the pinger sleeps until (the sleep of a pause that ended was cancelled)."""
    return min((wake for wake, slept in time.sleepers if not slept.cancelled()), default=None)


async def through(time: FakeTime, events: Sequence[MaintenanceEvent], end: float) -> None:
    """Move the clock through a pause that ends at `end` (on the fake clock): to each
    moment the pinger sleeps until before it, waiting for the keep-alive sent there."""
    for _ in range(TURNS):  # the pinger starts and sleeps
        await asyncio.sleep(0)
    while (wake := next_wake(time)) is not None and wake < end:
        before = len(events)
        time.advance(wake - time.now)
        await turns_until(before, events)
    time.advance(max(0.0, end - time.now))


async def waited(pause: float) -> tuple[int, list[MaintenanceEvent]]:
    """Keep-alives sent while an application waits `pause` seconds after a run."""
    time = FakeTime()
    inner = ScriptedModel([call("submit", answer="ready")], name=SONNET)
    agent = Agent(inner, instructions=INSTRUCTIONS, keepalive=time.policy())
    first = await agent.run("Prepare the release.")
    async with agent.waiting(first.transcript, since=0.0) as wait:
        await through(time, wait.maintenance, pause)
    assert len(inner.keepalives) == len(wait.maintenance)
    return len(inner.keepalives), wait.maintenance


ENDLESS = 24 * 3_600.0  # longer than any number of keep-alives the rule pays for


def test_a_wait_that_never_ends_gets_every_keep_alive_one_miss_pays_for() -> None:
    sent, events = asyncio.run(waited(ENDLESS))
    costs = costs_of(events[0].tokens_before)  # the prompt it kept
    assert sent == ping_limit(costs) == costs.pings_paid_for > 2


@settings(deadline=None, max_examples=60)
@given(pause=st.floats(1.0, 6 * 3_600.0))
def test_a_wait_of_any_length_gets_the_fewer_of_its_ping_moments_and_the_rules_cap(
    pause: float,
) -> None:
    sent, events = asyncio.run(waited(pause))
    if not events:  # over before the first moment: nothing to price it with, nothing due
        assert pause <= 270.0
        return
    costs = costs_of(events[0].tokens_before)  # the prompt it kept
    assert sent == min(costs.moments(pause), costs.pings_paid_for)


async def held_for_hours(
    steps: Sequence[Reply], tools: Sequence[Tool], **options: Any
) -> tuple[Run[Any], ScriptedModel, list[MaintenanceEvent]]:
    """A run of `steps`, then a `run_tests` held through an endless pause (each keep-alive
    due in it sent on the fake clock), then a submit: the run, its model, its events."""
    time, held = FakeTime(), HeldTool()
    script = [*steps, call("run_tests"), call("submit", answer="2 failed")]
    inner = ScriptedModel(script, name=SONNET)
    events: list[MaintenanceEvent] = []
    agent = Agent(
        inner,
        Toolbox([*tools, held.tool], timeout=None),
        keepalive=time.policy(),
        on_maintenance=events.append,
        **options,
    )
    task = asyncio.create_task(agent.run("Run the tests."))
    await held.started.wait()
    await through(time, events, time.now + ENDLESS)
    held.release.set()
    return await task, inner, events


async def test_a_tool_running_for_hours_gets_every_keep_alive_one_miss_pays_for() -> None:
    run, inner, events = await held_for_hours([], [], instructions=INSTRUCTIONS)
    costs = costs_of(events[0].tokens_before)  # the prompt it kept
    assert len(inner.keepalives) == len(events) == ping_limit(costs) == costs.pings_paid_for
    assert [e.kind for e in run.maintenance] == ["keepalive"] * costs.pings_paid_for
