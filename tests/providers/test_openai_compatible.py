"""Chat Completions providers (OpenAI, DeepSeek, OpenAI-compatible servers) through the
official SDK, its default transport sending real HTTP/1.1 to a keep-alive loopback server
(`wire_server`); the timeout and unreachable-server tests keep a mocked transport.

Replies are shaped as each provider documents them:
- OpenAI: API reference "Chat > The chat completion object"
  (https://platform.openai.com/docs/api-reference/chat/object): `id`, `object`, `created`,
  `model`, `choices[].message` with `content` and `tool_calls[].function.arguments` (a raw
  JSON string), `usage.prompt_tokens_details.cached_tokens` (guide: Prompt caching,
  "Monitoring usage"); errors as `{"error": {"message", "type", "param", "code"}}`
  (guide: Error codes).
- DeepSeek: API docs "Create Chat Completion" (https://api-docs.deepseek.com/api/create-
  chat-completion), response `usage.prompt_cache_hit_tokens` / `prompt_cache_miss_tokens`
  (guide: Context Caching) and `message.reasoning_content` (guide: Thinking Mode, "Tool
  Calls": send reasoning_content back on the turns that called tools).
- llama.cpp server: tools/server/README.md, "POST /v1/chat/completions" (OpenAI shape)
  and the `timings` object of "POST /completion" (`prompt_n` evaluated, `cache_n` reused).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx2
import pytest
from openai import AsyncOpenAI

from tests.support.scenario import TOOLS, Step, steps
from tests.support.wire import WireLog, wire_stream
from tests.support.wire_servers import WireServer, openai_client
from warmloop import (
    Agent,
    AssistantTurn,
    ConfigurationError,
    ProviderError,
    RequestFailed,
    SystemText,
    Transcript,
    Usage,
    UserText,
    check_pairing,
)
from warmloop.providers.base import ModelResponse
from warmloop.providers.openai.chat import (
    PLACEHOLDER_KEY,
    ChatCompletionsModel,
    DeepSeekModel,
    OpenAIChatModel,
    OpenAICompatibleModel,
)
from warmloop.providers.select import resolve_model

BASE_URL = "https://api.test/v1"
CHARS_PER_TOKEN = 4
BAD_KEY = {
    "error": {
        "message": "Incorrect API key provided: sk-test. You can find your API key at "
        "https://platform.openai.com/account/api-keys.",
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_api_key",
    }
}
RATE_LIMITED = {
    "error": {
        "message": "Rate limit reached for gpt-5 on requests per min (RPM): Limit 3.",
        "type": "requests",
        "param": None,
        "code": "rate_limit_exceeded",
    }
}
# The SDK ignores a zero delay and falls back to its 0.5 s backoff; 1 ms keeps retries fast.
FAST_RETRY = {"retry-after-ms": "1"}

Handler = Callable[[httpx2.Request], httpx2.Response]


def client_for(wire: WireServer, handler: Handler, *, max_retries: int = 2) -> AsyncOpenAI:
    """An SDK client, its default transport, at the keep-alive loopback server `wire`
    answering with `handler`."""
    return openai_client(wire, handler, max_retries=max_retries)


def mocked_client_for(handler: Handler, *, max_retries: int = 2) -> AsyncOpenAI:
    """An SDK client whose HTTP transport is `handler` (a transport failure to raise)."""
    http = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    return AsyncOpenAI(
        api_key="sk-test", base_url=BASE_URL, http_client=http, max_retries=max_retries
    )


def arguments_of(args: dict[str, Any]) -> str:
    # Spaces after separators: a re-serialised echo would differ from what the model sent.
    return json.dumps(args, separators=(", ", ": "))


def completion(message: dict[str, Any], usage: dict[str, Any], **top: Any) -> dict[str, Any]:
    """A chat completion object (OpenAI reference: "The chat completion object")."""
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
        "object": "chat.completion",
        "created": 1741569952,
        "model": "test-model",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": usage,
        **top,
    }


def message_for(step: Step, k: int, *, reasoning: bool) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": step.text or None}
    if step.calls:
        message["tool_calls"] = [
            {
                "id": f"call_{k}_{j}",
                "type": "function",
                "function": {"name": name, "arguments": arguments_of(args)},
            }
            for j, (name, args) in enumerate(step.calls)
        ]
    if reasoning and step.reasoning:
        message["reasoning_content"] = step.reasoning
    return message


@dataclass(frozen=True)
class Flavour:
    """One provider: how to build the model, and how its docs shape usage and extras."""

    name: str
    build: Callable[[AsyncOpenAI], ChatCompletionsModel]
    usage: Callable[[int, int, int], dict[str, Any]]
    top: Callable[[int, int, int], dict[str, Any]]
    reasoning: bool
    routed: bool
    """`prompt_cache_key` in the body (OpenAI documents it; the others do not)."""
    header: str | None = None
    """The routing header the host reads (`routing`)."""


def openai_usage(prompt: int, cached: int, output: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": output,
        "total_tokens": prompt + output,
        "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def deepseek_usage(prompt: int, cached: int, output: int) -> dict[str, Any]:
    return {
        "completion_tokens": output,
        "prompt_tokens": prompt,
        "prompt_cache_hit_tokens": cached,
        "prompt_cache_miss_tokens": prompt - cached,
        "total_tokens": prompt + output,
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


def plain_usage(prompt: int, cached: int, output: int) -> dict[str, Any]:
    return {"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": prompt + output}


def llama_timings(prompt: int, cached: int, output: int) -> dict[str, Any]:
    return {
        "timings": {
            "cache_n": cached,
            "prompt_n": prompt - cached,
            "prompt_ms": 12.5,
            "prompt_per_token_ms": 0.5,
            "prompt_per_second": 2000.0,
            "predicted_n": output,
            "predicted_ms": 100.0,
            "predicted_per_token_ms": 10.0,
            "predicted_per_second": 100.0,
        }
    }


def no_extras(prompt: int, cached: int, output: int) -> dict[str, Any]:
    return {"system_fingerprint": "fp_test", "service_tier": "default"}


FLAVOURS = [
    Flavour(
        "openai",
        lambda c: OpenAIChatModel("gpt-5", client=c, prompt_cache_retention="24h", cache_key=True),
        openai_usage,
        no_extras,
        reasoning=False,
        routed=True,
    ),
    Flavour(
        "deepseek",
        lambda c: DeepSeekModel("deepseek-reasoner", client=c),
        deepseek_usage,
        lambda p, c, o: {"system_fingerprint": "fp_ds"},
        reasoning=True,
        routed=False,
    ),
    Flavour(
        "llama-server",
        lambda c: OpenAICompatibleModel(
            "http://127.0.0.1:8080/v1#gemma", client=c, context_window=8_192
        ),
        plain_usage,
        llama_timings,
        reasoning=True,
        routed=False,
        header="X-Session-ID",
    ),
]


@dataclass
class FakeProvider:
    """Answers request k with scenario step k, as a perfect prefix cache would bill it."""

    flavour: Flavour
    wire_log: WireLog
    script: list[Step]
    bodies: list[dict[str, Any]] = field(default_factory=list)
    expected: list[Usage] = field(default_factory=list)
    sent_arguments: list[str] = field(default_factory=list)
    headers: list[str | None] = field(default_factory=list)
    previous_prompt: int = 0

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        self.headers.append(request.headers.get(self.flavour.header or "X-Session-ID"))
        self.wire_log.record(self.flavour.name, wire_stream(request.content, "messages"))
        k = len(self.bodies) - 1
        message = message_for(self.script[k], k, reasoning=self.flavour.reasoning)
        self.sent_arguments += [c["function"]["arguments"] for c in message.get("tool_calls", [])]
        prompt = len(request.content) // CHARS_PER_TOKEN
        cached, self.previous_prompt = self.previous_prompt, prompt
        output = len(json.dumps(message)) // CHARS_PER_TOKEN
        self.expected.append(Usage(prompt, cached, 0, output))  # every prompt token
        reply = completion(
            message,
            self.flavour.usage(prompt, cached, output),
            **self.flavour.top(prompt, cached, output),
        )
        return httpx2.Response(200, json=reply)


@pytest.mark.parametrize("flavour", FLAVOURS, ids=lambda f: f.name)
async def test_thirty_step_session_only_appends_on_the_wire(
    wire_server: WireServer, flavour: Flavour, wire_log: WireLog
) -> None:
    # One run per provider (30 SDK round trips); each check below is one documented behaviour.
    script = steps()
    fake = FakeProvider(flavour, wire_log, script)
    run = await Agent(flavour.build(client_for(wire_server, fake)), tools=TOOLS, max_steps=30).run(
        "Go."
    )

    assert run.outputs.model_dump() == {"answer": "finished"}
    assert not run.extracted
    check_pairing(run.transcript.messages)
    assert len(fake.bodies) == 30
    check_tools_block_is_byte_identical(fake.bodies)
    check_arguments_are_echoed_byte_for_byte(fake)
    check_notice_is_rendered_in_place(fake.bodies)
    assert [r.usage for r in run.requests] == fake.expected
    assert run.usage.cache_read_tokens > run.usage.uncached_tokens > 0
    keys = {b.get("prompt_cache_key") for b in fake.bodies}
    assert keys == ({run.transcript.id} if flavour.routed else {None})
    assert set(fake.headers) == ({run.transcript.id} if flavour.header else {None})
    if flavour.reasoning:
        check_reasoning_is_kept_and_echoed(run.transcript, fake.bodies, script)


def check_tools_block_is_byte_identical(bodies: list[dict[str, Any]]) -> None:
    tools = [json.dumps(b["tools"], ensure_ascii=False) for b in bodies]
    assert tools == [tools[0]] * len(bodies)
    names = [t["function"]["name"] for t in bodies[0]["tools"]]
    assert names == ["lookup", "add", "explode", "submit"]


def check_arguments_are_echoed_byte_for_byte(fake: FakeProvider) -> None:
    last = fake.bodies[-1]["messages"]
    echoed = [c["function"]["arguments"] for m in last for c in m.get("tool_calls", [])]
    assert echoed == fake.sent_arguments[:-1]  # all but the final submit's


def check_notice_is_rendered_in_place(bodies: list[dict[str, Any]]) -> None:
    messages = bodies[-1]["messages"]
    notices = [i for i, m in enumerate(messages) if "One step left" in (m["content"] or "")]
    assert notices == [len(messages) - 1]
    assert messages[-1]["role"] == "user"
    assert messages[-1]["content"].startswith("<system-reminder>")
    assert messages[-2]["role"] == "tool"
    assert "One step left" not in messages[0]["content"]
    assert all("One step left" not in json.dumps(b) for b in bodies[:-1])


def check_reasoning_is_kept_and_echoed(
    transcript: Transcript, bodies: list[dict[str, Any]], script: list[Step]
) -> None:
    turns = [m for m in transcript.messages if isinstance(m, AssistantTurn)]
    assert [t.reasoning for t in turns] == [s.reasoning for s in script]
    sent = [m for m in bodies[-1]["messages"] if m["role"] == "assistant"]
    expected = [s.reasoning or None for s in script[:-1]]
    assert [m.get("reasoning_content") for m in sent] == expected


async def test_openai_prompt_cache_retention_is_sent_when_set(
    wire_server: WireServer, wire_log: WireLog
) -> None:
    fake = FakeProvider(FLAVOURS[0], wire_log, steps(2))
    await Agent(FLAVOURS[0].build(client_for(wire_server, fake)), tools=TOOLS).run("Go.")

    assert {b["prompt_cache_retention"] for b in fake.bodies} == {"24h"}


async def test_engine_specific_params_travel_in_the_body(
    wire_server: WireServer, wire_log: WireLog
) -> None:
    fake = FakeProvider(FLAVOURS[2], wire_log, steps(2))
    model = OpenAICompatibleModel(
        "http://127.0.0.1:8080/v1",
        client=client_for(wire_server, fake),
        params={"temperature": 0, "grammar": 'root ::= "x"'},
    )
    await Agent(model, tools=TOOLS).run("Go.")

    assert all(b["grammar"] == 'root ::= "x"' and b["temperature"] == 0 for b in fake.bodies)
    assert {b["model"] for b in fake.bodies} == {"default"}


async def test_text_protocol_parses_replies_and_corrects_bad_ones(
    wire_server: WireServer, wire_log: WireLog
) -> None:
    replies = [
        'Thought: look it up\nAction: {"tool": "lookup", "arguments": {"key": "a"}}',
        "I am not sure what to do.",
        'Thought: done\nAction: {"tool": "submit", "arguments": {"answer": "finished"}}',
    ]
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        bodies.append(json.loads(request.content))
        wire_log.record("text", wire_stream(request.content, "messages"))
        message = {"role": "assistant", "content": replies[len(bodies) - 1]}
        return httpx2.Response(200, json=completion(message, plain_usage(50, 0, 10)))

    model = OpenAICompatibleModel(
        BASE_URL, client=client_for(wire_server, handler), text_protocol=True
    )
    run = await Agent(model, tools=TOOLS).run("Go.")

    assert run.outputs.model_dump() == {"answer": "finished"}
    assert all("tools" not in b and b["stop"] == ["Observation:"] for b in bodies)
    assistant = [m["content"] for m in bodies[-1]["messages"] if m["role"] == "assistant"]
    assert assistant == replies[:2]
    assert "could not be parsed" in bodies[-1]["messages"][-1]["content"]
    turns = [m for m in run.transcript.messages if isinstance(m, AssistantTurn)]
    assert [[c.name for c in t.tool_calls] for t in turns] == [["lookup"], [], ["submit"]]


@pytest.mark.parametrize("status", [429, 503])
async def test_transient_fault_is_retried_and_gives_one_assistant_turn(
    wire_server: WireServer, status: int, wire_log: WireLog
) -> None:
    bodies: list[bytes] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        bodies.append(request.content)
        if len(bodies) == 1:
            return httpx2.Response(status, json=RATE_LIMITED, headers=FAST_RETRY)
        message = message_for(steps(1)[0], 0, reasoning=False)
        return httpx2.Response(200, json=completion(message, plain_usage(40, 0, 9)))

    run = await Agent(OpenAIChatModel("gpt-5", client=client_for(wire_server, handler))).run("Go.")

    assert run.outputs.model_dump() == {"answer": "finished"}
    assert run.transcript.assistant_turns() == 1
    assert len(bodies) == 2
    assert bodies[0] == bodies[1]


async def test_timeout_is_retried(wire_log: WireLog) -> None:
    calls: list[int] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        calls.append(1)
        if len(calls) == 1:
            raise httpx2.ReadTimeout("no bytes", request=request)
        message = message_for(steps(1)[0], 0, reasoning=False)
        return httpx2.Response(200, json=completion(message, plain_usage(40, 0, 9)))

    run = await Agent(OpenAIChatModel("gpt-5", client=mocked_client_for(handler))).run("Go.")

    assert run.transcript.assistant_turns() == 1
    assert len(calls) == 2


async def test_rate_limit_that_outlasts_the_retries_fails_clearly(wire_server: WireServer) -> None:
    calls: list[int] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        calls.append(1)
        return httpx2.Response(429, json=RATE_LIMITED, headers=FAST_RETRY)

    model = OpenAIChatModel("gpt-5", client=client_for(wire_server, handler, max_retries=2))
    with pytest.raises(RequestFailed, match=r"rate limited .*max_retries") as caught:
        await Agent(model).run("Go.")
    assert len(calls) == 3
    assert len(caught.value.transcript) == 2


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (401, BAD_KEY, r"authentication failed \(401\).*OPENAI_API_KEY"),
        (403, BAD_KEY, r"authentication failed \(403\).*OPENAI_API_KEY"),
        (400, BAD_KEY, r"rejected \(400\).*check the model name"),
        (404, BAD_KEY, r"rejected \(404\).*base URL"),
        (422, BAD_KEY, r"rejected \(422\)"),
    ],
)
async def test_final_errors_fail_at_once_with_the_transcript_unchanged(
    wire_server: WireServer, status: int, body: dict[str, Any], expected: str, wire_log: WireLog
) -> None:
    bodies: list[bytes] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        bodies.append(request.content)
        if len(bodies) == 1:
            message = message_for(steps()[0], 0, reasoning=False)
            return httpx2.Response(200, json=completion(message, plain_usage(40, 0, 9)))
        return httpx2.Response(status, json=body)

    seen: list[int] = []
    agent = Agent(OpenAIChatModel("gpt-5", client=client_for(wire_server, handler)), tools=TOOLS)
    agent.on_message = lambda m: seen.append(1)
    with pytest.raises(RequestFailed, match=expected) as caught:
        await agent.run("Go.")
    assert len(bodies) == 2  # no retry
    assert len(caught.value.transcript) == len(seen) == 4  # system, task, call, result
    check_pairing(caught.value.transcript.messages)


async def test_unreachable_server_is_a_provider_error_naming_the_cause() -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("connection refused", request=request)

    model = OpenAICompatibleModel(BASE_URL, client=mocked_client_for(handler, max_retries=0))
    transcript = Transcript([SystemText("s"), UserText("u")])
    with pytest.raises(ProviderError, match=r"cannot connect.*server is running"):
        await model.send(model.render(transcript, []), session_id=transcript.id)


async def reply(
    wire_server: WireServer, body: dict[str, Any], *, model: str = "server"
) -> ModelResponse:
    """Send one request to a transport that answers with `body`; the parsed reply."""
    client = client_for(wire_server, lambda request: httpx2.Response(200, json=body))
    built: ChatCompletionsModel
    if model == "deepseek":
        built = DeepSeekModel("deepseek-reasoner", client=client)
    else:
        built = OpenAICompatibleModel(BASE_URL, client=client)
    transcript = Transcript([SystemText("s"), UserText("u")])
    return await built.send(built.render(transcript, []), session_id=transcript.id)


async def test_openai_usage_with_cached_tokens_as_documented(wire_server: WireServer) -> None:
    # OpenAI guide: Prompt caching, "Monitoring usage" (usage of a cached request).
    usage = {
        "prompt_tokens": 2006,
        "completion_tokens": 300,
        "total_tokens": 2306,
        "prompt_tokens_details": {"cached_tokens": 1920},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }
    got = await reply(wire_server, completion({"role": "assistant", "content": "hi"}, usage))
    assert got.usage == Usage(input_tokens=2006, cache_read_tokens=1920, output_tokens=300)
    assert got.usage.uncached_tokens == 86


async def test_openai_cache_writes_are_not_counted_as_uncached_input(
    wire_server: WireServer,
) -> None:
    # SDK type CompletionUsage.prompt_tokens_details.cache_write_tokens: "prompt tokens
    # written to cache", part of prompt_tokens like cached_tokens.
    usage = {
        "prompt_tokens": 5000,
        "completion_tokens": 20,
        "total_tokens": 5020,
        "prompt_tokens_details": {"cached_tokens": 3000, "cache_write_tokens": 1800},
    }
    got = await reply(wire_server, completion({"role": "assistant", "content": "hi"}, usage))
    assert got.usage == Usage(5000, 3000, 1800, 20)
    assert got.usage.uncached_tokens == 200


async def test_deepseek_hit_and_miss_tokens_and_reasoning_as_documented(
    wire_server: WireServer,
) -> None:
    # DeepSeek "Create Chat Completion" response; Context Caching guide for hit/miss.
    message = {
        "role": "assistant",
        "content": "",
        "reasoning_content": "The user wants the weather, so I call the tool.",
        "tool_calls": [
            {
                "id": "call_00_kZ4lnHh1Zt3WtlIhQsTNbhvC",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"location": "Hangzhou"}'},
            }
        ],
    }
    usage = {
        "prompt_tokens": 1310,
        "completion_tokens": 58,
        "total_tokens": 1368,
        "prompt_tokens_details": {"cached_tokens": 1280},
        "prompt_cache_hit_tokens": 1280,
        "prompt_cache_miss_tokens": 30,
        "completion_tokens_details": {"reasoning_tokens": 31},
    }
    got = await reply(wire_server, completion(message, usage), model="deepseek")
    assert got.usage == Usage(
        input_tokens=1310, cache_read_tokens=1280, output_tokens=58, reasoning_tokens=31
    )
    assert got.turn.reasoning == message["reasoning_content"]
    assert got.turn.provider_details == {
        "chat": {"reasoning_content": message["reasoning_content"]}
    }
    assert got.turn.tool_calls[0].arguments == '{"location": "Hangzhou"}'
    assert got.turn.tool_calls[0].id == "call_00_kZ4lnHh1Zt3WtlIhQsTNbhvC"


async def test_llama_server_timings_give_the_cache_split(wire_server: WireServer) -> None:
    # llama.cpp tools/server/README.md: `timings.cache_n` reused, `timings.prompt_n` evaluated.
    body = completion(
        {"role": "assistant", "content": "hi"},
        plain_usage(237, 0, 35),
        **llama_timings(237, 236, 35),
    )
    got = await reply(wire_server, body)
    assert got.usage == Usage(input_tokens=237, cache_read_tokens=236, output_tokens=35)
    assert got.usage.uncached_tokens == 1  # prompt_n: what the server evaluated


async def test_server_without_usage_reports_its_timings(wire_server: WireServer) -> None:
    body = completion({"role": "assistant", "content": "hi"}, {}, **llama_timings(90, 80, 7))
    del body["usage"]
    got = await reply(wire_server, body)
    assert got.usage == Usage(input_tokens=90, cache_read_tokens=80, output_tokens=7)


async def test_tool_call_without_an_id_gets_a_deterministic_one(wire_server: WireServer) -> None:
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "", "type": "function", "function": {"name": "add", "arguments": "{}"}},
            {"id": "", "type": "function", "function": {"name": "add", "arguments": "{ }"}},
        ],
    }
    got = await reply(wire_server, completion(message, plain_usage(10, 0, 5)))
    assert [(c.id, c.arguments) for c in got.turn.tool_calls] == [
        ("call_0_0", "{}"),
        ("call_0_1", "{ }"),
    ]


async def test_reply_without_choices_is_a_provider_error(wire_server: WireServer) -> None:
    body = completion({"role": "assistant", "content": "x"}, plain_usage(1, 0, 1))
    body["choices"] = []
    with pytest.raises(ProviderError, match="no choices"):
        await reply(wire_server, body)


def test_openai_and_deepseek_need_their_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        OpenAIChatModel("gpt-5")
    with pytest.raises(ConfigurationError, match="DEEPSEEK_API_KEY"):
        DeepSeekModel("deepseek-chat")
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-ds")
    model = DeepSeekModel("deepseek-chat")
    assert str(model.client.base_url).startswith("https://api.deepseek.com")
    assert model.client.api_key == "sk-ds"


def test_compatible_server_needs_no_key_and_never_gets_the_openai_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-secret")
    model = OpenAICompatibleModel("http://127.0.0.1:8000/v1")
    assert model.client.api_key == PLACEHOLDER_KEY
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "sk-local")
    assert OpenAICompatibleModel("http://127.0.0.1:8000/v1").client.api_key == "sk-local"


def test_selection_strings_build_the_right_models(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-ds")
    server = resolve_model("openai-compatible:http://10.0.0.5:8000/v1#Qwen/Qwen3-8B")
    assert isinstance(server, OpenAICompatibleModel)
    assert server.name == "openai-compatible:http://10.0.0.5:8000/v1#Qwen/Qwen3-8B"
    assert str(server.client.base_url) == "http://10.0.0.5:8000/v1/"
    transcript = Transcript([SystemText("s"), UserText("u")])
    assert server.render(transcript, []).payload["model"] == "Qwen/Qwen3-8B"
    plain = resolve_model("openai-compatible:http://localhost:11434/v1")
    assert plain.render(transcript, []).payload["model"] == "default"
    assert resolve_model("openai-chat:gpt-5").name == "openai-chat:gpt-5"
    assert resolve_model("deepseek:deepseek-chat").name == "deepseek:deepseek-chat"


@pytest.mark.parametrize("spec", ["localhost:8080", "ftp://host/v1", "http://", "#model"])
def test_a_server_spec_without_a_base_url_is_rejected(spec: str) -> None:
    with pytest.raises(ConfigurationError, match="base URL"):
        OpenAICompatibleModel(spec)
