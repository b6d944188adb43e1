"""The OpenAI Responses provider, driven through the official SDK over a keep-alive loopback
server (`wire_server`), its default transport sending real HTTP/1.1.

Responses are shaped as the API reference documents them:
- "Responses > Create a model response > Returns: the Response object"
  (https://platform.openai.com/docs/api-reference/responses/object): `id`, `object`,
  `created_at`, `status`, `model`, `output`, `usage`, ...;
- output items: "message" with `output_text` content, "function_call" with `call_id`,
  `name` and a raw `arguments` string (guide: Function calling, "Handling function
  calls"), "reasoning" with `summary` and `encrypted_content` (guide: Reasoning models,
  "Encrypted reasoning items", requested with `include=["reasoning.encrypted_content"]`);
- `usage.input_tokens_details.cached_tokens` / `cache_write_tokens` and
  `usage.output_tokens_details.reasoning_tokens` (guide: Prompt caching, "Monitoring usage";
  reference: the Response object, `usage`);
- errors as `{"error": {"message", "type", "param", "code"}}` (guide: Error codes).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai import AsyncOpenAI
from openai.types.responses import Response

from tests.support.scenario import TOOLS, Step, steps
from tests.support.wire import WireLog, wire_stream
from tests.support.wire_servers import WireServer, openai_client
from warmloop import (
    Agent,
    AssistantTurn,
    ConfigurationError,
    Notice,
    ProviderError,
    RequestFailed,
    Run,
    SystemText,
    ToolCall,
    ToolResult,
    Transcript,
    Usage,
    UserText,
    check_pairing,
)
from warmloop.messages import Message
from warmloop.outputs import Outputs
from warmloop.providers.openai.responses import OpenAIResponsesModel
from warmloop.providers.openai.responses_format import DETAILS_KEY, parse_usage
from warmloop.providers.select import resolve_model

MODEL = "gpt-5"
"""The tests' server stands in for OpenAI's own API at a loopback host, so its models ask
for `prompt_cache_key` (`cache_key=True`): another host gets none unless asked (issue 45)."""


def api_error(message: str, kind: str, code: str | None, param: str | None = None) -> Any:
    """An error body as documented (guide: Error codes)."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


RATE_LIMITED = api_error(
    "Rate limit reached for gpt-5 on requests per min.", "requests", "rate_limit_exceeded"
)
BAD_KEY = api_error(
    "Incorrect API key provided: sk-test.", "invalid_request_error", "invalid_api_key"
)


def no_network(request: httpx2.Request) -> httpx2.Response:
    raise AssertionError(f"render-only test sent a request to {request.url}")


# One client for render-only tests: building a client per example would dominate their time.
RENDER_ONLY = AsyncOpenAI(
    api_key="sk-test", http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(no_network))
)


def arguments_of(args: dict[str, Any]) -> str:
    # Spaces after separators: a re-serialised echo would differ from what the model sent.
    return json.dumps(args, separators=(", ", ": "))


def output_items(k: int, step: Step) -> list[dict[str, Any]]:
    """Step k's output items, shaped as documented (see the module docstring)."""
    items: list[dict[str, Any]] = []
    if step.reasoning:
        items.append(
            {
                "id": f"rs_{k:04d}",
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": step.reasoning}],
                "encrypted_content": f"gAAAAB-opaque-{k}-" + "Zm9v" * 8,
            }
        )
    if step.text:
        items.append(
            {
                "id": f"msg_{k:04d}",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": step.text, "annotations": []}],
            }
        )
    for j, (name, args) in enumerate(step.calls):
        items.append(
            {
                "id": f"fc_{k:04d}_{j}",
                "type": "function_call",
                "status": "completed",
                "call_id": f"call_{k}_{j}",
                "name": name,
                "arguments": arguments_of(args),
            }
        )
    return items


def usage_json(total: int, cached: int, written: int | None, output: int) -> dict[str, Any]:
    details = {"cached_tokens": cached}
    if written is not None:  # older responses leave the write count out
        details["cache_write_tokens"] = written
    return {
        "input_tokens": total,
        "input_tokens_details": details,
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": output // 2},
        "total_tokens": total + output,
    }


