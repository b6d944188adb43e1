"""Streamed requests through each official SDK (issue 32, must-show 3): a run via
`agent.iter` against a loopback server that speaks the provider's documented streaming
events over HTTP/1.1 keep-alive (`tests/support/wire_streams.py` cites each) yields the
text and the tool call of each reply in order, reports the cache figures the server sent,
and sends the request bodies a non-streamed run sends, apart from the stream flag (and,
on Chat Completions, `stream_options.include_usage`, without which the API sends no usage
on a stream)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tests.support.fake_servers import Reply, ToolUse
from tests.support.wire_servers import WireServer, connect, is_wire_path, scripted
from warmloop import (
    Agent,
    Event,
    RequestAnswered,
    RequestSent,
    Run,
    TextDelta,
    ToolCallDelta,
    ToolStarted,
)

STREAMED = ("anthropic", "openai", "openai-chat", "gemini")
"""One selection per official SDK and wire: Messages, Responses, Chat Completions, Gemini."""
STREAM_FLAGS = ("stream", "stream_options")
"""What a streamed body adds: the flag, and Chat's `include_usage` (the only other key)."""
WRITES_REPORTED = {"anthropic": True, "openai": True, "openai-chat": True, "gemini": False}
"""Gemini's usage has no cache-write count (`usageMetadata`)."""


CONVERSATION = "c_streamed"
"""Both runs' routing key (`prompt_cache_key`), so their bodies can be compared."""


def lookup(key: str) -> str:
    """Look a key up."""
    return f"{key} is beta"


REPLIES: list[Reply] = [
    ToolUse("lookup", {"key": "alpha"}, text="Looking alpha up.", cache_write=1200),
    ToolUse("submit", {"answer": "beta"}, text="Found it.", cache_read=1200, cache_write=64),
]


def unstreamed(body: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in body.items() if key not in STREAM_FLAGS}


async def streamed_run(agent: Agent) -> tuple[list[Event], Run]:
    async with agent.iter("What is alpha?", conversation_id=CONVERSATION) as events:
        seen = [event async for event in events]
    return seen, events.run


def per_request(seen: list[Event]) -> list[list[Event]]:
    """The events of each request: from after its RequestSent to its RequestAnswered."""
    spans: list[list[Event]] = []
    inside = False
    for event in seen:
        if isinstance(event, RequestSent):
            spans.append([])
            inside = True
        elif inside:
            spans[-1].append(event)
            inside = not isinstance(event, RequestAnswered)
    return spans


@pytest.mark.parametrize("prefix", STREAMED)
def test_a_streamed_run_yields_its_deltas_in_order_with_the_servers_usage(
    wire_server: WireServer, prefix: str
) -> None:
    wire_server.serve(scripted(REPLIES))
    plain = Agent(connect(wire_server, prefix), [lookup]).run_sync(
        "What is alpha?", conversation_id=CONVERSATION
    )
    sent_plain = wire_server.requests()
    wire_server.received.clear()
    wire_server.serve(scripted(REPLIES))
    opened = wire_server.connections
    seen, run = asyncio.run(streamed_run(Agent(connect(wire_server, prefix), [lookup])))
    sent_streamed = wire_server.requests()
    assert wire_server.connections == opened + 1  # both streams on one kept-alive connection

    assert run.outputs.model_dump() == plain.outputs.model_dump() == {"answer": "beta"}
    # The same bodies, apart from the stream flag: streaming changes nothing the cache sees.
    assert [unstreamed(body) for body in sent_streamed] == sent_plain
    if prefix == "gemini":  # streamed by its method (the path), not by a flag in the body
        paths = [path for path, _ in wire_server.received if is_wire_path(path)]
        assert [path.rsplit(":", 1)[1] for path in paths] == ["streamGenerateContent"] * 2
    else:
        assert [body["stream"] for body in sent_streamed] == [True, True]
    if prefix == "openai-chat":
        assert {b["stream_options"]["include_usage"] for b in sent_streamed} == {True}

    spans = per_request(seen)
    assert len(spans) == 2
    for span, reply in zip(spans, REPLIES, strict=True):
        assert isinstance(reply, ToolUse)
        answered = span[-1]
        assert isinstance(answered, RequestAnswered)
        texts = [e for e in span if isinstance(e, TextDelta)]
        calls = [e for e in span if isinstance(e, ToolCallDelta)]
        assert len(texts) >= 2  # streamed in pieces, not as one
        assert "".join(e.text for e in texts) == reply.text
        assert span.index(texts[-1]) < span.index(calls[0])  # the text, then the call
        assert calls[0].name == reply.name
        assert {call.index for call in calls} == {0}
        assert json.loads("".join(call.arguments for call in calls)) == reply.arguments
        usage = answered.usage
        assert usage.cache_read_tokens == reply.cache_read
        assert usage.cache_write_tokens == (reply.cache_write if WRITES_REPORTED[prefix] else 0)
    assert [e.record.usage for e in seen if isinstance(e, RequestAnswered)] == [
        r.usage for r in run.requests
    ]
    started = [e.call.name for e in seen if isinstance(e, ToolStarted)]
    assert started == ["lookup"]
