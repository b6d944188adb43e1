"""The Gemini provider through the real google-genai SDK, its default transport sending real
HTTP/1.1 to a keep-alive loopback server (`wire_server`); render-only tests (and the timeout
test, a transport failure) keep a mocked transport.

Responses are shaped as the Gemini API reference documents them:
- GenerateContentResponse, Candidate, UsageMetadata:
  https://ai.google.dev/api/generate-content#v1beta.GenerateContentResponse
- Content / Part (text, thought, functionCall, thoughtSignature):
  https://ai.google.dev/api/caching#Content and https://ai.google.dev/api/caching#Part
- Thought signatures (on the first functionCall part of a turn, to be returned as is):
  https://ai.google.dev/gemini-api/docs/thought-signatures
- Error bodies ({"error": {"code", "message", "status"}}):
  https://ai.google.dev/gemini-api/docs/troubleshooting#error-codes
"""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from google import genai
from google.genai import types
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import scenario
from tests.support.wire import WireLog, wire_stream
from tests.support.wire_servers import WireServer, gemini_client
from warmloop import (
    Agent,
    AssistantTurn,
    ConfigurationError,
    Notice,
    ProviderUnavailable,
    RequestFailed,
    SystemText,
    ToolCall,
    ToolResult,
    Transcript,
    UserText,
    check_pairing,
)
from warmloop.facts.usage import Usage
from warmloop.providers.gemini.format import DETAILS_KEY, GeminiRenderer
from warmloop.providers.gemini.model import GeminiModel
from warmloop.providers.select import resolve_model
from warmloop.wire.stream import dumps

MODEL = "gemini-2.5-flash"
Handler = Callable[[httpx.Request], httpx.Response]


def make_model(handler: Handler, **options: Any) -> GeminiModel:
    """A GeminiModel whose SDK client talks to `handler` instead of the network."""
    transport = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    client = genai.Client(
        api_key="test-key", http_options=types.HttpOptions(httpx_async_client=transport)
    )
    return GeminiModel(MODEL, client=client, retry_delay=0, **options)


def served_model(wire: WireServer, handler: Handler, **options: Any) -> GeminiModel:
    """A GeminiModel whose SDK client, its default transport, talks to `handler` served by
    the keep-alive loopback server `wire`."""
    return GeminiModel(MODEL, client=gemini_client(wire, handler), retry_delay=0, **options)


def signature(k: int) -> bytes:
    # Bytes whose standard base64 has '+' and '/', so the SDK's re-encoding is exercised.
    return b"\xfb\xff\xbf sig " + str(k).encode()


