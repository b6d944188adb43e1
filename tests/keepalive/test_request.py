"""The keep-alive request on each wire format: the last request's payload byte for byte,
only the answer's size changed, so the wire guard sees no bust (keepalive/ping.py)."""

from __future__ import annotations

import itertools
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.support.wire_servers import WireServer, anthropic_client, openai_client
from warmloop import Agent
from warmloop.exchange.formats import logged_layout
from warmloop.keepalive.ping import (
    check_payload,
    keepalive_request,
    per_request,
    with_cache_ttl,
)
from warmloop.keepalive.pinger import KeepAlivePolicy
from warmloop.messages import AssistantTurn, SystemText, ToolCall, ToolResult, UserText
from warmloop.providers.anthropic.model import AnthropicModel
from warmloop.providers.base import Model
from warmloop.providers.gemini.model import GeminiModel
from warmloop.providers.openai.responses import OpenAIResponsesModel
from warmloop.providers.registry import wire_format
from warmloop.providers.select import resolve_model
from warmloop.sessions.sqlite import SQLiteStore
from warmloop.tools.schema import ToolSpec
from warmloop.tools.tool import Tool
from warmloop.transcript import Transcript
from warmloop.wire.guard import PrefixGuard
from warmloop.wire.stream import canonical_stream


def lookup(city: str) -> str:
    """Return the country a city is in."""
    return city


SPECS: tuple[ToolSpec, ...] = (Tool.from_function(lookup).spec,)
CITIES = "You answer questions about cities. " * 400  # ~3k tokens


def transcript() -> Transcript:
    t = Transcript()
    t.append(SystemText("You answer questions about cities."))
    t.append(UserText("Which country is Paris in?"))
    t.append(AssistantTurn("", "", (ToolCall("call_1_0", "lookup", '{"city": "Paris"}'),)))
    t.append(ToolResult("call_1_0", "lookup", "France"))
    return t


def models() -> dict[str, Model]:
    return {
        "anthropic": AnthropicModel("claude-sonnet-4-6", api_key="offline"),
        "anthropic-thinking": AnthropicModel(
            "claude-sonnet-4-6",
            api_key="offline",
            max_tokens=8192,
            thinking={"type": "enabled", "budget_tokens": 2048},
        ),
        "openai-responses": OpenAIResponsesModel("gpt-5", api_key="offline"),
        "openai-chat": resolve_model("openai-chat:gpt-4o", api_key="offline"),
        "gemini": GeminiModel("gemini-2.5-flash", api_key="offline"),
    }


def _without(payload: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(json.dumps(payload, default=str))
    node = out
    for key in path[:-1]:
        node = node.get(key, {})
    node.pop(path[-1], None)
    return out


@pytest.mark.parametrize("name", list(models()))
def test_a_keep_alive_is_the_last_request_byte_for_byte_with_a_minimal_answer(
    name: str,
) -> None:
    model = models()[name]
    rendered = model.render(transcript(), SPECS)
    keep = keepalive_request(rendered)
    assert keep is not None
    assert keep.keepalive
    assert not rendered.keepalive
    fmt = wire_format(rendered.wire_format)
    path, least = fmt.answer, fmt.least_answer
    node: Any = keep.payload
    for key in path:
        node = node[key]
    assert node == (2049 if name == "anthropic-thinking" else least)
    # Everything but the answer's size is the same bytes, in the same order.
    assert json.dumps(_without(keep.payload, path), default=str) == json.dumps(
        _without(rendered.payload, path), default=str
    )
    assert rendered.payload is not keep.payload  # the sent request is never changed
    # The wire guard, reading both as sent, sees the keep-alive extend the request exactly.
    guard = PrefixGuard()
    guard.check(check_payload(rendered))
    verdict = guard.check(check_payload(keep))
    assert verdict.bust is None
    assert check_payload(keep).text == check_payload(rendered).text


def test_a_format_without_a_keep_alive_gives_none() -> None:
    from dataclasses import replace

    rendered = models()["anthropic"].render(transcript(), SPECS)
    assert keepalive_request(replace(rendered, wire_format="llama-cpp")) is None


async def test_a_keep_alive_goes_through_the_anthropic_sdk_and_its_usage_is_a_read(
    wire_server: WireServer,
) -> None:
    """Messages API ("Prompt caching > Tracking cache performance"): a reply cut at
    `max_tokens` (stop_reason `max_tokens`, one text token) with the prefix read from the
    cache; the body on the wire is the last request's, `max_tokens` 1."""
    sent: list[dict[str, Any]] = []
    reply = {
        "id": "msg_keepalive",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": [{"type": "text", "text": "I"}],
        "stop_reason": "max_tokens",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 0,
            "cache_read_input_tokens": 5120,
            "cache_creation_input_tokens": 0,
            "output_tokens": 1,
        },
    }

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(json.loads(request.content))
        return httpx2.Response(200, json=reply)

    client = anthropic_client(wire_server, handler, max_retries=0)
    model = AnthropicModel("claude-sonnet-4-6", client=client)
    rendered = model.render(transcript(), SPECS)
    keep = keepalive_request(rendered)
    assert keep is not None
    response = await model.send(keep, session_id="c")
    assert response.usage.cache_read_tokens == 5120
    assert response.usage.cache_write_tokens == 0
    (body,) = sent
    assert body["max_tokens"] == 1
    assert body["messages"] == json.loads(json.dumps(rendered.payload["messages"]))
    assert body["tools"] == json.loads(json.dumps(rendered.payload["tools"]))


