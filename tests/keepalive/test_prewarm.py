"""Keep-alives through OpenAI's `prompt_cache_options.prewarm` (issue 36): on a model that
takes it (GPT-5.6 and later, `CacheProfile.prewarm`) and a wire format that carries it
(Responses), a keep-alive is the last request marked `prewarm`, generates nothing, and
nothing is appended; the keep-alive rule and the simulator price it with no output.

The SDK's reference (openai 3.57, `ResponseCreateParams.PromptCacheOptions.prewarm`):
"Prepares the prompt cache without generating output. Defaults to `false`. When set to
`true`, overrides the `generate` field to `false`."
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx2

from tests.support.fake_time import FakeTime
from tests.support.held_tool import HeldTool
from tests.support.wire_servers import WireServer, openai_client
from warmloop import Agent, Toolbox
from warmloop.facts.profiles import profile_for
from warmloop.keepalive.ping import answer_tokens, check_payload, keepalive_request
from warmloop.keepalive.rule import pause_costs
from warmloop.messages import AssistantTurn, UserText
from warmloop.providers.openai.responses import OpenAIResponsesModel
from warmloop.providers.select import resolve_model
from warmloop.simulate import Block, CacheSimulator, SimRequest, keepalive
from warmloop.transcript import Transcript

CITIES = "You answer questions about cities. " * 400  # ~3k tokens
HANG_GUARD = 120.0
"""Seconds before a keep-alive that never came counts as missing (a hang guard only)."""
INTERVAL = 1_740.0
"""GPT-5.6's 30-minute TTL less the 60 s margin: when its keep-alive goes out."""


def prewarmed(body: dict[str, Any]) -> bool:
    options = body.get("prompt_cache_options") or {}
    return bool(options.get("prewarm"))


def gpt_5_6(wire: WireServer, bodies: list[dict[str, Any]]) -> OpenAIResponsesModel:
    """GPT-5.6 through the official SDK, its default transport, to the loopback server.
    Answers as the Responses API reference documents ("The response object"): `run_tests`
    first, `submit` once its output is in the input; a prewarm with no output items and no
    output tokens, its prefix read from the cache (`input_tokens_details.cached_tokens`)."""

    def handler(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        bodies.append(body)
        n, tokens = len(bodies), len(request.content) // 4
        usage = {
            "input_tokens": tokens,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": tokens},
            "output_tokens": 20,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": tokens + 20,
        }
        output: list[dict[str, Any]] = []
        if prewarmed(body):
            usage |= {
                "input_tokens_details": {"cached_tokens": tokens, "cache_write_tokens": 0},
                "output_tokens": 0,
                "total_tokens": tokens,
            }
        else:
            done = body["input"][-1].get("type") == "function_call_output"
            name, arguments = ("submit", '{"answer": "2 failed"}') if done else ("run_tests", "{}")
            output = [
                {
                    "id": f"fc_{n}",
                    "type": "function_call",
                    "status": "completed",
                    "call_id": f"call_{n}",
                    "name": name,
                    "arguments": arguments,
                }
            ]
        reply = {
            "id": f"resp_{n}",
            "object": "response",
            "created_at": 1741476542,
            "status": "completed",
            "model": "gpt-5.6-sol",
            "output": output,
            "usage": usage,
        }
        return httpx2.Response(200, json=reply)

    client = openai_client(wire, handler, max_retries=0)  # a stand-in for OpenAI's API
    return OpenAIResponsesModel("gpt-5.6-sol", client=client, cache_key=True)


async def test_a_keep_alive_on_gpt_5_6_sends_prewarm_and_appends_nothing(
    wire_server: WireServer,
) -> None:
    bodies: list[dict[str, Any]] = []
    time = FakeTime()
    held = HeldTool()

    agent = Agent(
        gpt_5_6(wire_server, bodies),
        Toolbox([held.tool], timeout=None),
        instructions=CITIES,
        keepalive=time.policy(),
        on_maintenance=held.seen,
    )
    running = asyncio.create_task(agent.run("Run the tests."))
    await held.started.wait()
    time.advance(INTERVAL)  # the keep-alive is due while the tool runs
    await asyncio.wait_for(held.pinged.wait(), HANG_GUARD)
    held.release.set()
    run = await running
    assert [prewarmed(body) for body in bodies] == [False, True, False]
    first, keep, after = bodies
    # The keep-alive is the request before it byte for byte, marked `prewarm`.
    assert keep == {**first, "prompt_cache_options": {"prewarm": True}}
    assert "max_output_tokens" not in keep  # no answer asked for: none is generated
    (event,) = [e for e in run.maintenance if e.kind == "keepalive"]
    assert event.usage is not None
    assert event.usage.output_tokens == 0
    # Nothing appended: the transcript holds the two real turns, and the request after the
    # tool extends the first by the call and its output only.
    turns = [m for m in run.transcript if isinstance(m, AssistantTurn)]
    assert [call.name for turn in turns for call in turn.tool_calls] == ["run_tests", "submit"]
    assert after["input"][: len(first["input"])] == first["input"]
    assert [item["type"] for item in after["input"][len(first["input"]) :]] == [
        "function_call",
        "function_call_output",
    ]


def test_only_a_model_and_a_format_that_take_prewarm_drop_the_answer() -> None:
    transcript = Transcript([UserText("Which country is Paris in?")])
    cases = {
        "openai:gpt-5.6-sol": (0, True),  # Responses on GPT-5.6: a prewarm
        "openai:gpt-5": (16, False),  # before GPT-5.6: the least answer Responses allows
        "openai-chat:gpt-5.6-sol": (1, False),  # Chat Completions carries no prewarm
    }
    for spec, (answer, marked) in cases.items():
        model = resolve_model(spec, api_key="offline")
        rendered = model.render(transcript, [])
        profile = model.facts.profile
        assert answer_tokens(rendered, profile) == answer, spec
        keep = keepalive_request(rendered, profile)
        assert keep is not None
        assert prewarmed(keep.payload) is marked, spec
        assert check_payload(keep).text == check_payload(rendered).text  # the same prompt


def test_the_rule_and_the_simulator_price_a_prewarm_without_output() -> None:
    profile = profile_for("openai:gpt-5.6-sol")
    assert profile.prewarm
    assert not profile_for("openai:gpt-5").prewarm
    # The rule: a keep-alive's price is its read and the answer's output (here 16 tokens
    # at 8x input); a prewarm pays the read only.
    answered = pause_costs(profile, 20_000, output_ratio=8.0 * 16)
    prewarm = pause_costs(profile, 20_000, output_ratio=8.0 * 0)
    assert answered is not None
    assert prewarm is not None
    assert prewarm.ping == 0.1 * 20_000
    assert answered.ping == prewarm.ping + 128
    # The simulator: a keep-alive of the last request generates nothing on GPT-5.6.
    last = SimRequest(0.0, (Block(20_000, "opening"),), output_tokens=150)
    sim = CacheSimulator(profile)
    sim.request(last)
    ping = keepalive(last, INTERVAL, profile)
    assert ping.output_tokens == 0
    assert ping.blocks == last.blocks
    assert sim.request(ping).cache_read_tokens == 20_000
    assert keepalive(last, INTERVAL, profile_for("openai:gpt-5")).output_tokens == 1
