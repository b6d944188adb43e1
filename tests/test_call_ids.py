"""Hosts that repeat tool-call ids, on every wire format, through the real SDKs over mocked
transports: one rule (`Transcript.unique_calls`) renames them, and each renderer echoes the
renamed id on the call and its result, so pairing holds on the wire and in the transcript.

Reply shapes are each provider's documented ones (see the provider test modules); the ids
are what recorded traffic showed: a Bedrock host's Responses-compatible API sent
`call_id: "call_0"` on every turn, and hosts numbering calls per turn repeat an id within one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anthropic
import httpx
import httpx2
import pytest
from openai import AsyncOpenAI

from tests.providers.test_chat_replies import calls as chat_message
from tests.providers.test_chat_replies import completion
from tests.providers.test_gemini import make_model as gemini_model
from tests.providers.test_openai_responses import response_body, usage_json
from tests.support.wire import WireLog, wire_stream
from warmloop import Agent, AssistantTurn, Run, Transcript, check_pairing, tool
from warmloop.providers.anthropic.model import AnthropicModel
from warmloop.providers.base import Model
from warmloop.providers.openai.chat import OpenAICompatibleModel
from warmloop.providers.openai.responses import OpenAIResponsesModel

Body = dict[str, Any]
Call = tuple[str, str, dict[str, Any]]
"""A call as the host sends it: (id, tool name, arguments)."""
Answer = Callable[[bytes], Body]
"""The fake host: a request body in, the reply's JSON out."""

EVERY_TURN: list[list[Call]] = [
    [("call_0", "lookup", {"key": "a"})],
    [("call_0", "lookup", {"key": "b"})],
    [("call_0", "submit", {"answer": "done"})],
]
WITHIN_TURN: list[list[Call]] = [
    [("x", "lookup", {"key": "a"}), ("x", "lookup", {"key": "b"})],
    [("s", "submit", {"answer": "done"})],
]
SCRIPTS = {
    "every-turn": (EVERY_TURN, ["call_0", "call_0-2", "call_0-3"]),
    "within-turn": (WITHIN_TURN, ["x", "x-2", "s"]),
}


@tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: The key.
    """
    return f"value of {key}"


def arguments(args: dict[str, Any]) -> str:
    return json.dumps(args, separators=(", ", ": "))


def chat_model(answer: Answer) -> Model:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, json=answer(request.content))

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    client = AsyncOpenAI(api_key="k", base_url="https://gateway.test/v1", http_client=http)
    # The window is told: these tests are about call ids, not discovery.
    return OpenAICompatibleModel(
        "https://gateway.test/v1#some/model", client=client, context_window=32_768
    )


def chat_reply(k: int, calls: list[Call]) -> Body:
    # Mistral's form (no `type`, an `index`), which is echoed raw: the renamed id must be
    # written into the echo, not only into the transcript.
    items = [
        {"id": i, "function": {"name": n, "arguments": arguments(a)}, "index": j}
        for j, (i, n, a) in enumerate(calls)
    ]
    usage = {"prompt_tokens": 100 + k, "completion_tokens": 10, "total_tokens": 110 + k}
    return completion(chat_message(*items), usage)


def chat_pairs(body: Body) -> tuple[list[str], list[str]]:
    messages = body["messages"]
    calls = [c["id"] for m in messages if m["role"] == "assistant" for c in m["tool_calls"]]
    return calls, [m["tool_call_id"] for m in messages if m["role"] == "tool"]


def responses_model(answer: Answer) -> Model:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, json=answer(request.content))

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    return OpenAIResponsesModel("gpt-5", client=AsyncOpenAI(api_key="sk-test", http_client=http))


def responses_reply(k: int, calls: list[Call]) -> Body:
    output: list[Body] = [
        {
            "id": f"rs_{k}",
            "type": "reasoning",
            "summary": [],
            "encrypted_content": f"gAAAAB-opaque-{k}",
        }
    ]
    output += [
        {
            "id": f"fc_{k}_{j}",
            "type": "function_call",
            "status": "completed",
            "call_id": i,
            "name": n,
            "arguments": arguments(a),
        }
        for j, (i, n, a) in enumerate(calls)
    ]
    return response_body(k, output, usage_json(100 + k, 0, 0, 10))


def responses_pairs(body: Body) -> tuple[list[str], list[str]]:
    items = body["input"]
    calls = [i["call_id"] for i in items if i["type"] == "function_call"]
    return calls, [i["call_id"] for i in items if i["type"] == "function_call_output"]


def anthropic_model(answer: Answer) -> Model:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, json=answer(request.content))

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    client = anthropic.AsyncAnthropic(api_key="sk-test", http_client=http, max_retries=0)
    return AnthropicModel("claude-sonnet-4-6", client=client)


def anthropic_reply(k: int, calls: list[Call]) -> Body:
    content: list[Body] = [{"type": "thinking", "thinking": "Look.", "signature": f"sig{k}=="}]
    content += [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in calls]
    return {
        "id": f"msg_{k:03d}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": content,
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 100 + k, "output_tokens": 10},
    }


def anthropic_pairs(body: Body) -> tuple[list[str], list[str]]:
    blocks = [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]]
    calls = [b["id"] for b in blocks if b["type"] == "tool_use"]
    return calls, [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]


def gemini(answer: Answer) -> Model:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=answer(request.content))

    return gemini_model(handler)


def gemini_reply(k: int, calls: list[Call]) -> Body:
    # Ids Gemini itself puts on functionCall parts are echoed on the functionResponse.
    parts = [{"functionCall": {"id": i, "name": n, "args": a}} for i, n, a in calls]
    usage = {"promptTokenCount": 100 + k, "candidatesTokenCount": 10}
    content = {"parts": parts, "role": "model"}
    return {"candidates": [{"content": content, "index": 0}], "usageMetadata": usage}


def gemini_pairs(body: Body) -> tuple[list[str], list[str]]:
    parts = [p for c in body["contents"] for p in c["parts"]]
    calls = [p["functionCall"]["id"] for p in parts if "functionCall" in p]
    return calls, [p["functionResponse"]["id"] for p in parts if "functionResponse" in p]


@dataclass(frozen=True)
class Wire:
    """One wire format: its model over a fake host, its reply shape, and where the call
    ids of a request sit (on the calls, and on their results)."""

    conversation: str
    model: Callable[[Answer], Model]
    reply: Callable[[int, list[Call]], Body]
    pairs: Callable[[Body], tuple[list[str], list[str]]]


WIRES = {
    "chat-completions": Wire("messages", chat_model, chat_reply, chat_pairs),
    "responses": Wire("input", responses_model, responses_reply, responses_pairs),
    "anthropic": Wire("messages", anthropic_model, anthropic_reply, anthropic_pairs),
    "gemini": Wire("contents", gemini, gemini_reply, gemini_pairs),
}


async def run_host(
    wire: Wire, script: list[list[Call]], wire_log: WireLog, session: str
) -> tuple[Run, list[Body]]:
    """One run against a host answering request k with `script[k]`; the bodies it got."""
    bodies: list[Body] = []

    def answer(content: bytes) -> Body:
        bodies.append(json.loads(content))
        wire_log.record(session, wire_stream(content, wire.conversation))
        return wire.reply(len(bodies) - 1, script[len(bodies) - 1])

    run = await Agent(wire.model(answer), tools=[lookup]).run("Look up a and b.")
    return run, bodies


@pytest.mark.parametrize("script", SCRIPTS.values(), ids=SCRIPTS.keys())
@pytest.mark.parametrize("wire", WIRES.values(), ids=WIRES.keys())
async def test_repeated_call_ids_are_renamed_once_and_pair_on_the_wire(
    wire: Wire, script: tuple[list[list[Call]], list[str]], wire_log: WireLog
) -> None:
    replies, expected = script
    run, bodies = await run_host(wire, replies, wire_log, "first")
    assert run.outputs.model_dump() == {"answer": "done"}
    ids = [c.id for m in run.transcript if isinstance(m, AssistantTurn) for c in m.tool_calls]
    assert ids == expected
    check_pairing(run.transcript.messages)
    assert Transcript.load(run.transcript.dump()) == run.transcript
    assert len(bodies) == len(replies)
    for body in bodies:  # every request: each call and its result carry the same id
        calls, results = wire.pairs(body)
        assert calls == results == expected[: len(calls)]
    assert len(calls) == len(expected) - 1  # the last request holds every renamed call
    # Same host, same script: the same names and the same bytes, request by request.
    _, again = await run_host(wire, replies, wire_log, "second")
    assert [b[wire.conversation] for b in again] == [b[wire.conversation] for b in bodies]
