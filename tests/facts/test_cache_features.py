"""OpenAI's newest cache controls, and every newer usage counter, parsed and priced.

From OpenAI's prompt caching guide (https://developers.openai.com/api/docs/guides/
prompt-caching, "Prompt cache breakpoints" and "Prompt cache retention") and the API
reference ("The response object" > usage; Chat "The chat completion object" > usage):
- GPT-5.6 and later take `prompt_cache_breakpoint: {"mode": "explicit"}` on a content
  block (`input_text` in Responses, `text` in Chat) and `prompt_cache_options.ttl` (`30m`,
  default, or `12h`, Responses only); the implicit breakpoint stays at the newest message;
- Responses usage reports writes as `input_tokens_details.cache_write_tokens`, split by
  retention in `cache_write_tokens_details.ttl_30m_tokens` / `ttl_12h_tokens`, and
  reasoning as `output_tokens_details.reasoning_tokens` (Chat:
  `completion_tokens_details.reasoning_tokens`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
from openai import AsyncOpenAI

from tests.support.wire import WireLog, wire_stream
from warmloop import Agent, tool
from warmloop.facts.price_table import prices_for
from warmloop.facts.pricing import cost_breakdown
from warmloop.facts.usage import Usage
from warmloop.providers.openai import responses as openai_responses
from warmloop.providers.openai.chat import OpenAIChatModel
from warmloop.providers.openai.responses import OpenAIResponsesModel
from warmloop.providers.openai.responses_format import parse_usage

BREAKPOINT = {"mode": "explicit"}


@tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: The key.
    """
    return f"value of {key}"


def response(k: int, output: list[dict[str, Any]], usage: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"resp_{k}",
        "object": "response",
        "created_at": 1767258000 + k,
        "status": "completed",
        "error": None,
        "model": "gpt-5.6-sol",
        "output": output,
        "usage": usage,
    }


def call(k: int, name: str, arguments: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {
            "id": f"fc_{k}",
            "type": "function_call",
            "status": "completed",
            "call_id": f"call_{k}",
            "name": name,
            "arguments": json.dumps(arguments),
        }
    ]


USAGE_56 = {
    "input_tokens": 6_000,
    "input_tokens_details": {
        "cached_tokens": 4_000,
        "cache_write_tokens": 1_500,
        "cache_write_tokens_details": {"ttl_30m_tokens": 1_000, "ttl_12h_tokens": 500},
    },
    "output_tokens": 300,
    "output_tokens_details": {"reasoning_tokens": 120},
    "total_tokens": 6_300,
}


class Endpoint:
    """/v1/responses: a lookup, then submit; keeps each request body."""

    def __init__(self, wire_log: WireLog) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.wire_log = wire_log

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        self.wire_log.record(f"responses-{len(self.bodies) > 2}", wire_stream(body, "input"))
        k = (len(self.bodies) - 1) % 2
        output = call(k, "lookup", {"key": "a"}) if k == 0 else call(k, "submit", {"answer": "v"})
        return httpx2.Response(200, json=response(k, output, USAGE_56))

    def client(self) -> AsyncOpenAI:
        http = httpx2.AsyncClient(transport=httpx2.MockTransport(self))
        return AsyncOpenAI(api_key="k", http_client=http, max_retries=0)


async def test_gpt_5_6_marks_the_end_of_the_opening_with_an_explicit_breakpoint(
    wire_log: WireLog,
) -> None:
    endpoint = Endpoint(wire_log)
    model = OpenAIResponsesModel("gpt-5.6-sol", client=endpoint.client())
    agent = Agent(model, tools=[lookup], instructions="Answer with the tools.")
    await agent.run("Look up a.")
    await agent.run("Look up a, again.")  # a second session of the same agent
    opening = {
        "type": "message",
        "role": "developer",
        "content": [
            {
                "type": "input_text",
                "text": "Answer with the tools.",
                "prompt_cache_breakpoint": BREAKPOINT,
            }
        ],
    }
    for body in endpoint.bodies:
        assert "instructions" not in body
        assert body["input"][0] == opening  # every session reads the opening's cache entry
        marked = [i for i in body["input"] if "prompt_cache_breakpoint" in json.dumps(i)]
        assert marked == [opening]  # the implicit breakpoint covers the newest message


