"""One Agent, shared the ways a Python service shares it, on every SDK provider (issue 45).

Each pattern on each of Chat Completions, Responses, Anthropic Messages and Gemini through
their official SDKs, against a loopback server that keeps its connections alive: concurrent
`await agent.run()` in one loop, `run_sync` from many threads, `asyncio.run` called again
and again, an ASGI server's thread pool, and a loop per test (pytest-asyncio's own, below).
Every run is one lookup and one answer (two requests), and each answer names its own task,
so a reply that reached the wrong run shows (`tickets`). SDK clients are bound to the loop
that first used them: before clients per loop (`loop_clients`), a second loop failed with
`... bound to a different event loop`, `Event loop is closed`, or (anthropic) `cannot
connect`.

The connections the server accepted are counted: at most one per run in flight per loop
(each loop's client reuses its connections; the SDKs' pools allow 100 and more), and where
every loop has ended, every connection is closed (a loop's client is closed with it).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass

import anyio.to_thread
import pytest

from tests.support.tickets import answer_for, answered, lookup, task
from tests.support.wire_servers import WireServer, by_request, connect, serving
from warmloop import Agent, Run

WIRES = {
    "chat": "openai-compatible",  # Chat Completions, openai's AsyncOpenAI
    "responses": "openai",  # Responses, openai's AsyncOpenAI
    "anthropic": "anthropic",  # Messages, anthropic's AsyncAnthropic
    "gemini": "gemini",  # generateContent, google-genai's Client
}


@dataclass(frozen=True)
class Outcome:
    """What a pattern ran: each run's answer by task number, and the most connections its
    loops may need (runs in flight at once, summed over loops)."""

    answers: dict[int, str]
    most_connections: int
    loops_ended: bool


def concurrent_runs_in_one_loop(agent: Agent) -> Outcome:
    """Two waves of concurrent `await agent.run()` in one loop: the second wave reuses the
    first's connections."""

    async def service() -> list[Run]:
        first = await asyncio.gather(*(agent.run(task(n)) for n in range(4)))
        return [*first, *await asyncio.gather(*(agent.run(task(n)) for n in range(4, 8)))]

    runs = asyncio.run(service())
    return Outcome(dict(enumerate(map(answered, runs))), 4, loops_ended=True)


def run_sync_from_threads(agent: Agent) -> Outcome:
    """The issue's own: `run_sync` here, then from worker threads, each twice."""
    answers = {0: answered(agent.run_sync(task(0)))}
    with ThreadPoolExecutor(2) as pool:
        runs = pool.map(lambda n: (n, answered(agent.run_sync(task(n)))), range(1, 5))
        answers |= dict(runs)
    return Outcome(answers, 1 + 2, loops_ended=False)  # this thread's loop lives on


def asyncio_run_again_and_again(agent: Agent) -> Outcome:
    """`asyncio.run(agent.run(...))` three times: three loops, one after another."""
    answers = {n: answered(asyncio.run(agent.run(task(n)))) for n in range(3)}
    return Outcome(answers, 3, loops_ended=True)


def asgi_thread_pool(agent: Agent) -> Outcome:
    """A sync endpoint under an ASGI server: Starlette and FastAPI run it in anyio's worker
    threads (`run_in_threadpool` is `anyio.to_thread.run_sync`) while the server's loop
    runs; each worker's `run_sync` has a loop of its own."""
    threads: set[int] = set()

    def endpoint(n: int) -> tuple[int, str]:
        threads.add(threading.get_ident())
        return n, answered(agent.run_sync(task(n)))

    async def server() -> list[tuple[int, str]]:
        calls = (anyio.to_thread.run_sync(endpoint, n) for n in range(4))
        return await asyncio.gather(*calls)

    answers = dict(asyncio.run(server()))
    return Outcome(answers, len(threads), loops_ended=False)  # idle workers live on


PATTERNS: dict[str, Callable[[Agent], Outcome]] = {
    "concurrent runs in one loop": concurrent_runs_in_one_loop,
    "run_sync from threads": run_sync_from_threads,
    "asyncio.run again and again": asyncio_run_again_and_again,
    "an ASGI server's thread pool": asgi_thread_pool,
}


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("pattern", PATTERNS)
def test_one_agent_serves_every_pattern_on_every_wire(
    wire_server: WireServer, pattern: str, wire: str
) -> None:
    wire_server.serve(by_request(answer_for))
    agent = Agent(connect(wire_server, WIRES[wire]), tools=[lookup])
    outcome = PATTERNS[pattern](agent)
    assert outcome.answers == {n: f"answer {n}" for n in outcome.answers}
    assert len(wire_server.requests()) == 2 * len(outcome.answers)
    assert 1 <= wire_server.connections <= outcome.most_connections
    if outcome.loops_ended:
        assert wire_server.wait_closed(), "a loop's client is closed with its loop"


# A loop per test: pytest-asyncio gives each async test its own event loop and closes it
# after the test; an app's module-level agent outlives them all.

SHARED: dict[str, Agent] = {}
"""The module-level agents, one per wire, made on first use."""
RUNS: dict[str, int] = {}


@pytest.fixture(scope="module")
def shared_servers() -> Iterator[dict[str, WireServer]]:
    with ExitStack() as stack:
        servers = {wire: stack.enter_context(serving()) for wire in WIRES}
        for server in servers.values():
            server.serve(by_request(answer_for))
        yield servers


@pytest.mark.parametrize("test", [1, 2, 3])
@pytest.mark.parametrize("wire", WIRES)
async def test_a_module_level_agent_serves_a_loop_per_test(
    shared_servers: dict[str, WireServer], wire: str, test: int
) -> None:
    server = shared_servers[wire]
    assert server.wait_closed(), "the earlier tests' loops closed their connections"
    if wire not in SHARED:
        SHARED[wire] = Agent(connect(server, WIRES[wire]), tools=[lookup])
    run = await SHARED[wire].run(task(test))
    RUNS[wire] = RUNS.get(wire, 0) + 1
    assert answered(run) == f"answer {test}"
    assert server.connections <= RUNS[wire]  # one per test's loop, reused by its two requests
