"""What a session's runs learned of its model's cache is stored with the session and
restored on resume (issue 36): the returns inside the TTL that found the cache or found it
evicted, and the least prompt it cached, per provider and model, on SQLite and PostgreSQL.
GPT-5.6 through the official SDK to the loopback server, answering as the Responses API
reference documents ("The response object": `usage.input_tokens_details.cached_tokens`)."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.keepalive.test_evictions import lookup, reading
from tests.keepalive.test_prewarm import CITIES, HANG_GUARD, INTERVAL, gpt_5_6, prewarmed
from tests.support.fake_time import FakeTime
from tests.support.held_tool import HeldTool
from tests.support.stores import OpenStore
from tests.support.wire_servers import WireServer
from warmloop import Agent, Toolbox
from warmloop.memory import spread

KEY = "openai:gpt-5.6-sol"
"""The agent's key for the model's learned facts: its provider and model."""


async def run_reading(wire: WireServer, store: Any, *, read: bool) -> Agent:
    """A fresh agent's run on session `s` whose return inside the TTL reads all the first
    request left (`read`) or nothing (an eviction)."""
    bodies: list[dict[str, Any]] = []
    agent = Agent(
        reading(wire, bodies, read=read),
        [lookup],
        instructions=CITIES,
        keepalive=FakeTime().policy(),
    )
    await agent.run("Which country is Paris in?", session="s", store=store)
    assert len(bodies) == 2
    return agent


async def test_the_returns_a_session_saw_are_stored_and_restored_on_resume(
    wire_server: WireServer, make_store: OpenStore
) -> None:
    store = make_store()
    first = await run_reading(wire_server, store, read=False)
    assert list(first.learned.returns[KEY]) == [False]
    info = store.info("s")
    assert info is not None
    assert (info.meta.cache_survived, info.meta.cache_evicted) == (0, 1)
    # Another process: a fresh agent resumes the session and starts from its eviction.
    again = await run_reading(wire_server, store, read=True)
    assert list(again.learned.returns[KEY]) == [False, True]
    info = store.info("s")
    assert info is not None
    assert (info.meta.cache_survived, info.meta.cache_evicted) == (1, 1)


async def test_a_learned_minimum_is_stored_and_restored_per_model(
    wire_server: WireServer, make_store: OpenStore
) -> None:
    store = make_store()
    # The second request reads what the first left: 735 tokens or so, below GPT-5.6's 1,024.
    short = "You answer questions about cities. " * 80
    bodies: list[dict[str, Any]] = []
    model = reading(wire_server, bodies, read=True)
    agent = Agent(model, [lookup], instructions=short, keepalive=FakeTime().policy())
    await agent.run("Which country is Paris in?", session="s", store=store)
    learned = agent.learned.minimums[KEY]
    assert 0 < learned < 1024
    info = store.info("s")
    assert info is not None
    assert info.meta.cache_minimum == learned
    fresh = Agent(reading(wire_server, [], read=False), [lookup], instructions=short)
    await fresh.run("And Lyon?", session="s", store=store)
    assert fresh.learned.minimums == {KEY: learned}


async def keep_alive_planned(wire: WireServer, store: Any) -> tuple[bool, int]:
    """A fresh agent resumes session `s` and runs a 29-minute tool on GPT-5.6: whether its
    pinger sleeps towards a keep-alive once the tool has started, and the keep-alives
    sent. The pinger is created before the tool runs, so it has decided by then."""
    bodies: list[dict[str, Any]] = []
    time, held = FakeTime(), HeldTool()
    agent = Agent(
        gpt_5_6(wire, bodies),
        Toolbox([held.tool], timeout=None),
        instructions=CITIES,
        keepalive=time.policy(),
        on_maintenance=held.seen,
    )
    running = asyncio.create_task(agent.run("Run the tests.", session="s", store=store))
    await held.started.wait()
    planned = bool(time.sleepers)
    time.advance(INTERVAL)  # the keep-alive's moment, were one due
    if planned:
        await asyncio.wait_for(held.pinged.wait(), HANG_GUARD)
    held.release.set()
    await running
    return planned, sum(prewarmed(body) for body in bodies)


async def test_a_resumed_session_whose_cache_was_evicted_plans_no_keep_alive(
    wire_server: WireServer, make_store: OpenStore
) -> None:
    """Two sessions on GPT-5.6, one whose stored runs saw every return inside the TTL
    evicted (60 of 60): a fresh agent resuming it plans no keep-alive through a 29-minute
    tool; resuming the other, it keeps the cache warm."""
    found = {}
    for evicted in (0, 60):
        store = make_store()
        held = HeldTool()
        held.release.set()  # the first run's tool returns at once
        opener = Agent(gpt_5_6(wire_server, []), Toolbox([held.tool]), instructions=CITIES)
        await opener.run("Run the tests.", session="s", store=store)
        store.raw(f"UPDATE sessions SET cache_evicted = {evicted} WHERE id = 's'")
        found[evicted] = await keep_alive_planned(wire_server, store)
    assert found == {0: (True, 1), 60: (False, 0)}


def test_a_long_sessions_counts_keep_their_share_within_the_agents_memory() -> None:
    returns = spread(300, 100)
    assert len(returns) == 128
    assert returns.count(False) == 32
    assert spread(0, 0) == []
    assert spread(2, 1) == [True, True, False]
