"""A keep-alive the server never answers holds nothing (issue 30): the run, and the end of
`agent.waiting()`, go on without it; it is cancelled when its pause ends.

The server (`wire_server`) holds every keep-alive (the request asking for the smallest
answer) unanswered until the test ends. Time is faked for the pinger (`FakeTime`), so
the keep-alive goes out when the test moves the clock. The hang guard only turns a run
that waits for the held keep-alive (the SDK's ten minutes and retries) into a failure.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tests.support.fake_servers import ToolUse
from tests.support.fake_time import FakeTime
from tests.support.wire_servers import WireServer, connect, scripted
from warmloop import Agent, Toolbox, tool

INSTRUCTIONS = "You run the project's tests and report what failed. " * 600  # ~8k tokens
HANG_GUARD = 120.0
"""Seconds before a run held by the keep-alive counts as held (it would be 600 or more)."""
PREFIX = "anthropic"  # a 5-minute cache: the keep-alive is due 270 s after the request


def holds_keepalives(server: WireServer) -> None:
    """Hold every keep-alive: the request asking for Anthropic's smallest answer."""
    server.hold(lambda path, body: body.get("max_tokens") == 1)


async def keepalive_held(server: WireServer) -> None:
    assert await asyncio.to_thread(server.held.wait, HANG_GUARD), "no keep-alive went out"


async def test_leaving_waiting_does_not_wait_for_a_keepalive_never_answered(
    wire_server: WireServer,
) -> None:
    wire_server.serve(scripted([ToolUse("submit", {"answer": "ready"})]))
    time = FakeTime()
    agent = Agent(connect(wire_server, PREFIX), instructions=INSTRUCTIONS, keepalive=time.policy())
    first = await agent.run("Prepare the release.")
    holds_keepalives(wire_server)

    async def wait_for_approval() -> Any:
        async with agent.waiting(first.transcript, since=0.0) as wait:
            time.advance(270.0)  # the keep-alive is due
            await keepalive_held(wire_server)
        return wait

    wait = await asyncio.wait_for(wait_for_approval(), HANG_GUARD)
    assert wait.maintenance == []  # no answer, no usage
    assert any("cancelled" in warning for warning in wait.warnings)
    assert time.sleepers == []


async def test_a_run_does_not_wait_for_a_keepalive_never_answered(
    wire_server: WireServer,
) -> None:
    wire_server.serve(
        scripted([ToolUse("run_tests", {"suite": "all"}), ToolUse("submit", {"answer": "2"})])
    )
    time = FakeTime()
    started, release = asyncio.Event(), asyncio.Event()

    @tool
    async def run_tests(suite: str) -> str:
        """Run the test suite."""
        started.set()
        await release.wait()
        return f"{suite}: 2 failed"

    agent = Agent(
        connect(wire_server, PREFIX),
        Toolbox([run_tests], timeout=None),
        instructions=INSTRUCTIONS,
        keepalive=time.policy(),
    )
    running = asyncio.create_task(agent.run("Run the tests."))
    await started.wait()
    holds_keepalives(wire_server)
    time.advance(270.0)  # the keep-alive is due while the tool runs
    await keepalive_held(wire_server)
    release.set()
    run = await asyncio.wait_for(running, HANG_GUARD)
    assert run.outputs.model_dump()["answer"] == "2"
    assert [event.kind for event in run.maintenance if event.kind == "keepalive"] == []
