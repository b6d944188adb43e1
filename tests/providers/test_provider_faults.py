"""Malformed replies, retries and secrets on the Responses, Anthropic and Gemini providers,
through their official SDKs, their default transports sending real HTTP/1.1 to a keep-alive
loopback server (`wire_server`); a failure of the connection itself (refused, cut short) is
raised by a mocked transport.

Shapes, from the providers' references:
- OpenAI Responses, "The response object" (`output`, `usage`, `status`, `error`);
- Anthropic Messages, "Messages" > response (`content`, `usage` with `cache_creation`
  holding `ephemeral_5m_input_tokens` / `ephemeral_1h_input_tokens`) and "Errors";
- Gemini, troubleshooting guide "Error codes" (429 RESOURCE_EXHAUSTED, whose `details` may
  hold a `google.rpc.RetryInfo` with `retryDelay`) and the `Retry-After` header of RFC 9110
  section 10.2.3.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from typing import Any

import httpx
import httpx2
import pytest
from google import genai
from google.genai import types

from tests.support.wire_servers import WireServer, anthropic_client, gemini_client, openai_client
from warmloop import ProviderError, SystemText, Transcript, UserText
from warmloop.facts.pricing import cost_report
from warmloop.facts.usage import Usage
from warmloop.providers.anthropic.model import AnthropicModel
from warmloop.providers.base import Model
from warmloop.providers.gemini.model import GeminiModel
from warmloop.providers.gemini.retry import GaveUp, with_retries
from warmloop.providers.openai.responses import OpenAIResponsesModel

SECRET = "sk-test-SECRET-9f8e7d6c5b4a"
Handler = Callable[[httpx2.Request], httpx2.Response]
TRANSCRIPT = Transcript([SystemText("Be brief."), UserText("Hi")])


def responses_model(wire: WireServer, handler: Handler) -> Model:
    client = openai_client(wire, handler, api_key=SECRET, max_retries=0)
    return OpenAIResponsesModel("gpt-5", client=client)


def anthropic_model(wire: WireServer, handler: Handler) -> Model:
    client = anthropic_client(wire, handler, api_key=SECRET, max_retries=0)
    return AnthropicModel("claude-sonnet-4-6", client=client)


def gemini_model(
    wire: WireServer, handler: Callable[[httpx.Request], httpx.Response], retries: int = 2
) -> Model:
    client = gemini_client(wire, handler, api_key=SECRET)
    return GeminiModel("gemini-2.5-flash", client=client, max_retries=retries, retry_delay=0)


def mocked_gemini_model(handler: Callable[[httpx.Request], httpx.Response], retries: int) -> Model:
    """A Gemini model whose transport is `handler`, which may raise a connection failure."""
    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    options = types.HttpOptions(httpx_async_client=http)
    client = genai.Client(api_key=SECRET, http_options=options)
    return GeminiModel("gemini-2.5-flash", client=client, max_retries=retries, retry_delay=0)


async def send(model: Model) -> Any:
    return await model.send(model.render(TRANSCRIPT, ()), session_id=TRANSCRIPT.id)


MESSAGE = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6"}
TEXT = [{"type": "text", "text": "Hi."}]
RESPONSE = {"id": "resp_1", "object": "response", "created_at": 1, "model": "gpt-5"}

MALFORMED: dict[str, tuple[Callable[[WireServer, Handler], Model], httpx2.Response, str]] = {
    "responses-without-output": (
        responses_model,
        httpx2.Response(200, json=RESPONSE | {"status": "completed"}),
        "`output` is missing",
    ),
    "responses-output-not-a-list": (
        responses_model,
        httpx2.Response(200, json=RESPONSE | {"output": {"type": "message"}}),
        "`output` is not a list",
    ),
    "responses-html": (
        responses_model,
        httpx2.Response(200, text="<html><body>502 Bad Gateway</body></html>"),
        "the body is not JSON (an HTML page",
    ),
    "responses-failed": (
        responses_model,
        httpx2.Response(
            200, json=RESPONSE | {"status": "failed", "error": {"message": "server_error"}}
        ),
        "reported the response as failed (server_error)",
    ),
    "anthropic-without-usage": (
        anthropic_model,
        httpx2.Response(200, json=MESSAGE | {"content": TEXT, "stop_reason": "end_turn"}),
        "the message has no `usage`",
    ),
    "anthropic-without-content": (
        anthropic_model,
        httpx2.Response(200, json=MESSAGE | {"usage": {"input_tokens": 3, "output_tokens": 1}}),
        "the message has no `content` list",
    ),
    "anthropic-html": (
        anthropic_model,
        httpx2.Response(200, text="<!DOCTYPE html><title>Oops</title>"),
        "the body is not JSON (an HTML page",
    ),
    "anthropic-truncated": (
        anthropic_model,
        httpx2.Response(
            200, content=b'{"id": "msg_1", "cont', headers={"content-type": "application/json"}
        ),
        "the body is not JSON (cut short",
    ),
}


@pytest.mark.parametrize("name", list(MALFORMED))
async def test_a_malformed_reply_is_a_provider_error_naming_it(
    wire_server: WireServer, name: str
) -> None:
    build, response, expected = MALFORMED[name]
    with pytest.raises(ProviderError, match=re.escape(expected)):
        await send(build(wire_server, lambda request: response))


def anthropic_usage(wire: WireServer, usage: dict[str, Any]) -> Usage:
    body = MESSAGE | {"content": TEXT, "stop_reason": "end_turn", "usage": usage}
    model = anthropic_model(wire, lambda request: httpx2.Response(200, json=body))
    parsed: Usage = asyncio.run(send(model)).usage
    return parsed


def test_an_empty_cache_creation_gives_int_counts_and_a_cost(wire_server: WireServer) -> None:
    # "cache_creation": {} once gave cache_write_1h_tokens=None, and run.cost() a TypeError.
    usage = anthropic_usage(
        wire_server,
        {"input_tokens": 12, "output_tokens": 3, "cache_creation_input_tokens": 40}
        | {"cache_read_input_tokens": None, "cache_creation": {}},
    )
    assert usage == Usage.of_parts(12, 0, 40, 3, cache_write_1h_tokens=0)
    assert all(type(getattr(usage, f)) is int for f in usage.__dataclass_fields__)
    assert usage + usage == Usage.of_parts(24, 0, 80, 6, cache_write_1h_tokens=0)
    total = cost_report("anthropic:claude-sonnet-4-6", [usage]).total
    assert isinstance(total, float)
    assert total > 0


def test_server_side_compaction_usage_is_kept_apart_and_priced(wire_server: WireServer) -> None:
    # Anthropic, "Compaction": `usage.iterations` lists a `compaction` entry whose tokens are
    # NOT in the top-level fields, then the `message` entries.
    usage = anthropic_usage(
        wire_server,
        {
            "input_tokens": 900,
            "output_tokens": 50,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0,
            "output_tokens_details": {"thinking_tokens": 20},
            "iterations": [
                {"type": "compaction", "input_tokens": 180_000, "output_tokens": 3_000}
                | {"cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
                {"type": "message", "input_tokens": 900, "output_tokens": 50}
                | {"cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
            ],
        },
    )
    assert usage.prompt_tokens == 900  # the request's own prompt, not the compacted one
    assert usage.compaction == Usage(180_000, 0, 0, 3_000)
    assert usage.reasoning_tokens == 20


class Gemini:
    """A Gemini endpoint answering with `replies` in turn (the last one from then on)."""

    def __init__(self, *replies: httpx.Response | Exception) -> None:
        self.replies = replies
        self.requests = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        reply = self.replies[min(self.requests, len(self.replies)) - 1]
        if isinstance(reply, Exception):
            raise reply
        return reply


def quota(headers: dict[str, str] | None = None, delay: str | None = None) -> httpx.Response:
    error: dict[str, Any] = {
        "code": 429,
        "message": "Quota exceeded.",
        "status": "RESOURCE_EXHAUSTED",
    }
    if delay is not None:
        error["details"] = [
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}
        ]
    return httpx.Response(429, json={"error": error}, headers=headers or {})


OK = httpx.Response(
    200, json={"candidates": [{"content": {"role": "model", "parts": [{"text": "Hi."}]}}]}
)


@pytest.mark.parametrize(
    "reply",
    [quota({"Retry-After": "3600"}), quota(delay="3600s")],
    ids=["retry-after-header", "retry-info-detail"],
)
async def test_gemini_gives_up_at_once_when_the_server_asks_for_a_long_wait(
    wire_server: WireServer,
    reply: httpx.Response,
) -> None:
    endpoint = Gemini(reply)
    with pytest.raises(ProviderError, match=r"asks to wait 3,600 s .*after 1 attempt;"):
        await send(gemini_model(wire_server, endpoint, retries=4))
    assert endpoint.requests == 1  # the SDK's own backoff retried it regardless


async def test_gemini_retries_within_a_short_server_wait_and_succeeds(
    wire_server: WireServer,
) -> None:
    endpoint = Gemini(quota({"Retry-After": "0"}), quota(delay="0s"), OK)
    response = await send(gemini_model(wire_server, endpoint, retries=2))
    assert (response.turn.text, endpoint.requests) == ("Hi.", 3)


@pytest.mark.parametrize(
    "failure",
    [
        httpx.RemoteProtocolError("peer closed connection without sending complete message body"),
        httpx.ConnectError("All connection attempts failed"),
        httpx2.ConnectError("All connection attempts failed"),
    ],
    ids=["cut-short-httpx", "refused-httpx", "refused-httpx2"],
)
async def test_gemini_reports_the_attempts_it_really_made(failure: Exception) -> None:
    endpoint = Gemini(failure)
    with pytest.raises(ProviderError) as caught:
        await send(mocked_gemini_model(endpoint, retries=2))
    assert f"{endpoint.requests} attempts" in str(caught.value)
    assert endpoint.requests == 3


async def test_a_client_error_is_reported_as_one_attempt_without_retries(
    wire_server: WireServer,
) -> None:
    endpoint = Gemini(
        httpx.Response(
            400, json={"error": {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}}
        )
    )
    with pytest.raises(ProviderError, match="INVALID_ARGUMENT"):
        await send(gemini_model(wire_server, endpoint, retries=3))
    assert endpoint.requests == 1


async def test_retries_wait_what_the_server_asked_else_back_off() -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    failures = iter([quota({"Retry-After": "7"}), quota(), quota(delay="2.5s")])

    async def request() -> str:
        reply = next(failures, None)
        if reply is None:
            return "done"
        raise genai.errors.APIError(429, reply.json(), reply)

    assert await with_retries(request, attempts=4, delay=0.5, sleep=sleep) == "done"
    assert waits == [7.0, 1.0, 2.5]  # asked; backoff 0.5 * 2**1; asked


async def test_gave_up_names_the_attempts() -> None:
    async def request() -> str:
        raise httpx2.ConnectError("refused")

    async def sleep(seconds: float) -> None:
        return None

    with pytest.raises(GaveUp) as caught:
        await with_retries(request, attempts=3, delay=0, sleep=sleep)
    assert caught.value.attempts == 3


ECHOING_KEY: dict[str, Callable[[WireServer, Handler], Model]] = {
    "responses": responses_model,
    "anthropic": anthropic_model,
}


@pytest.mark.parametrize("name", list(ECHOING_KEY))
async def test_an_api_key_echoed_in_an_error_body_never_reaches_the_message(
    wire_server: WireServer, name: str
) -> None:
    body = {"error": {"type": "authentication_error", "message": f"Invalid key {SECRET}"}}
    with pytest.raises(ProviderError) as caught:
        await send(ECHOING_KEY[name](wire_server, lambda request: httpx2.Response(401, json=body)))
    assert SECRET not in str(caught.value)
    assert caught.value.__cause__ is None  # the SDK's exception holds the key: not chained
    assert "Invalid key ***" in str(caught.value)


async def test_gemini_never_shows_the_api_key_either(wire_server: WireServer) -> None:
    body = {
        "error": {"code": 403, "message": f"Key {SECRET} denied", "status": "PERMISSION_DENIED"}
    }
    with pytest.raises(ProviderError) as caught:
        await send(gemini_model(wire_server, lambda request: httpx.Response(403, json=body)))
    assert SECRET not in str(caught.value)
    assert json.dumps(str(caught.value))  # a plain, printable message
