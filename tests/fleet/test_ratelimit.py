"""Rate limits shared by every worker through PostgreSQL (`fleet.ratelimit`), and a model
that waits for them and backs off on a provider's 429 (`fleet.limited`).

Two limiters on two connections stand for two workers; the clock and the sleep are fake
(a sleep moves the clock), so nothing here waits. The 429 is the OpenAI SDK's, its HTTP
transport mocked with the documented error body (OpenAI "Error codes": 429 "Rate limit
reached for requests") and a `retry-after` header (RFC 9110 10.2.3).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx2
import psycopg
import pytest
from openai import AsyncOpenAI

from warmloop import Agent, Transcript, UserText
from warmloop.errors import ConfigurationError, RateLimited
from warmloop.fleet.agent_registry import AgentRegistry
from warmloop.fleet.limited import LimitedModel, estimated_tokens
from warmloop.fleet.ratelimit import SharedLimiter
from warmloop.fleet.window import WINDOW, Limit
from warmloop.fleet.worker import _Worker
from warmloop.providers.openai.chat import OpenAIChatModel
from warmloop.providers.scripted import ScriptedModel

START = 1_000_000.0
RATE_LIMITED = {
    "error": {
        "message": "Rate limit reached for gpt-5 on requests per min (RPM): Limit 3.",
        "type": "requests",
        "param": None,
        "code": "rate_limit_exceeded",
    }
}


class FakeClock:
    """The time the limiters read; a sleep moves it and is remembered."""

    def __init__(self) -> None:
        self.now = START
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def workers(fleet_db: str, clock: FakeClock) -> Iterator[tuple[SharedLimiter, SharedLimiter]]:
    """Two limiters on two connections to one database: two workers' views."""
    first = SharedLimiter(fleet_db, clock=clock, sleep=clock.sleep)
    second = SharedLimiter(fleet_db, clock=clock, sleep=clock.sleep)
    yield first, second
    first.close()
    second.close()


async def test_requests_sent_by_one_worker_hold_back_another(
    workers: tuple[SharedLimiter, SharedLimiter], clock: FakeClock
) -> None:
    one, two = workers
    limit = Limit(requests_per_minute=2)
    await one.acquire("openai:gpt-5", limit, 10)
    clock.now += 10
    await two.acquire("openai:gpt-5", limit, 10)
    assert clock.slept == []
    await two.acquire("openai:gpt-5", limit, 10)  # waits for the first to leave the window
    assert clock.slept == [WINDOW - 10]
    await one.acquire("anthropic:claude-sonnet-4-6", limit, 10)  # another key: its own room
    assert clock.slept == [WINDOW - 10]


async def test_tokens_are_corrected_with_the_usage(
    workers: tuple[SharedLimiter, SharedLimiter], clock: FakeClock
) -> None:
    one, two = workers
    limit = Limit(tokens_per_minute=150)
    sent = await one.acquire("k", limit, 100)
    await one.settle(sent, 20)  # the estimate was high: the usage says 20
    await two.acquire("k", limit, 100)
    assert clock.slept == []
    await two.acquire("k", limit, 100)  # 120 counted: no room for 100 more until both leave
    assert clock.slept == [WINDOW]


async def test_a_pause_holds_every_worker_back(
    workers: tuple[SharedLimiter, SharedLimiter], clock: FakeClock
) -> None:
    one, two = workers
    await one.pause("k", 7.0)
    await one.pause("k", 2.0)  # a shorter pause does not cut the longer one
    await two.acquire("k", Limit(requests_per_minute=100), 1)
    assert clock.slept == [7.0]


class RateLimitedOnce:
    """An API that answers the first request with a 429 asking for `retry-after` seconds,
    then with a chat completion; it counts the requests."""

    def __init__(self, retry_after: str) -> None:
        self.retry_after = retry_after
        self.requests = 0

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests += 1
        if self.requests == 1:
            return httpx2.Response(
                429, json=RATE_LIMITED, headers={"retry-after": self.retry_after}
            )
        return httpx2.Response(200, json=completion())