def usage_for(body: bytes, previous: int) -> dict[str, Any]:
    """Usage as a warm cache would report it: the previous request's tokens are read back,
    in 128-token increments (guide: Prompt caching), the rest half written, half not."""
    total = len(body) // 4
    cached = previous // 128 * 128 if previous >= 1024 else 0
    return usage_json(total, cached, (total - cached) // 2, 40)


def response_body(
    k: int, output: list[dict[str, Any]], usage: dict[str, Any] | None
) -> dict[str, Any]:
    """The Response object (reference: "The response object")."""
    return {
        "id": f"resp_{k:04d}",
        "object": "response",
        "created_at": 1741476542 + k,
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "model": "gpt-5-2025-08-07",
        "output": output,
        "parallel_tool_calls": True,
        "store": False,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage,
    }


@dataclass
class Server:
    """A fake /v1/responses endpoint: request k is answered from step k.

    `failures` are served first, one per attempt (to exercise the SDK's retries).
    """

    script: list[Step]
    wire_log: WireLog
    failures: list[httpx2.Response] = field(default_factory=list)
    bodies: list[dict[str, Any]] = field(default_factory=list)
    outputs: list[list[dict[str, Any]]] = field(default_factory=list)
    usages: list[dict[str, Any]] = field(default_factory=list)
    attempts: int = 0
    previous_tokens: int = 0

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        assert request.url.path == "/v1/responses"
        self.attempts += 1
        body = json.loads(request.content)
        self.wire_log.record(body["prompt_cache_key"], wire_stream(request.content, "input"))
        if self.failures:
            return self.failures.pop(0)
        k = len(self.bodies)
        step = self.script[k]
        output = output_items(k, step)
        usage = usage_for(request.content, self.previous_tokens)
        self.previous_tokens = usage["input_tokens"]
        self.bodies.append(body)
        self.outputs.append(output)
        self.usages.append(usage)
        return httpx2.Response(200, json=response_body(k, output, usage))

    def client(self, wire: WireServer) -> AsyncOpenAI:
        """The SDK's client, its default transport, at a keep-alive loopback `wire` server."""
        return openai_client(wire, self.handler)


def error(status: int, body: dict[str, Any], **headers: str) -> httpx2.Response:
    return httpx2.Response(status, json=body, headers=headers)


def submit_only() -> list[Step]:
    return [Step(calls=(("submit", {"answer": "finished"}),))]


async def run_scenario(
    wire_log: WireLog, wire_server: WireServer
) -> tuple[Server, OpenAIResponsesModel, Run]:
    server = Server(steps(), wire_log)
    model = OpenAIResponsesModel(MODEL, client=server.client(wire_server), cache_key=True)
    run = await Agent(model, tools=TOOLS, max_steps=30).run("Work through the catalog.")
    assert run.outputs.model_dump() == {"answer": "finished"}
    return server, model, run


async def test_thirty_step_session_extends_every_request_and_finishes(
    wire_server: WireServer,
    wire_log: WireLog,
) -> None:
    server, _, run = await run_scenario(wire_log, wire_server)
    transcript = run.transcript
    assert len(server.bodies) == len(run.requests) == len(steps())
    check_pairing(transcript.messages)
    first = server.bodies[0]
    assert first["store"] is False
    assert first["include"] == ["reasoning.encrypted_content"]
    assert [t["name"] for t in first["tools"]] == ["lookup", "add", "explode", "submit"]
    for body in server.bodies:
        assert body["tools"] == first["tools"]
        assert json.dumps(body["tools"]) == json.dumps(first["tools"])  # key order too
        assert body["instructions"] == first["instructions"]
        assert body["prompt_cache_key"] == transcript.id
    for record, usage in zip(run.requests, server.usages, strict=True):
        details = usage["input_tokens_details"]
        assert record.usage.cache_read_tokens == details["cached_tokens"]
        assert record.usage.cache_write_tokens == details["cache_write_tokens"]
        assert record.usage.prompt_tokens == usage["input_tokens"]
        assert record.usage.output_tokens == usage["output_tokens"]
    assert any(r.usage.cache_read_tokens for r in run.requests)


async def test_tool_arguments_and_reasoning_are_echoed_exactly(
    wire_server: WireServer, wire_log: WireLog
) -> None:
    server, _, run = await run_scenario(wire_log, wire_server)
    turns = [m for m in run.transcript.messages if isinstance(m, AssistantTurn)]
    last_input = server.bodies[-1]["input"]
    echoed = [json.dumps(i) for i in last_input]
    for step, turn, output in zip(steps(), turns, server.outputs, strict=True):
        assert [c.arguments for c in turn.tool_calls] == [arguments_of(a) for _, a in step.calls]
        assert turn.reasoning == step.reasoning
        # every earlier output item, reasoning with its encrypted content included, comes
        # back verbatim (same keys, same order) in the last request
        if output is not server.outputs[-1]:
            assert all(json.dumps(item) in echoed for item in output)
    assert sum(1 for i in last_input if i["type"] == "reasoning") == sum(
        1 for s in steps()[:-1] if s.reasoning
    )


async def test_mid_run_notice_stays_in_place(wire_server: WireServer, wire_log: WireLog) -> None:
    server, _, run = await run_scenario(wire_log, wire_server)
    notice = next(m for m in run.transcript.messages if isinstance(m, Notice))
    last = server.bodies[-1]
    wrapped = f"<system-reminder>{notice.text}</system-reminder>"
    assert notice.text not in last["instructions"]
    position = next(i for i, item in enumerate(last["input"]) if item.get("content") == wrapped)
    assert last["input"][position]["role"] == "developer"
    assert last["input"][position - 1]["type"] == "function_call_output"
    assert position == len(last["input"]) - 1  # the newest turn, after the last results
    assert not any(wrapped == item.get("content") for item in server.bodies[-2]["input"])


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        # reference "The response object", a prompt-cache hit (guide: Prompt caching)
        # input_tokens is the whole prompt, as the Responses API counts it (issue 45)
        (usage_json(2006, 1920, 0, 300), Usage(2006, 1920, 0, 300, reasoning_tokens=150)),
        (usage_json(5000, 1024, 3900, 7), Usage(5000, 1024, 3900, 7, reasoning_tokens=3)),
        (usage_json(300, 128, None, 5), Usage(300, 128, 0, 5, reasoning_tokens=2)),
        (None, Usage()),
    ],
)
def test_usage_is_normalised(usage: dict[str, Any] | None, expected: Usage) -> None:
    # The SDK builds responses without validation (`construct`): do as it does.
    response = Response.construct(**response_body(0, [], usage))
    assert parse_usage(response.usage) == expected


