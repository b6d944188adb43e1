"""A cached read below the table's minimum lowers the model's minimum (issue 36): a prompt
the table says is too short to cache is kept warm once the provider was seen caching one
as short. GPT-5.6 through the official SDK to the loopback server, answering as the
Responses API reference documents ("The response object")."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx2

from tests.keepalive.test_prewarm import HANG_GUARD, INTERVAL, prewarmed
from tests.support.fake_time import FakeTime
from tests.support.held_tool import HeldTool
from tests.support.wire_servers import WireServer, openai_client
from warmloop import Agent, Toolbox, tool
from warmloop.providers.openai.responses import OpenAIResponsesModel

SHORT = "You answer questions about cities. " * 40  # the whole prompt under 1,024 tokens
READ = 300
"""What the server says a return read: below GPT-5.6's assumed 1,024."""


def server(wire: WireServer, bodies: list[dict[str, Any]]) -> OpenAIResponsesModel:
    def handler(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        bodies.append(body)
        n, tokens = len(bodies), len(request.content) // 4
        output: list[dict[str, Any]] = []
        if not prewarmed(body):
            last = body["input"][-1]
            if last.get("type") == "function_call_output":
                name, arguments = "submit", '{"answer": "done"}'
            else:
                tests = "tests" in json.dumps(last)
                name, arguments = ("run_tests", "{}") if tests else ("lookup", '{"city": "Paris"}')
            output = [
                {
                    "id": f"fc_{n}",
                    "type": "function_call",
                    "status": "completed",
                    "call_id": f"call_{n}",
                    "name": name,
                    "arguments": arguments,
                }
            ]
        cached = READ if n > 1 and tokens > READ else 0
        reply = {
            "id": f"resp_{n}",
            "object": "response",
            "created_at": 1741476542,
            "status": "completed",
            "model": "gpt-5.6-sol",
            "output": output,
            "usage": {
                "input_tokens": tokens,
                "input_tokens_details": {"cached_tokens": cached},
                "output_tokens": 0 if prewarmed(body) else 20,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": tokens + 20,
            },
        }
        return httpx2.Response(200, json=reply)

    client = openai_client(wire, handler, max_retries=0)  # a stand-in for OpenAI's API
    return OpenAIResponsesModel("gpt-5.6-sol", client=client, cache_key=True)


@tool
def lookup(city: str) -> str:
    """Return the country a city is in."""
    return "France"


async def keep_alives(wire: WireServer, *, learn_first: bool) -> tuple[int, dict[str, int]]:
    """Keep-alives through a 29-minute tool, after a run whose return read `READ` tokens
    (`learn_first`) or none; and the minimums the agent learned."""
    bodies: list[dict[str, Any]] = []
    time = FakeTime()
    held = HeldTool()

    agent = Agent(
        server(wire, bodies),
        Toolbox([lookup, held.tool], timeout=None),
        instructions=SHORT,
        keepalive=time.policy(),
        on_maintenance=held.seen,
    )
    if learn_first:
        await agent.run("Which country is Paris in?")
    running = asyncio.create_task(agent.run("Run the tests."))
    await held.started.wait()
    time.advance(INTERVAL)  # the keep-alive's moment, were one due
    if learn_first:
        await asyncio.wait_for(held.pinged.wait(), HANG_GUARD)
    held.release.set()
    await running
    return sum(prewarmed(body) for body in bodies), dict(agent.learned.minimums)


async def test_a_read_below_the_minimum_lowers_it_and_the_short_prompt_is_kept_warm(
    wire_server: WireServer,
) -> None:
    # A fresh agent trusts the table: the prompt is too short to cache, nothing to keep
    # (it learns the read only after the pause, from the request that follows it).
    assert (await keep_alives(wire_server, learn_first=False))[0] == 0
    # One that saw a 300-token read first keeps the same prompt warm.
    assert await keep_alives(wire_server, learn_first=True) == (1, {"openai:gpt-5.6-sol": READ})


async def test_a_read_below_the_minimum_is_learned_without_keep_alive(
    wire_server: WireServer,
) -> None:
    """A facts update never waits on another feature being on (issue 48): with
    `keepalive=None` the agent still learns the 300-token read lowers the model's minimum."""
    bodies: list[dict[str, Any]] = []
    agent = Agent(server(wire_server, bodies), [lookup], instructions=SHORT, keepalive=None)
    await agent.run("Which country is Paris in?")
    assert agent.learned.minimums == {"openai:gpt-5.6-sol": READ}