async def test_older_models_keep_instructions_and_no_breakpoint(wire_log: WireLog) -> None:
    endpoint = Endpoint(wire_log)
    model = OpenAIResponsesModel("gpt-5", client=endpoint.client())
    await Agent(model, tools=[lookup], instructions="Answer.").run("Look up a.")
    assert endpoint.bodies[0]["instructions"] == "Answer."
    assert "prompt_cache_breakpoint" not in json.dumps(endpoint.bodies)


@pytest.mark.parametrize(
    ("model", "retention", "sent"),
    [
        ("gpt-5.6-sol", "12h", {"prompt_cache_options": {"ttl": "12h"}}),
        ("gpt-5.6-luna", "30m", {"prompt_cache_options": {"ttl": "30m"}}),
        ("gpt-5", "24h", {"prompt_cache_retention": "24h"}),
    ],
)
async def test_a_retention_is_sent_the_way_the_model_takes_it(
    model: str, retention: str, sent: dict[str, Any], wire_log: WireLog
) -> None:
    endpoint = Endpoint(wire_log)
    chosen = OpenAIResponsesModel(model, client=endpoint.client(), prompt_cache_retention=retention)
    await Agent(chosen, tools=[lookup]).run("Look up a.")
    body = endpoint.bodies[0]
    assert {k: body[k] for k in sent} == sent
    other = {"prompt_cache_options", "prompt_cache_retention"} - set(sent)
    assert not other & set(body)


async def test_chat_completions_on_gpt_5_6_mark_the_system_message() -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        bodies.append(json.loads(request.content))
        arguments = '{"answer": "v"}'
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c",
                    "type": "function",
                    "function": {"name": "submit", "arguments": arguments},
                }
            ],
        }
        choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
        usage = {
            "prompt_tokens": 2_000,
            "completion_tokens": 40,
            "total_tokens": 2_040,
            "prompt_tokens_details": {"cached_tokens": 1_024, "cache_write_tokens": 900},
            "completion_tokens_details": {"reasoning_tokens": 30},
        }
        body = {"id": "x", "object": "chat.completion", "created": 1, "model": "m"}
        return httpx2.Response(200, json=body | {"choices": [choice], "usage": usage})

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    client = AsyncOpenAI(api_key="k", http_client=http, max_retries=0)
    model = OpenAIChatModel("gpt-5.6-terra", client=client, prompt_cache_retention="30m")
    run = await Agent(model, instructions="Be brief.").run("Answer.")
    system = bodies[0]["messages"][0]
    assert system == {
        "role": "system",
        "content": [{"type": "text", "text": "Be brief.", "prompt_cache_breakpoint": BREAKPOINT}],
    }
    assert bodies[0]["prompt_cache_options"] == {"ttl": "30m"}
    assert run.requests[0].usage == Usage.of_parts(76, 1_024, 900, 40, reasoning_tokens=30)


def test_responses_usage_splits_writes_by_retention_and_counts_reasoning() -> None:
    usage = parse_usage(USAGE_56)
    assert usage == Usage(
        input_tokens=6_000,  # every input token: 500 uncached, 4,000 read, 1,500 written
        cache_read_tokens=4_000,
        cache_write_tokens=1_500,
        output_tokens=300,
        cache_write_12h_tokens=500,
        reasoning_tokens=120,
    )


def test_writes_are_priced_at_their_retention_rate() -> None:
    prices = prices_for("openai:gpt-5.6-sol")
    assert prices is not None
    rates = prices.rates
    cost = cost_breakdown(parse_usage(USAGE_56), prices)
    expected = 1_000 * rates.cache_write("30m") + 500 * rates.cache_write("12h")
    assert cost.cache_write == pytest.approx(expected * 1e-6)
    assert rates.cache_write("12h") == pytest.approx(2.5 * rates.input)  # the guide's rule
    assert cost.output == pytest.approx(300 * rates.output * 1e-6)  # reasoning is output


def test_server_side_compaction_is_billed_on_top_of_the_request() -> None:
    prices = prices_for("anthropic:claude-sonnet-4-6")
    assert prices is not None
    request = Usage(900, 0, 0, 50)
    compacted = Usage(
        900, 0, 0, 50, compaction_input_tokens=180_000, compaction_output_tokens=3_000
    )
    extra = cost_breakdown(compacted, prices).total - cost_breakdown(request, prices).total
    assert extra == pytest.approx(cost_breakdown(Usage(180_000, 0, 0, 3_000), prices).total)