def test_a_request_written_for_an_hour_is_the_same_prompt_with_1h_breakpoints() -> None:
    rendered = models()["anthropic"].render(transcript(), SPECS)
    longer = with_cache_ttl(rendered, "1h")
    marks = re.findall(r'"cache_control": (\{[^}]*\})', json.dumps(longer.payload))
    assert marks
    assert set(marks) == {'{"type": "ephemeral", "ttl": "1h"}'}
    assert '"ttl"' not in json.dumps(rendered.payload)  # the sent request is untouched
    assert check_payload(longer).text == check_payload(rendered).text
    chat = models()["openai-chat"].render(transcript(), SPECS)
    assert with_cache_ttl(chat, "1h") is chat


async def test_an_agent_that_saw_long_gaps_writes_its_anthropic_requests_for_an_hour(
    wire_server: WireServer,
) -> None:
    bodies: list[dict[str, Any]] = []
    reply = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "submit", "input": {"answer": "France"}}
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 10,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 5000,
            "output_tokens": 20,
        },
    }

    def handler(request: httpx2.Request) -> httpx2.Response:
        bodies.append(json.loads(request.content))
        return httpx2.Response(200, json=reply)

    found = []
    for gaps in ([5.0] * 20, [1_800.0] * 20):
        client = anthropic_client(wire_server, handler, max_retries=0)
        agent = Agent(AnthropicModel("claude-sonnet-4-6", client=client))
        agent.learned.gaps.extend(gaps)
        await agent.run("Which country is Paris in?")
        found.append('"ttl": "1h"' in json.dumps(bodies[-1]))
    assert found == [False, True]


def test_a_responses_request_written_for_12h_is_the_same_prompt_and_chat_is_left_alone() -> None:
    """`prompt_cache_options.ttl` is "the minimum lifetime applied to every implicit and
    explicit cache breakpoint written by the request" (the official SDK's API reference,
    `PromptCacheOptions.ttl`): a property of the request's writes, not of its prompt."""
    model = OpenAIResponsesModel("gpt-5.6-sol", api_key="offline")
    rendered = model.render(transcript(), SPECS)
    longer = with_cache_ttl(rendered, "12h")
    assert longer.payload["prompt_cache_options"] == {"ttl": "12h"}
    assert "prompt_cache_options" not in rendered.payload  # the sent request is untouched
    assert check_payload(longer).text == check_payload(rendered).text
    assert per_request("openai-responses", "12h")
    assert not per_request("openai-responses", "24h")  # a session's `prompt_cache_retention`
    assert not per_request("openai-chat", "12h")  # Chat Completions sells no 12 h
    chat = resolve_model("openai-chat:gpt-5.6-sol", api_key="offline").render(transcript(), SPECS)
    assert with_cache_ttl(chat, "12h") is chat