def response_for(step: scenario.Step, k: int, usage: dict[str, int]) -> dict[str, Any]:
    """Step k as a documented GenerateContentResponse (see the module docstring)."""
    parts: list[dict[str, Any]] = []
    if step.reasoning:
        parts.append({"text": step.reasoning, "thought": True})
    if step.text:
        parts.append({"text": step.text})
    for i, (name, args) in enumerate(step.calls):
        part: dict[str, Any] = {"functionCall": {"name": name, "args": args}}
        if i == 0:  # the first functionCall part carries the turn's signature
            part["thoughtSignature"] = base64.b64encode(signature(k)).decode()
        parts.append(part)
    return {
        "candidates": [
            {"content": {"parts": parts, "role": "model"}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": usage,
        "modelVersion": MODEL,
        "responseId": f"resp-{k}",
    }


def error_response(code: int, status: str, message: str, **headers: str) -> httpx.Response:
    """An error as the troubleshooting page documents its body."""
    body = {"error": {"code": code, "message": message, "status": status}}
    return httpx.Response(code, json=body, headers=headers)


async def test_scenario_runs_cache_warm_through_the_sdk(
    wire_server: WireServer, wire_log: WireLog
) -> None:
    steps = scenario.steps()
    bodies: list[dict[str, Any]] = []
    expected: list[Usage] = []

    def handler(request: httpx.Request) -> httpx.Response:
        k = len(bodies)
        bodies.append(json.loads(request.content))
        wire_log.record("gemini", wire_stream(request.content, "contents"))
        prompt = len(request.content) // 4
        cached = expected[-1].prompt_tokens if expected else 0
        usage = {"promptTokenCount": prompt, "cachedContentTokenCount": cached}
        usage |= {"candidatesTokenCount": 10 + k, "totalTokenCount": prompt + 10 + k}
        if steps[k].reasoning:
            usage["thoughtsTokenCount"] = 7
        thoughts = usage.get("thoughtsTokenCount", 0)
        expected.append(
            Usage.of_parts(prompt - cached, cached, 0, 10 + k + thoughts, reasoning_tokens=thoughts)
        )
        return httpx.Response(200, json=response_for(steps[k], k, usage))

    model = served_model(wire_server, handler)
    agent = Agent(model, tools=scenario.TOOLS, max_steps=scenario.STEPS)
    run = await agent.run("Use the tools, then submit.")

    assert run.outputs.model_dump() == {"answer": "finished"}
    check_pairing(run.transcript.messages)
    assert len(bodies) == scenario.STEPS
    assert [r.usage for r in run.requests] == expected
    # The prompt's head never changes: tools, system instruction, generation config.
    for key in ("tools", "systemInstruction", "generationConfig"):
        assert len({json.dumps(b[key]) for b in bodies}) == 1, key
    assert "system-reminder" not in json.dumps(bodies[-1]["systemInstruction"])
    for body in bodies:
        roles = [c["role"] for c in body["contents"]]
        assert roles == ["user", "model"] * (len(roles) // 2) + ["user"]

    turns = [m for m in run.transcript if isinstance(m, AssistantTurn)]
    for k, (step, turn) in enumerate(zip(steps, turns, strict=True)):
        assert turn.reasoning == step.reasoning
        assert turn.text == step.text
        assert [(c.id, c.name) for c in turn.tool_calls] == [
            (f"call_{k}_{i}", name) for i, (name, _) in enumerate(step.calls)
        ]
        assert [c.arguments for c in turn.tool_calls] == [
            json.dumps(args, separators=(",", ":")) for _, args in step.calls
        ]
    for k, step in enumerate(steps[:-1]):
        *_, sent_turn, results = bodies[k + 1]["contents"]
        thought = [p for p in sent_turn["parts"] if p.get("thought")]
        assert thought == ([{"text": step.reasoning, "thought": True}] if step.reasoning else [])
        calls = [p for p in sent_turn["parts"] if "functionCall" in p]
        assert [(p["functionCall"]["name"], p["functionCall"]["args"]) for p in calls] == list(
            step.calls
        )
        assert base64.urlsafe_b64decode(calls[0]["thoughtSignature"]) == signature(k)
        responses = [p["functionResponse"] for p in results["parts"] if "functionResponse" in p]
        assert [r["name"] for r in responses] == [name for name, _ in step.calls]
        for r, (name, args) in zip(responses, step.calls, strict=True):
            failing = name in ("explode", "no_such_tool") or args == {"a": "x"}
            assert list(r["response"]) == (["error"] if failing else ["output"])

    # The one-step-left notice is user text in place, in the newest turn only.
    notice = "<system-reminder>One step left: call submit next.</system-reminder>"
    last = bodies[-1]["contents"][-1]["parts"]
    assert last[-1] == {"text": notice}
    assert all("functionResponse" in p for p in last[:-1])
    assert all(notice not in json.dumps(b) for b in bodies[:-1])

    # A dumped and reloaded transcript renders the same bytes with a fresh model.
    fresh = served_model(wire_server, handler)
    loaded = Transcript.load(run.transcript.dump())
    assert fresh.render(loaded, agent.tool_specs) == model.render(run.transcript, agent.tool_specs)


async def test_usage_is_parsed_from_a_documented_response(wire_server: WireServer) -> None:
    # UsageMetadata: https://ai.google.dev/api/generate-content#UsageMetadata
    # promptTokenCount includes cachedContentTokenCount; thoughts are billed as output.
    documented = {
        "candidates": [
            {
                "content": {"parts": [{"text": "Hello."}], "role": "model"},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 5120,
            "cachedContentTokenCount": 4096,
            "candidatesTokenCount": 12,
            "toolUsePromptTokenCount": 30,
            "thoughtsTokenCount": 40,
            "totalTokenCount": 5202,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 5120}],
            "cacheTokensDetails": [{"modality": "TEXT", "tokenCount": 4096}],
        },
        "modelVersion": MODEL,
        "responseId": "r1",
    }
    model = served_model(wire_server, lambda request: httpx.Response(200, json=documented))
    transcript = Transcript([SystemText("Be brief."), UserText("Hi")])
    response = await model.send(model.render(transcript, ()), session_id=transcript.id)
    assert response.usage == Usage(
        input_tokens=5120 + 30,  # the prompt, cached part included, and the tool-use prompt
        cache_read_tokens=4096,
        output_tokens=12 + 40,
        reasoning_tokens=40,
    )
    assert response.turn.text == "Hello."
    assert response.turn.provider_details == {DETAILS_KEY: {"parts": [{"text": "Hello."}]}}


async def test_a_rate_limit_is_retried_into_exactly_one_turn(wire_server: WireServer) -> None:
    calls: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.content)
        if len(calls) == 1:
            return error_response(
                429, "RESOURCE_EXHAUSTED", "Quota exceeded.", **{"retry-after": "0"}
            )
        return httpx.Response(200, json=response_for(scenario.steps()[-1], 0, {}))

    agent = Agent(served_model(wire_server, handler), tools=scenario.TOOLS)
    run = await agent.run("Submit.")
    assert len(calls) == 2
    assert calls[0] == calls[1]
    assert sum(isinstance(m, AssistantTurn) for m in run.transcript) == 1
    assert run.outputs.model_dump() == {"answer": "finished"}


async def test_a_timeout_is_retried() -> None:
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        if len(calls) == 1:
            raise httpx.ReadTimeout("timed out", request=request)
        return httpx.Response(200, json=response_for(scenario.steps()[-1], 0, {}))

    run = await Agent(make_model(handler), tools=scenario.TOOLS).run("Submit.")
    assert len(calls) == 2
    assert run.outputs.model_dump() == {"answer": "finished"}


async def test_server_errors_give_up_after_max_retries(wire_server: WireServer) -> None:
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return error_response(503, "UNAVAILABLE", "The model is overloaded.")

    model = served_model(wire_server, handler, max_retries=2)
    transcript = Transcript([UserText("Hi")])
    # An outage a fleet waits out (warmloop.fleet.retries), unlike a request to fix.
    with pytest.raises(ProviderUnavailable, match=r"503 UNAVAILABLE.*3 attempts"):
        await model.send(model.render(transcript, ()), session_id=transcript.id)
    assert len(calls) == 3


@pytest.mark.parametrize(
    ("code", "status", "hint"),
    [
        (401, "UNAUTHENTICATED", "GEMINI_API_KEY"),
        (403, "PERMISSION_DENIED", "GEMINI_API_KEY"),
        (400, "INVALID_ARGUMENT", "rejected"),
        (404, "NOT_FOUND", "model name"),
    ],
)
async def test_client_errors_fail_at_once_keeping_the_transcript(
    wire_server: WireServer, code: int, status: str, hint: str
) -> None:
    steps = scenario.steps()
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        if len(calls) == 1:
            return httpx.Response(200, json=response_for(steps[0], 0, {}))
        return error_response(code, status, "Request had invalid credentials or arguments.")

    agent = Agent(served_model(wire_server, handler), tools=scenario.TOOLS)
    with pytest.raises(RequestFailed, match=f"{code} {status}") as caught:
        await agent.run("Use the tools.")
    assert hint in str(caught.value)
    assert len(calls) == 2  # no retry
    # system, task, the first turn and its result: nothing appended for the failed request
    assert len(caught.value.transcript) == 4
    assert isinstance(caught.value.transcript[-1], ToolResult)


async def test_call_ids_from_gemini_are_kept_and_echoed(
    wire_server: WireServer, wire_log: WireLog
) -> None:
    bodies: list[dict[str, Any]] = []
    replies = [
        [{"functionCall": {"id": "fc-a", "name": "lookup", "args": {"key": "k"}}}],
        [{"functionCall": {"id": "fc-b", "name": "submit", "args": {"answer": "finished"}}}],
    ]

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        wire_log.record("ids", wire_stream(request.content, "contents"))
        content = {"parts": replies[len(bodies) - 1], "role": "model"}
        return httpx.Response(200, json={"candidates": [{"content": content, "index": 0}]})

    run = await Agent(served_model(wire_server, handler), tools=scenario.TOOLS).run("Look up k.")
    first = next(m for m in run.transcript if isinstance(m, AssistantTurn))
    assert first.tool_calls[0].id == "fc-a"
    response = bodies[1]["contents"][-1]["parts"][0]["functionResponse"]
    assert response["id"] == "fc-a"
    assert response["name"] == "lookup"


def test_a_turn_from_another_model_renders_as_parts() -> None:
    model = make_model(lambda request: httpx.Response(500))
    turn = AssistantTurn(
        text="Checking.",
        reasoning="Need the value.",
        tool_calls=(ToolCall("x1", "lookup", '{"key":"k"}'), ToolCall("x2", "add", "{oops")),
    )
    transcript = Transcript(
        [
            SystemText("Sys."),
            UserText("Task."),
            turn,
            ToolResult("x1", "lookup", "v"),
            ToolResult("x2", "add", "bad", is_error=True),
            Notice("New tool: add."),
        ]
    )
    contents = model.render(transcript, ()).payload["contents"]
    assert contents[1] == {
        "role": "model",
        "parts": [
            {"text": "Need the value.", "thought": True},
            {"text": "Checking."},
            {"functionCall": {"name": "lookup", "args": {"key": "k"}}},
            {"functionCall": {"name": "add", "args": {"raw_arguments": "{oops"}}},
        ],
    }
    # Foreign call ids are not Gemini's: results are matched by order, without an id.
    assert contents[2] == {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "lookup", "response": {"output": "v"}}},
            {"functionResponse": {"name": "add", "response": {"error": "bad"}}},
            {"text": "<system-reminder>New tool: add.</system-reminder>"},
        ],
    }