@pytest.mark.parametrize(
    ("model", "sent"),
    [
        ("gpt-5", "24h"),  # sold free beside in-memory: asked for
        ("gpt-4.1", "24h"),
        ("gpt-5-mini", None),  # in-memory only
        ("gpt-5.5", None),  # 24h is its default already
        ("gpt-5.6-sol", None),  # writes billed: the longer TTL is not free
        ("o3", None),  # no table entry: the parameter might be refused
    ],
)
async def test_a_longer_retention_that_costs_nothing_is_asked_for_by_default(
    model: str, sent: str | None, wire_log: WireLog
) -> None:
    endpoint = Endpoint(wire_log)
    chosen = OpenAIResponsesModel(model, client=endpoint.client())
    await Agent(chosen, tools=[lookup]).run("Look up a.")
    assert len(endpoint.bodies) == 2
    assert [b.get("prompt_cache_retention") for b in endpoint.bodies] == [sent, sent]
    assert not any("prompt_cache_options" in b for b in endpoint.bodies)
    assert chosen.facts.profile.ttl == (sent or chosen.facts.profile.ttl)


async def test_a_retention_the_user_names_wins_over_the_free_default(wire_log: WireLog) -> None:
    endpoint = Endpoint(wire_log)
    chosen = OpenAIResponsesModel(
        "gpt-5", client=endpoint.client(), prompt_cache_retention="in_memory"
    )
    await Agent(chosen, tools=[lookup]).run("Look up a.")
    assert {b["prompt_cache_retention"] for b in endpoint.bodies} == {"in_memory"}
    assert chosen.facts.profile.ttl == "in_memory"


@pytest.mark.parametrize(("model", "sent"), [("gpt-5", "24h"), ("gpt-5.6-terra", None)])
async def test_chat_completions_ask_for_the_free_retention_too(
    model: str, sent: str | None
) -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        bodies.append(json.loads(request.content))
        function = {"name": "submit", "arguments": '{"answer": "v"}'}
        tool_call = {"id": "c", "type": "function", "function": function}
        message = {"role": "assistant", "content": None, "tool_calls": [tool_call]}
        choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
        usage = {"prompt_tokens": 2_000, "completion_tokens": 40, "total_tokens": 2_040}
        body = {"id": "x", "object": "chat.completion", "created": 1, "model": "m"}
        return httpx2.Response(200, json=body | {"choices": [choice], "usage": usage})

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    client = AsyncOpenAI(api_key="k", http_client=http, max_retries=0)
    await Agent(OpenAIChatModel(model, client=client)).run("Answer.")
    assert bodies[0].get("prompt_cache_retention") == sent


@pytest.mark.moves_cache_prefix(reason="the continued conversation gains the retention")
async def test_a_conversation_from_before_the_free_default_goes_on_under_it(
    wire_log: WireLog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint, store = Endpoint(wire_log), tmp_path / "sessions.db"
    with monkeypatch.context() as before:  # the model as it was: no parameter by default
        before.setattr(openai_responses, "free_retention", lambda spec: None)
        old = Agent(OpenAIResponsesModel("gpt-5", client=endpoint.client()), tools=[lookup])
    first = await old.run("Look up a.", session="s", store=store)
    new = OpenAIResponsesModel("gpt-5", client=endpoint.client())
    # A stored session resumed by a new process: the guard lives in the process, so the
    # parameter appearing is not reported; the provider may miss its cache once.
    resumed = Agent(new, tools=[lookup])
    run = await resumed.run("Look up a, again.", session="s", store=store)
    assert run.outputs.model_dump() == {"answer": "v"}
    assert resumed.busts == []
    # Continued in the same process: the guard reports it once, as a changed parameter.
    continued = Agent(new, tools=[lookup])
    await continued.run("And b.", history=first.transcript)
    retention = [b.get("prompt_cache_retention") for b in endpoint.bodies]
    assert retention == [None, None, "24h", "24h", "24h", "24h"]
    assert [bust.section for bust in continued.busts] == ["request"]