def gpt_5_6(wire: WireServer, bodies: list[dict[str, Any]]) -> OpenAIResponsesModel:
    """GPT-5.6 through the official SDK, its default transport, to the keep-alive loopback
    server `wire` answering with a handler that records each body and
    answers as the Responses API reference documents ("The response object"): `lookup`
    first, then `submit` once a lookup's output is in the input; every input token
    written (`usage.input_tokens_details.cache_write_tokens`)."""

    def handler(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        bodies.append(body)
        last = body["input"][-1]
        looked_up = last.get("type") == "function_call_output"
        name, arguments = ("submit", '{"answer": "France"}') if looked_up else ("lookup", "{}")
        if not looked_up:
            arguments = '{"city": "Paris"}'
        tokens = len(request.content) // 4
        reply = {
            "id": f"resp_{len(bodies)}",
            "object": "response",
            "created_at": 1741476542,
            "status": "completed",
            "model": "gpt-5.6-sol",
            "output": [
                {
                    "id": f"fc_{len(bodies)}",
                    "type": "function_call",
                    "status": "completed",
                    "call_id": f"call_{len(bodies)}",
                    "name": name,
                    "arguments": arguments,
                }
            ],
            "usage": {
                "input_tokens": tokens,
                "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": tokens},
                "output_tokens": 20,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": tokens + 20,
            },
        }
        return httpx2.Response(200, json=reply)

    client = openai_client(wire, handler, max_retries=0)
    return OpenAIResponsesModel("gpt-5.6-sol", client=client, cache_key=True)  # OpenAI's stand-in


async def test_an_agent_whose_runs_are_followed_hours_later_writes_their_ends_for_12h(
    wire_server: WireServer,
) -> None:
    """GPT-5.6 through the official SDK: runs of two requests, each followed two hours
    later (past the 30-minute default, within 12 hours). Once the agent has seen one run
    end and be followed, the request likely to end a run (the second) goes out with
    `prompt_cache_options.ttl` "12h", the rest with the default; the audit, reading the
    bodies as sent, sees every request extend the one before (no bust)."""
    bodies: list[dict[str, Any]] = []
    now = [0.0]
    agent = Agent(
        gpt_5_6(wire_server, bodies),
        [Tool.from_function(lookup)],
        instructions=CITIES,
        keepalive=KeepAlivePolicy(clock=lambda: now[0]),
    )
    run = await agent.run("Which country is Paris in?")
    for _ in range(2):
        now[0] += 7_200.0  # the user comes back two hours later
        run = await agent.run("Which country is Paris in, again?", history=run.transcript)
    ttls = [body.get("prompt_cache_options", {}).get("ttl") for body in bodies]
    assert ttls == [None, None, None, "12h", None, "12h"]
    assert list(agent.learned.follow_ups) == [7_200.0, 7_200.0]
    layout = logged_layout(wire_format("openai-responses"))
    streams = [canonical_stream(body, layout).text for body in bodies]
    for before, after in itertools.pairwise(streams):
        assert after.startswith(before)
    assert all(record.prefix.bust is None for record in run.requests)
    assert agent.busts == []


async def test_a_new_process_on_a_stored_session_weighs_the_follow_ups_it_stored(
    wire_server: WireServer,
    tmp_path: Path,
) -> None:
    """The CLI's case: every run a new process. The stored session's first run was
    followed two hours later (the times written in the store); a fresh agent running a
    third run on it writes the request likely to end it (the second) for 12 hours."""
    path = tmp_path / "sessions.db"
    bodies: list[dict[str, Any]] = []
    first = Agent(gpt_5_6(wire_server, bodies), [Tool.from_function(lookup)], instructions=CITIES)
    for task in ("Which country is Paris in?", "And again?"):
        await first.run(task, session="cities", store=SQLiteStore(path))
    with sqlite3.connect(path) as db:  # the second run came two hours after the first
        for seq, sent_at in ((0, 1_000.0), (1, 1_010.0), (2, 8_210.0), (3, 8_220.0)):
            db.execute("UPDATE requests SET sent_at = ? WHERE seq = ?", (sent_at, seq))
        # The server reads nothing back, so each return was stored as an eviction (issue 36),
        # which would weigh against a longer TTL; this test is about the follow-ups.
        db.execute("UPDATE sessions SET cache_survived = cache_evicted, cache_evicted = 0")
    bodies.clear()
    fresh = Agent(gpt_5_6(wire_server, bodies), [Tool.from_function(lookup)], instructions=CITIES)
    await fresh.run("Once more?", session="cities", store=SQLiteStore(path))
    ttls = [body.get("prompt_cache_options", {}).get("ttl") for body in bodies]
    assert ttls == [None, "12h"]
    assert 7_200.0 in fresh.learned.follow_ups
