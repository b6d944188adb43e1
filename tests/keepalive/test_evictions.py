"""Evictions learned from the wire (issue 36): a request that extends the one before it and
returns inside that request's TTL, yet reads less than it left, is an eviction; the agent
learns its model's survival from these, and the keep-alive rule weighs a pause's miss by
it. Through the official SDK to the loopback server, answering as the Responses API
reference documents ("The response object": `usage.input_tokens_details.cached_tokens`)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import Any

import httpx2

from benchmarks.keepalive_sessions import sessions
from tests.keepalive.test_prewarm import CITIES, HANG_GUARD, INTERVAL, gpt_5_6, prewarmed
from tests.support.fake_time import FakeTime
from tests.support.held_tool import HeldTool
from tests.support.wire_servers import WireServer, openai_client
from warmloop import Agent, Toolbox, tool
from warmloop.facts.profiles import profile_for
from warmloop.keepalive.rule import choose_retention, pause_costs, ping_limit
from warmloop.memory import survival
from warmloop.providers.openai.responses import OpenAIResponsesModel

MODEL = "gpt-5.6-sol"


@tool
def lookup(city: str) -> str:
    """Return the country a city is in."""
    return "France"


def reading(wire: WireServer, bodies: list[dict[str, Any]], *, read: bool) -> OpenAIResponsesModel:
    """GPT-5.6 whose second request reads all the first left (`read`) or nothing (evicted)."""

    def handler(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        bodies.append(body)
        n, tokens = len(bodies), len(request.content) // 4
        done = body["input"][-1].get("type") == "function_call_output"
        name, arguments = ("submit", '{"answer": "France"}') if done else ("lookup", "{}")
        cached = first[0] if done and read else 0
        first.append(tokens)
        usage = {
            "input_tokens": tokens,
            "input_tokens_details": {
                "cached_tokens": cached,
                "cache_write_tokens": tokens - cached,
            },
            "output_tokens": 20,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": tokens + 20,
        }
        call = {
            "id": f"fc_{n}",
            "type": "function_call",
            "status": "completed",
            "call_id": f"call_{n}",
            "name": name,
            "arguments": arguments if done else '{"city": "Paris"}',
        }
        reply = {
            "id": f"resp_{n}",
            "object": "response",
            "created_at": 1741476542,
            "status": "completed",
            "model": MODEL,
            "output": [call],
            "usage": usage,
        }
        return httpx2.Response(200, json=reply)

    first: list[int] = []
    return OpenAIResponsesModel(MODEL, client=openai_client(wire, handler, max_retries=0))


async def test_a_return_inside_the_ttl_that_reads_nothing_is_learned_as_an_eviction(
    wire_server: WireServer,
) -> None:
    found = {}
    for read in (True, False):
        bodies: list[dict[str, Any]] = []
        time = FakeTime()  # the tool returns at once: well inside the 30-minute TTL
        agent = Agent(
            reading(wire_server, bodies, read=read),
            [lookup],
            instructions=CITIES,
            keepalive=time.policy(),
        )
        await agent.run("Which country is Paris in?")
        assert len(bodies) == 2
        (returns,) = agent.learned.returns.values()
        found[read] = list(returns)
    assert found == {True: [True], False: [False]}


def test_the_survival_learned_lowers_what_a_keep_alive_is_worth() -> None:
    profile = profile_for(f"openai:{MODEL}")
    sure = pause_costs(profile, 20_000, survival=survival([]))
    halved = pause_costs(profile, 20_000, survival=survival([False] * 4))
    assert sure is not None
    assert halved is not None
    assert survival([]) == 1.0
    assert survival([False] * 4) == 0.5
    assert ping_limit(halved) < ping_limit(sure)
    assert halved.miss == sure.miss / 2


async def keep_alives_sent(wire: WireServer, evictions: int) -> int:
    """Keep-alives an agent that saw `evictions` evictions (and no survival) sends through a
    29-minute tool on GPT-5.6."""
    bodies: list[dict[str, Any]] = []
    time = FakeTime()
    held = HeldTool()

    agent = Agent(
        gpt_5_6(wire, bodies),
        Toolbox([held.tool], timeout=None),
        instructions=CITIES,
        keepalive=time.policy(),
        on_maintenance=held.seen,
    )
    agent.learned.returns[f"openai:{MODEL}"].extend([False] * evictions)
    running = asyncio.create_task(agent.run("Run the tests."))
    await held.started.wait()
    time.advance(INTERVAL)  # the keep-alive's moment, were one due
    if evictions == 0:
        await asyncio.wait_for(held.pinged.wait(), HANG_GUARD)
    held.release.set()
    await running
    return sum(prewarmed(body) for body in bodies)


async def test_an_agent_that_saw_its_cache_evicted_sends_no_keep_alive_that_cannot_pay(
    wire_server: WireServer,
) -> None:
    """A 29-minute tool on GPT-5.6, twice: an agent that saw its cache live sends a
    keep-alive before the 30-minute TTL ends; one that saw it evicted on every return (60
    of 60) does not: the entry would rarely be there to keep."""
    assert await keep_alives_sent(wire_server, 0) == 1
    assert await keep_alives_sent(wire_server, 60) == 0


def test_the_survival_learned_weighs_what_a_longer_ttl_saves() -> None:
    """Anthropic, gaps of 20 minutes someone waited through: an hour's write pays where the
    entry lives through them, not where it is evicted in nineteen of twenty."""
    profile = profile_for("anthropic:claude-sonnet-4-6")
    gaps = [1_200.0] * 10
    assert choose_retention(profile, 20_000, 2_000, gaps).retention.name == "1h"
    rare = choose_retention(profile, 20_000, 2_000, gaps, survival=0.05)
    assert rare.retention.name == "5m"


def test_the_benchmark_evicts_the_same_sessions_at_the_chance_asked() -> None:
    plain, evicted = sessions(40, 7), sessions(40, 7, 0.5)
    assert [[replace(s, evicted=False) for s in steps] for steps in evicted] == plain
    waited = [s for steps in evicted for s in steps if s.waited]
    assert 0.3 < sum(s.evicted for s in waited) / len(waited) < 0.7
    assert not any(s.evicted for steps in evicted for s in steps if not s.waited)