async def test_a_rate_limit_is_retried_and_gives_one_turn(
    wire_server: WireServer, wire_log: WireLog
) -> None:
    server = Server(submit_only(), wire_log)
    server.failures.append(error(429, RATE_LIMITED, **{"retry-after-ms": "1"}))
    model = OpenAIResponsesModel(MODEL, client=server.client(wire_server), cache_key=True)
    run = await Agent(model, tools=TOOLS).run("Finish.")
    assert server.attempts == 2
    assert sum(isinstance(m, AssistantTurn) for m in run.transcript.messages) == 1
    assert run.outputs.model_dump() == {"answer": "finished"}


OVERLOADED = api_error("The server is overloaded.", "server_error", None)
NO_MODEL = api_error(
    "The model 'gpt-5' does not exist.", "invalid_request_error", "model_not_found"
)


@pytest.mark.parametrize(
    ("status", "body", "attempts", "message"),
    [
        (503, OVERLOADED, 2, r"HTTP 503 after 1 retries"),
        (429, RATE_LIMITED, 2, r"rate-limited the request after 1 retries"),
        (400, NO_MODEL, 1, r"HTTP 400.*check the model name 'gpt-5'"),
        (403, api_error("No access.", "invalid_request_error", None), 1, r"HTTP 403"),
    ],
)
async def test_errors_fail_once_retries_are_spent_or_at_once_when_final(
    wire_server: WireServer, wire_log: WireLog, status: int, body: Any, attempts: int, message: str
) -> None:
    server = Server(submit_only(), wire_log)
    server.failures.extend(error(status, body, **{"retry-after-ms": "1"}) for _ in range(3))
    model = OpenAIResponsesModel(
        MODEL, client=server.client(wire_server), cache_key=True, max_retries=1
    )
    with pytest.raises(ProviderError, match=message):
        await model.send(model.render(Transcript([UserText("hi")]), []), session_id="s1")
    assert server.attempts == attempts


async def test_a_response_reported_as_failed_is_a_provider_error(
    wire_server: WireServer, wire_log: WireLog
) -> None:
    # Reference "The response object": `status` "failed" with `error` {code, message}.
    failed = response_body(0, [], None) | {
        "status": "failed",
        "error": {"code": "server_error", "message": "The model produced invalid content."},
    }
    server = Server(submit_only(), wire_log, failures=[httpx2.Response(200, json=failed)])
    model = OpenAIResponsesModel(MODEL, client=server.client(wire_server), cache_key=True)
    with pytest.raises(ProviderError, match="invalid content"):
        await model.send(model.render(Transcript([UserText("hi")]), []), session_id="s1")


