"""Chat Completions replies as OpenAI-compatible hosts really send them, through the official
`openai` SDK, its default transport sending real HTTP/1.1 to a keep-alive loopback server
(`wire_server`).

Shapes, from the hosts' documentation:
- OpenRouter, "Tool & Function Calling" and "Reasoning Tokens" > "Preserving reasoning
  blocks" (https://openrouter.ai/docs/use-cases/reasoning-tokens#preserving-reasoning-blocks):
  a call to a tool whose parameters are all optional may come without `arguments`;
  `reasoning` (text) and `reasoning_details` (typed items, `reasoning.text` with a
  `signature`) are to be sent back unchanged with the assistant message;
- OpenRouter, "Usage Accounting" (https://openrouter.ai/docs/use-cases/usage-accounting):
  `prompt_tokens_details.cached_tokens` and `cache_write_tokens`;
- Mistral, API reference "Chat Completion" > ToolCall (https://docs.mistral.ai/api): `id`,
  `function`, `index`, and an optional `type` the replies leave out;
- Groq, "Reasoning" (https://console.groq.com/docs/reasoning), Cerebras and Ollama's
  OpenAI compatibility: the reasoning text in `message.reasoning`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.wire_servers import WireServer, openai_client
from warmloop import Agent, RequestFailed, Transcript, check_pairing, tool
from warmloop.errors import ProviderError
from warmloop.exchange.response_facts import normalise_usage
from warmloop.facts.usage import prompt_split
from warmloop.messages import AssistantTurn, ToolResult
from warmloop.providers.openai.chat import OpenAICompatibleModel

URL = "https://gateway.test/v1"
Reply = dict[str, Any]


@tool
def now() -> str:
    """The current time (no parameters)."""
    return "12:00"


@tool
def lookup(key: str = "k") -> str:
    """Look a key up.

    Args:
        key: The key.
    """
    return f"value of {key}"


def completion(message: Reply, usage: Reply | None = None) -> Reply:
    body: Reply = {
        "id": "gen-1",
        "object": "chat.completion",
        "created": 1767258000,
        "model": "some/model",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def calls(*items: Reply, **fields: Any) -> Reply:
    return {"role": "assistant", "content": None, "tool_calls": list(items), **fields}


SUBMIT = calls(
    {
        "id": "call_s",
        "type": "function",
        "function": {"name": "submit", "arguments": '{"answer": "done"}'},
    }
)


class Host:
    """A host served by the loopback `wire_server`: answers request k with `replies[k]`,
    keeps every request body."""

    def __init__(self, *replies: Reply | Callable[[httpx2.Request], httpx2.Response]) -> None:
        self.replies = list(replies)
        self.bodies: list[Reply] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.bodies.append(json.loads(request.content))
        reply = self.replies[len(self.bodies) - 1]
        return reply(request) if callable(reply) else httpx2.Response(200, json=reply)

    def model(self, wire: WireServer) -> OpenAICompatibleModel:
        client = openai_client(wire, self, api_key="k", max_retries=0)
        # The window is told: these replies are about what a host answers, not discovery.
        return OpenAICompatibleModel(f"{URL}#some/model", client=client, context_window=32_768)

    def echoed(self, request: int) -> Reply:
        """The first assistant message the host got back in request `request`."""
        return next(m for m in self.bodies[request]["messages"] if m["role"] == "assistant")


@pytest.mark.parametrize(
    "function",
    [{"name": "now"}, {"name": "now", "arguments": None}],
    ids=["arguments-missing", "arguments-null"],
)
async def test_a_call_without_arguments_runs_with_none_and_is_echoed_as_sent(
    wire_server: WireServer,
    function: Reply,
) -> None:
    sent = {"id": "call_1", "type": "function", "function": function}
    host = Host(completion(calls(sent)), completion(SUBMIT))
    run = await Agent(host.model(wire_server), tools=[now]).run("What time is it?")
    result = next(m for m in run.transcript if isinstance(m, ToolResult))
    assert (result.content, result.is_error) == ("12:00", False)
    assert host.echoed(1)["tool_calls"] == [sent]  # byte for byte what the host sent
    check_pairing(run.transcript.messages)
    assert Transcript.load(run.transcript.dump()) == run.transcript


async def test_mistral_tool_calls_without_a_type_run_and_are_echoed_as_sent(
    wire_server: WireServer,
) -> None:
    function = {"name": "lookup", "arguments": '{"key": "a"}'}
    sent: Reply = {"id": "D681PevKs", "function": function, "index": 0}
    host = Host(completion(calls(sent)), completion(SUBMIT))
    run = await Agent(host.model(wire_server), tools=[lookup]).run("Look up a.")
    result = next(m for m in run.transcript if isinstance(m, ToolResult))
    assert result.content == "value of a"
    assert host.echoed(1)["tool_calls"] == [sent]


MAGISTRAL_CONTENT = [
    {"type": "thinking", "thinking": [{"type": "text", "text": "The user wants a's value."}]},
    {"type": "text", "text": "Looking it up."},
]
"""Mistral's reasoning models (docs: Capabilities > Reasoning) answer `content` as a list of
`thinking` chunks and `text` chunks; the thinking must go back as it came."""


async def test_mistral_reasoning_content_as_blocks_runs_and_is_echoed_as_sent(
    wire_server: WireServer,
) -> None:
    function = {"name": "lookup", "arguments": '{"key": "a"}'}
    call = {"id": "call_m", "type": "function", "function": function}
    message = {"role": "assistant", "content": MAGISTRAL_CONTENT, "tool_calls": [call]}
    host = Host(completion(message), completion(SUBMIT))
    run = await Agent(host.model(wire_server), tools=[lookup]).run("Look up a.")
    turn = next(m for m in run.transcript if isinstance(m, AssistantTurn))
    assert (turn.text, turn.reasoning) == ("Looking it up.", "The user wants a's value.")
    assert host.echoed(1)["content"] == MAGISTRAL_CONTENT


OPENROUTER_DETAILS = [
    {
        "type": "reasoning.text",
        "text": "The user wants the value of a.",
        "signature": "EqoBCkgIARABGAIiQF",
        "id": "rs_1",
        "format": "anthropic-claude-v1",
        "index": 0,
    }
]


@pytest.mark.parametrize(
    ("fields", "thought"),
    [
        ({"reasoning": "Groq: look it up first."}, "Groq: look it up first."),
        (
            {"reasoning": "The user wants a.", "reasoning_details": OPENROUTER_DETAILS},
            "The user wants a.",
        ),
        ({"reasoning_details": OPENROUTER_DETAILS}, "The user wants the value of a."),
        ({"reasoning_content": "DeepSeek thinks."}, "DeepSeek thinks."),
    ],
    ids=["groq-cerebras-ollama", "openrouter-both", "openrouter-details-only", "deepseek"],
)
async def test_every_reasoning_field_a_host_returns_is_kept_and_echoed(
    wire_server: WireServer, fields: Reply, thought: str
) -> None:
    sent = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    host = Host(completion(calls(sent, **fields)), completion(SUBMIT))
    run = await Agent(host.model(wire_server), tools=[lookup]).run("Look up a.")
    turn = next(m for m in run.transcript if isinstance(m, AssistantTurn))
    assert turn.reasoning == thought
    echoed = host.echoed(1)
    assert {k: echoed[k] for k in fields} == fields


async def test_overlapping_cache_counters_never_add_up_to_more_than_the_prompt(
    wire_server: WireServer,
) -> None:
    # OpenRouter routing to Gemini reported both counters at nearly the whole prompt.
    usage = {
        "prompt_tokens": 10_000,
        "completion_tokens": 20,
        "total_tokens": 10_020,
        "prompt_tokens_details": {"cached_tokens": 9_800, "cache_write_tokens": 9_790},
    }
    host = Host(completion(SUBMIT, usage))
    run = await Agent(host.model(wire_server)).run("Answer.")
    got = run.requests[0].usage
    # Reads first (what the cache served); writes only within what is left of the prompt.
    assert (got.uncached_tokens, got.cache_read_tokens, got.cache_write_tokens) == (0, 9_800, 200)
    assert got.prompt_tokens == 10_000
    assert got.cache_hit_rate == pytest.approx(0.98)


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": 10_000, "completion_tokens": 20}
        | {"prompt_tokens_details": {"cached_tokens": 9_800, "cache_write_tokens": 9_790}},
        {"input_tokens": 10_000, "output_tokens": 20, "total_tokens": 10_020}
        | {"input_tokens_details": {"cached_tokens": 9_800, "cache_write_tokens": 9_790}},
    ],
    ids=["chat", "responses"],
)
def test_the_audit_reads_overlapping_counters_the_same_way(usage: Reply) -> None:
    got = normalise_usage(usage)
    assert (got.uncached_tokens, got.cache_read_tokens, got.cache_write_tokens) == (0, 9_800, 200)


@given(st.integers(-5, 10**6), st.integers(-5, 10**6), st.integers(-5, 10**6))
def test_a_prompt_split_always_adds_up_to_the_prompt(prompt: int, read: int, wrote: int) -> None:
    uncached, hit, written = prompt_split(prompt, read, wrote)
    assert min(uncached, hit, written) >= 0
    assert uncached + hit + written == max(prompt, 0)
    assert hit <= max(read, 0)
    assert written <= max(wrote, 0)


async def test_repeated_call_ids_become_unique_the_same_way_every_time(
    wire_server: WireServer,
) -> None:
    # A server numbering calls per turn: `call_0` in every turn, and twice in the first.
    def reply(*names: str) -> Reply:
        arguments = {"submit": '{"answer": "done"}'}
        items = [
            {
                "id": "call_0",
                "type": "function",
                "function": {"name": n, "arguments": arguments.get(n, "{}")},
            }
            for n in names
        ]
        return completion(calls(*items))

    host = Host(reply("lookup", "now"), reply("now"), reply("submit"))
    run = await Agent(host.model(wire_server), tools=[lookup, now]).run("Go.")
    ids = [c.id for m in run.transcript if isinstance(m, AssistantTurn) for c in m.tool_calls]
    assert ids == ["call_0", "call_0-2", "call_0-3", "call_0-4"]
    check_pairing(run.transcript.messages)
    assert Transcript.load(run.transcript.dump()) == run.transcript
    sent = [m for m in host.bodies[-1]["messages"] if m["role"] in ("assistant", "tool")]
    assert [m.get("tool_call_id") for m in sent if m["role"] == "tool"] == ids[:3]


JSON = {"content-type": "application/json"}


MALFORMED: dict[str, tuple[Callable[[httpx2.Request], httpx2.Response], str]] = {
    "choice-without-message": (
        lambda r: httpx2.Response(200, json={"id": "x", "choices": [{"index": 0}]}),
        "the first choice has no message",
    ),
    "no-choices": (lambda r: httpx2.Response(200, json={"id": "x"}), "has no choices"),
    "content-not-text": (
        lambda r: httpx2.Response(200, json=completion({"role": "assistant", "content": 5})),
        "content is neither text nor a list of blocks",
    ),
    "tool-calls-not-a-list": (
        lambda r: httpx2.Response(200, json=completion(calls() | {"tool_calls": "x"})),
        "tool_calls is a string, not a list",
    ),
    "call-without-name": (
        lambda r: httpx2.Response(200, json=completion(calls({"id": "a", "function": {}}))),
        "tool call 0 has no function name",
    ),
    "html-page": (
        lambda r: httpx2.Response(200, text="<!DOCTYPE html><html>Bad gateway</html>"),
        "not JSON (an HTML page",
    ),
    "truncated-json": (
        lambda r: httpx2.Response(200, content=b'{"id": "x", "choi', headers=JSON),
        "not JSON (cut short",
    ),
    "json-list": (lambda r: httpx2.Response(200, json=[1, 2]), "the body is a JSON list"),
    "event-stream": (
        lambda r: httpx2.Response(200, text='data: {"id": "x"}\n\n'),
        "do not set stream=True",
    ),
    "connection-cut-mid-body": (
        # 900 bytes declared, 34 sent: the server closes the connection mid-body
        lambda r: httpx2.Response(
            200, headers={"content-length": "900"}, content=b'{"id": "gen-1", "choices": [{"mess'
        ),
        "closed before the whole reply arrived",
    ),
}


@pytest.mark.parametrize("name", list(MALFORMED))
async def test_a_malformed_reply_is_a_provider_error_naming_what_was_wrong(
    wire_server: WireServer, name: str
) -> None:
    reply, expected = MALFORMED[name]
    host = Host(reply)
    with pytest.raises(RequestFailed, match=re.escape(expected)) as caught:
        await Agent(host.model(wire_server)).run("Answer.")
    assert isinstance(caught.value.__cause__, ProviderError)
    assert "cannot connect" not in str(caught.value)
    assert [m.kind for m in caught.value.transcript] == ["system", "user"]  # as before it