def test_missing_key_names_both_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match=r"GEMINI_API_KEY.*GOOGLE_API_KEY"):
        GeminiModel(MODEL)
    monkeypatch.setenv("GOOGLE_API_KEY", "from-google")
    model = resolve_model(f"gemini:{MODEL}")
    assert isinstance(model, GeminiModel)
    assert model.name == f"gemini:{MODEL}"


step_shapes = st.lists(
    st.tuples(
        st.integers(0, 3),  # calls in the turn
        st.booleans(),  # reasoning
        st.booleans(),  # from Gemini (raw parts, native ids) or from elsewhere
        st.booleans(),  # a notice after the results
        st.booleans(),  # first result is an error
    ),
    max_size=8,
)


@settings(max_examples=40, deadline=None)
@given(step_shapes)
def test_requests_only_append_and_the_memo_matches_a_fresh_render(
    shapes: list[tuple[int, bool, bool, bool, bool]],
) -> None:
    renderer = GeminiRenderer(MODEL)
    transcript = Transcript([SystemText("Sys."), UserText("Task.")])
    streams = [renderer.render(transcript, ()).stream]
    for k, (n, reasoning, native, notice, error) in enumerate(shapes):
        calls = tuple(ToolCall(f"c{k}_{i}", "lookup", f'{{"key":"{i}"}}') for i in range(n))
        parts = [{"functionCall": {"id": c.id, "name": c.name, "args": {}}} for c in calls]
        details: dict[str, Any] = (
            {DETAILS_KEY: {"parts": parts or [{"text": "ok"}]}} if native else {}
        )
        transcript.append(AssistantTurn("ok", "why" if reasoning else "", calls, details))
        for i, c in enumerate(calls):
            transcript.append(ToolResult(c.id, c.name, f"r{i}", is_error=error and i == 0))
        if notice:
            transcript.append(Notice(f"notice {k}"))
        if not calls:
            transcript.append(UserText("Call a tool."))
        streams.append(renderer.render(transcript, ()).stream)
    assert all(b.startswith(a) for a, b in itertools.pairwise(streams))
    rendered = renderer.render(transcript, ())
    assert GeminiRenderer(MODEL).render(transcript, ()) == rendered
    # The prefix stream is the payload's conversation, content by content.
    assert list(rendered.wire.items) == [dumps(c) + "," for c in rendered.payload["contents"]]
