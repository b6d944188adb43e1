"""The live guard names every miss where the prefix held as the agent runs (issue 36): a
seeded session on GPT-5.6 whose provider drops the cache on some returns inside the TTL.
The guard names each as an eviction (`CacheMiss`, `agent.learned.misses`), never as idle
or as a client's bust, by the audit's own classifier (`wire.miss_kinds`). Through the official
SDK to the loopback server, answering as the Responses API reference documents ("The
response object": `usage.input_tokens_details.cached_tokens`)."""

from __future__ import annotations

import json
import random

import httpx2

from tests.keepalive.test_prewarm import CITIES
from tests.support.fake_time import FakeTime
from tests.support.wire_servers import WireServer, openai_client
from warmloop import Agent, CacheMiss, Event, tool
from warmloop.providers.openai.responses import OpenAIResponsesModel

MODEL = "gpt-5.6-sol"
STEPS = 12
"""Tool steps before the answer: twelve returns inside the TTL."""


@tool
def lookup(city: str) -> str:
    """Return the country a city is in."""
    return "France"


def evicting(wire: WireServer, evicted: set[int], *, lost: bool = False) -> OpenAIResponsesModel:
    """GPT-5.6 calling `lookup` `STEPS` times, then `submit`; request n (from 1) reads all
    the request before it wrote, unless n is in `evicted` (it reads nothing, and with
    `lost` the provider's diagnostics say it lost the earlier response: "The response
    object", `prompt_cache_diagnostics.type`, asked for with `diagnose=True`)."""
    prompts: list[int] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        n, tokens = len(prompts) + 1, len(request.content) // 4
        cached = 0 if n == 1 or n in evicted else prompts[-1]
        prompts.append(tokens)
        done = sum(item.get("type") == "function_call_output" for item in body["input"])
        name, arguments = ("submit", '{"answer": "France"}') if done >= STEPS else ("lookup", "{}")
        reply = {
            "id": f"resp_{n}",
            "object": "response",
            "created_at": 1741476542,
            "status": "completed",
            "model": MODEL,
            "output": [
                {
                    "id": f"fc_{n}",
                    "type": "function_call",
                    "status": "completed",
                    "call_id": f"call_{n}",
                    "name": name,
                    "arguments": arguments if done >= STEPS else '{"city": "Paris"}',
                }
            ],
            "usage": {
                "input_tokens": tokens,
                "input_tokens_details": {"cached_tokens": cached},
                "output_tokens": 20,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": tokens + 20,
            },
        }
        if lost and n in evicted:
            reply["prompt_cache_diagnostics"] = {"type": "comparison_response_not_found"}
        return httpx2.Response(200, json=reply)

    client = openai_client(wire, handler, max_retries=0)
    return OpenAIResponsesModel(MODEL, client=client, diagnose=lost)


async def test_evictions_inside_the_ttl_are_named_evictions_as_the_agent_runs(
    wire_server: WireServer,
) -> None:
    draws = random.Random(40)  # a fifth of the returns evicted, as users measured 8-25%
    evicted = {n for n in range(2, STEPS + 2) if draws.random() < 0.2}
    assert evicted == {4, 8, 12}  # what the seed draws
    events: list[Event] = []
    agent = Agent(
        evicting(wire_server, evicted),
        [lookup],
        instructions=CITIES,
        keepalive=FakeTime().policy(),  # the tool returns at once: well inside the TTL
        on_event=events.append,
    )
    await agent.run("Which country is Paris in?")
    named = [(event.request, event.miss.kind) for event in events if isinstance(event, CacheMiss)]
    assert named == [(n, "evicted") for n in sorted(evicted)]
    assert [miss.kind for miss in agent.learned.misses] == ["evicted"] * len(evicted)
    assert agent.busts == []  # no client bust: the prefix held on every request
    assert "evicted within the TTL" in str(agent.learned.misses[0])


async def test_a_return_past_the_ttl_is_named_idle_not_evicted(wire_server: WireServer) -> None:
    """The same miss after the tool outlived GPT-5.6's 30-minute TTL (no keep-alive: the
    faked clock jumps while the tool runs) is the expiry the TTL promised, not an eviction."""
    time = FakeTime()

    @tool
    def lookup(city: str) -> str:
        """Return the country a city is in, slowly."""
        time.now += 3_600.0  # an hour: past the TTL, and no pinger wakes (no sleep passed)
        return "France"

    events: list[Event] = []
    agent = Agent(
        evicting(wire_server, {2}),
        [lookup],
        instructions=CITIES,
        keepalive=time.policy(),
        on_event=events.append,
    )
    await agent.run("Which country is Paris in?")
    kinds = [event.miss.kind for event in events if isinstance(event, CacheMiss)]
    assert kinds == ["idle"]


async def test_a_miss_the_provider_says_it_lost_is_named_provider_lost(
    wire_server: WireServer,
) -> None:
    """The same eviction, where the provider's own diagnostics say it holds no record of
    the earlier response: its verdict takes the miss, as the audit charges it."""
    agent = Agent(
        evicting(wire_server, {3}, lost=True),
        [lookup],
        instructions=CITIES,
        keepalive=FakeTime().policy(),
    )
    await agent.run("Which country is Paris in?")
    assert [miss.kind for miss in agent.learned.misses] == ["provider-lost"]
