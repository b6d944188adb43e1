"""Clients per event loop (`loop_clients`): what each loop gets, when a client is closed,
and what a `client=` the caller passed means (issue 45)."""

from __future__ import annotations

import asyncio

from openai import AsyncOpenAI

from tests.support.fake_servers import ToolUse
from tests.support.wire_servers import WireServer, by_request
from warmloop import Agent
from warmloop.providers.loop_clients import LoopClients
from warmloop.providers.openai.responses import OpenAIResponsesModel


class Client:
    """A stand-in SDK client: whether it was closed."""

    def __init__(self) -> None:
        self.closed = False


async def close(client: Client) -> None:
    client.closed = True


def test_a_loop_gets_one_client_closed_when_the_loop_shuts_down() -> None:
    clients = LoopClients.made(Client, close)

    async def twice() -> tuple[Client, Client]:
        return await clients.current(), await clients.current()

    first, again = asyncio.run(twice())
    later, _ = asyncio.run(twice())
    assert first is again  # one client for all of a loop's requests
    assert first is clients.client  # the one made first serves the first loop
    assert later is not first
    assert first.closed
    assert later.closed
    assert clients.loops == 0


def test_a_loop_closed_by_hand_is_forgotten_on_the_next_request() -> None:
    """A loop closed without shutting its generators down (`loop.close()` after
    `run_until_complete`) never closes its client: the next request on any loop drops it."""
    clients = LoopClients.made(Client, close)
    loop = asyncio.new_event_loop()
    loop.run_until_complete(clients.current())
    loop.close()
    assert clients.loops == 1
    asyncio.run(clients.current())
    assert clients.loops == 0


def test_a_client_passed_serves_every_loop_and_is_never_closed(wire_server: WireServer) -> None:
    wire_server.serve(by_request(lambda body: ToolUse("submit", {"answer": "ok"})))
    given = AsyncOpenAI(api_key="sk-test", base_url=f"{wire_server.url}/v1")
    agent = Agent(OpenAIResponsesModel("gpt-5", client=given))
    run = asyncio.run(agent.run("Say ok."))
    assert run.outputs.model_dump()["answer"] == "ok"
    assert not given.is_closed()  # the caller's to close


def test_a_function_passed_makes_one_client_per_loop_closed_with_it(
    wire_server: WireServer,
) -> None:
    wire_server.serve(by_request(lambda body: ToolUse("submit", {"answer": "ok"})))
    made: list[AsyncOpenAI] = []

    def make() -> AsyncOpenAI:
        made.append(AsyncOpenAI(api_key="sk-test", base_url=f"{wire_server.url}/v1"))
        return made[-1]

    agent = Agent(OpenAIResponsesModel("gpt-5", client=make))
    for _ in range(3):
        assert asyncio.run(agent.run("Say ok.")).outputs.model_dump()["answer"] == "ok"
    assert len(made) == 3  # the first, made at once, served the first loop
    assert all(client.is_closed() for client in made)
    assert wire_server.connections == 3