async def test_a_bad_key_fails_at_once_and_leaves_the_transcript_as_it_was(
    wire_server: WireServer,
    wire_log: WireLog,
) -> None:
    server = Server(submit_only(), wire_log)
    server.failures.append(error(401, BAD_KEY))
    model = OpenAIResponsesModel(MODEL, client=server.client(wire_server), cache_key=True)
    with pytest.raises(RequestFailed, match="OPENAI_API_KEY") as caught:
        await Agent(model, tools=TOOLS).run("Finish.")
    assert "401" in str(caught.value)
    assert server.attempts == 1
    assert [type(m) for m in caught.value.transcript.messages] == [SystemText, UserText]


async def test_options_reach_the_wire(wire_server: WireServer, wire_log: WireLog) -> None:
    server = Server(submit_only(), wire_log)
    model = OpenAIResponsesModel(
        MODEL,
        client=server.client(wire_server),
        cache_key=True,
        prompt_cache_retention="24h",
        reasoning={"effort": "low", "summary": "auto"},
    )
    await Agent(model, tools=TOOLS).run("Finish.")
    body = server.bodies[0]
    assert body["prompt_cache_retention"] == "24h"
    assert body["reasoning"] == {"effort": "low", "summary": "auto"}
    assert body["model"] == MODEL


def test_a_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        OpenAIResponsesModel(MODEL)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    model = resolve_model("openai:gpt-5")
    assert isinstance(model, OpenAIResponsesModel)
    assert model.name == "openai:gpt-5"
    assert model.client.api_key == "sk-from-env"


async def test_a_reloaded_transcript_renders_the_same_bytes(
    wire_server: WireServer, wire_log: WireLog
) -> None:
    _, model, run = await run_scenario(wire_log, wire_server)
    transcript = run.transcript
    specs = Agent(model, tools=TOOLS).tool_specs
    fresh = OpenAIResponsesModel(MODEL, client=model.client)
    before = model.render(transcript, specs)
    after = fresh.render(Transcript.load(transcript.dump()), specs)
    assert json.dumps(after.payload) == json.dumps(before.payload)
    assert after.stream == before.stream


def test_a_turn_from_another_provider_renders_as_function_calls() -> None:
    model = OpenAIResponsesModel(MODEL, client=RENDER_ONLY)
    call = ToolCall("call_0_0", "lookup", '{"key":  "a"}')
    transcript = Transcript(
        [
            SystemText("Be brief."),
            UserText("go"),
            AssistantTurn(text="Looking.", reasoning="hidden", tool_calls=(call,)),
            ToolResult("call_0_0", "lookup", "bad key", is_error=True),
        ]
    )
    rendered = model.render(transcript, [])
    assert rendered.payload["instructions"] == "Be brief."
    assert "tools" not in rendered.payload
    assert rendered.payload["input"] == [
        {"type": "message", "role": "user", "content": "go"},
        {"type": "message", "role": "assistant", "content": "Looking."},
        {
            "type": "function_call",
            "call_id": "call_0_0",
            "name": "lookup",
            "arguments": call.arguments,
        },
        {"type": "function_call_output", "call_id": "call_0_0", "output": "ERROR: bad key"},
    ]


texts = st.text(max_size=12)
messages: st.SearchStrategy[Message] = st.one_of(
    texts.map(UserText),
    texts.map(Notice),
    texts.map(SystemText),
    st.builds(
        lambda text, args: AssistantTurn(
            text=text, tool_calls=(ToolCall("call_1_0", "lookup", args),)
        ),
        texts,
        texts,
    ),
    st.builds(
        lambda args: AssistantTurn(
            provider_details={
                DETAILS_KEY: [{"type": "reasoning", "id": "rs_1", "encrypted_content": args}]
            }
        ),
        texts,
    ),
    texts.map(lambda t: ToolResult("call_1_0", "lookup", t)),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(messages, min_size=1, max_size=12), st.integers(min_value=0, max_value=12))
def test_render_is_append_only_and_the_memo_changes_nothing(
    history: list[Message], cut: int
) -> None:
    memoised = OpenAIResponsesModel(MODEL, client=RENDER_ONLY)
    specs = [Outputs().spec]
    transcript = Transcript(history[:cut], id="t_prop")
    earlier = memoised.render(transcript, specs)
    transcript.extend(history[cut:])
    later = memoised.render(transcript, specs)
    fresh = OpenAIResponsesModel(MODEL, client=RENDER_ONLY).render(transcript, specs)
    assert later.stream.startswith(earlier.stream)
    assert json.dumps(fresh.payload) == json.dumps(later.payload)
    assert fresh.stream == later.stream
    assert later.length == len(later.stream)  # the tracked size, not a join
