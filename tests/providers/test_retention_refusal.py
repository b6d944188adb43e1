"""A retention parameter the provider refuses is learned for the conversation (issue 36).

GPT-5 asks for `prompt_cache_retention: "24h"` by default (free where the table sells it).
An organisation that cannot use it gets the documented 400: an `invalid_request_error`
whose `param` names the parameter (OpenAI's API reference, "Error codes"; the error object
`{"error": {"message", "type", "param", "code"}}`). Through the official SDK to the loopback
server: the request is sent again once without it, with a warning, and the conversation's
later requests leave it out; another error is raised as before.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx2
import pytest

from tests.support.fake_servers import ToolUse
from tests.support.wire_servers import WireServer, connect, openai_client, scripted
from warmloop import Agent, tool
from warmloop.errors import WarmloopError
from warmloop.providers.openai.responses import OpenAIResponsesModel

REFUSAL = {
    "error": {
        "message": "Unsupported parameter: 'prompt_cache_retention' is not supported for this "
        "organization.",
        "type": "invalid_request_error",
        "param": "prompt_cache_retention",
        "code": "unsupported_parameter",
    }
}


@tool
def lookup(city: str) -> str:
    """Return the country a city is in."""
    return "France"


def refusing(
    wire: WireServer, bodies: list[dict[str, Any]], error: dict[str, Any] = REFUSAL
) -> OpenAIResponsesModel:
    """GPT-5 at a server that answers 400 `error` to any request carrying a retention, and
    as the Responses API reference documents ("The response object") to the rest."""

    def handler(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        bodies.append(body)
        if "prompt_cache_retention" in body:
            return httpx2.Response(400, json=error)
        n = len(bodies)
        done = body["input"][-1].get("type") == "function_call_output"
        name, arguments = ("submit", '{"answer": "France"}') if done else ("lookup", "{}")
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
            "model": "gpt-5",
            "output": [call],
            "usage": {"input_tokens": 100, "output_tokens": 20, "total_tokens": 120},
        }
        return httpx2.Response(200, json=reply)

    return OpenAIResponsesModel("gpt-5", client=openai_client(wire, handler, max_retries=0))


async def test_a_refused_retention_is_dropped_once_and_for_the_conversation(
    wire_server: WireServer, caplog: pytest.LogCaptureFixture
) -> None:
    bodies: list[dict[str, Any]] = []
    agent = Agent(refusing(wire_server, bodies), [lookup])
    with caplog.at_level(logging.WARNING):
        run = await agent.run("Which country is Paris in?")
    assert run.outputs.model_dump()["answer"] == "France"
    retention = [body.get("prompt_cache_retention") for body in bodies]
    assert retention == ["24h", None, None]  # refused once, then left out
    assert bodies[1] == {k: v for k, v in bodies[0].items() if k != "prompt_cache_retention"}
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "refused prompt_cache_retention" in warning


async def test_another_bad_request_is_raised_as_before(wire_server: WireServer) -> None:
    bodies: list[dict[str, Any]] = []
    other = {"error": {**REFUSAL["error"], "message": "Invalid input.", "param": "input"}}
    agent = Agent(refusing(wire_server, bodies, other), [lookup])
    with pytest.raises(WarmloopError, match="Invalid input"):
        await agent.run("Which country is Paris in?")
    assert len(bodies) == 1


async def test_chat_completions_drop_a_refused_retention_too(
    wire_server: WireServer, caplog: pytest.LogCaptureFixture
) -> None:
    """`openai-chat:gpt-5` asks for the same `prompt_cache_retention`; the Chat Completions
    reply is "The chat completion object" (`scripted` answers in that wire)."""
    bodies: list[dict[str, Any]] = []
    answer = scripted([ToolUse("submit", {"answer": "France"})])

    def handler(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content) if request.content else {}
        if request.method == "POST":
            bodies.append(body)
        if "prompt_cache_retention" in body:
            return httpx2.Response(400, json=REFUSAL)
        return answer(request)

    wire_server.serve(handler)
    with caplog.at_level(logging.WARNING):
        run = await Agent(connect(wire_server, "openai-chat")).run("Which country is Paris in?")
    assert run.outputs.model_dump()["answer"] == "France"
    assert [body.get("prompt_cache_retention") for body in bodies] == ["24h", None]
    assert any("refused prompt_cache_retention" in r.getMessage() for r in caplog.records)