def completion() -> dict[str, Any]:
    """A chat completion object (OpenAI reference: "The chat completion object")."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1741569952,
        "model": "gpt-5",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Done."},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
    }


def chat_model(api: RateLimitedOnce) -> OpenAIChatModel:
    http = httpx2.AsyncClient(transport=httpx2.MockTransport(api))
    client = AsyncOpenAI(api_key="sk-test", http_client=http, max_retries=0)
    return OpenAIChatModel("gpt-5", client=client)


async def test_a_429_after_the_sdk_retries_keeps_the_servers_hint() -> None:
    model = chat_model(RateLimitedOnce("7"))
    transcript = Transcript([UserText("Hi")])
    with pytest.raises(RateLimited, match="rate-limited") as caught:
        await model.send(model.render(transcript, ()), session_id=transcript.id)
    assert caught.value.retry_after == 7.0


async def test_a_429_pauses_the_key_for_every_worker_then_sends_again(
    workers: tuple[SharedLimiter, SharedLimiter], clock: FakeClock
) -> None:
    one, two = workers
    api = RateLimitedOnce("7")
    limit = Limit(requests_per_minute=100)
    model = LimitedModel(chat_model(api), one, limit, "openai:gpt-5")
    transcript = Transcript([UserText("Hi")])
    rendered = model.render(transcript, ())
    assert estimated_tokens(rendered) > 0
    response = await model.send(rendered, session_id=transcript.id)
    assert response.turn.text == "Done."
    assert api.requests == 2
    assert clock.slept == [7.0]  # the hinted wait, not an immediate retry
    clock.now -= 3.0  # another worker, during the pause
    await two.acquire("openai:gpt-5", limit, 1)
    assert clock.slept == [7.0, 3.0]


def scripted_agents() -> AgentRegistry:
    return AgentRegistry({"a": lambda: Agent(ScriptedModel())})


def test_a_worker_limits_each_agents_model_once_under_its_key(fleet_db: str) -> None:
    limiter = SharedLimiter(fleet_db)
    try:
        own = _Worker(scripted_agents(), None, "w", limiter, Limit(5))  # type: ignore[arg-type]
        model = own.agent("a").model
        assert isinstance(model, LimitedModel)
        assert model.key == model.model.name
        assert own.agent("a").model is model  # wrapped once, not once per task
        keyed = Limit(5, key="host")
        shared = _Worker(scripted_agents(), None, "w", limiter, keyed)  # type: ignore[arg-type]
        assert getattr(shared.agent("a").model, "key", None) == "host"
    finally:
        limiter.close()


def test_an_empty_limit_key_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="limit key is empty"):
        Limit(5, key=" ")


async def test_a_429_asking_for_an_hour_fails_the_task_and_pauses_the_key(
    workers: tuple[SharedLimiter, SharedLimiter], clock: FakeClock
) -> None:
    one, two = workers
    api = RateLimitedOnce("3600")
    limit = Limit(requests_per_minute=100)
    model = LimitedModel(chat_model(api), one, limit, "openai:gpt-5")
    transcript = Transcript([UserText("Hi")])
    with pytest.raises(RateLimited):
        await model.send(model.render(transcript, ()), session_id=transcript.id)
    assert api.requests == 1
    assert clock.slept == []
    await two.acquire("openai:gpt-5", limit, 1)  # the other workers wait out the hour
    assert clock.slept == [3600.0]


async def test_a_dropped_connection_is_opened_again(
    workers: tuple[SharedLimiter, SharedLimiter],
) -> None:
    one, two = workers
    pid = one._db.info.backend_pid
    two._db.execute("SELECT pg_terminate_backend(%s)", (pid,))
    two._db.commit()
    with pytest.raises(psycopg.OperationalError):  # the call that meets the drop fails
        await one.acquire("k", Limit(requests_per_minute=5), 1)
    await one.acquire("k", Limit(requests_per_minute=5), 1)  # the step's next try works
    assert one._db.info.backend_pid != pid


# Round three (issue 38): a wait under a second is still waited.


async def test_a_wait_under_a_second_is_waited_not_skipped(
    workers: tuple[SharedLimiter, SharedLimiter], clock: FakeClock
) -> None:
    one, two = workers
    limit = Limit(requests_per_minute=1)
    await one.acquire("k", limit, 1)
    clock.now += WINDOW - 0.25  # the first request leaves the window in a quarter second
    await two.acquire("k", limit, 1)
    assert clock.slept == [pytest.approx(0.25)]
    await one.pause("k", 0.5)
    await two.acquire("k", Limit(requests_per_minute=100), 1)
    assert clock.slept == [pytest.approx(0.25), 0.5]
