"""The conversation's routing key on the wire, through the official openai SDK, its default
transport sending real HTTP/1.1 to a keep-alive loopback server (`wire_server`): where each
host reads it, on every request of a conversation and of its forks, never in the prompt
bytes, never carrying a credential.

Per host (warmloop/providers/routing.py cites each):
- OpenAI (Chat Completions and Responses): `prompt_cache_key` in the body (OpenAI guide
  "Prompt caching"); no session header.
- xAI Chat Completions: the `x-grok-conv-id` header (docs.x.ai, Prompt Caching, "Maximizing
  Cache Hits"); no `prompt_cache_key` (xAI reads it on its Responses API only).
- `openai-compatible:` (vLLM, SGLang, llama.cpp server behind a router): `X-Session-ID`, the
  header vLLM's router hashes first under `consistent_hash` (vllm-project/router,
  docs/load_balancing/README.md); `prompt_cache_key` only when the user asks.
- DeepSeek: neither (its docs list no routing key).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx2
import pytest
from openai import AsyncOpenAI

from tests.support.wire_servers import WireServer, openai_client
from warmloop import Agent, ConfigurationError, Run, Transcript, UserText, tool
from warmloop.cli.model_options import model_options
from warmloop.providers.base import Model
from warmloop.providers.openai.chat import (
    DeepSeekModel,
    OpenAIChatModel,
    OpenAICompatibleModel,
    XAIModel,
)
from warmloop.providers.openai.responses import OpenAIResponsesModel
from warmloop.providers.select import resolve_model

API_KEY = "sk-test-routing-0123456789"
SERVER = "http://127.0.0.1:8080/v1#qwen"


@tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: What to look up.
    """
    return f"{key}=1"


class Host:
    """A Chat Completions host (OpenAI reference, "The chat completion object"): a request
    whose last message is a tool result gets `submit`, any other gets a `lookup` call, so
    every run sends two requests."""

    def __init__(self) -> None:
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        if not request.url.path.endswith("/chat/completions"):
            return httpx2.Response(404)  # the window discovery: this host publishes none
        self.requests.append(request)
        body = json.loads(request.content)
        done = body["messages"][-1]["role"] == "tool"
        name, arguments = ("submit", {"answer": "ok"}) if done else ("lookup", {"key": "k"})
        return self.calling(body, name, arguments)

    def calling(
        self, body: dict[str, Any], name: str, arguments: dict[str, str]
    ) -> httpx2.Response:
        """A completion whose one tool call is `name(**arguments)`."""
        call = {
            "id": f"call_{len(self.requests)}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        reply = {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 1_767_258_000,
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
        return httpx2.Response(200, json=reply)

    def header(self, name: str) -> list[str | None]:
        return [r.headers.get(name) for r in self.requests]

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests]


def client(wire: WireServer, host: Host) -> AsyncOpenAI:
    """The SDK's client at the loopback server `wire`, answering with `host`."""
    return openai_client(wire, host, api_key=API_KEY)


async def runs_of_one_agent(model: Model) -> tuple[Run, Run, Run, Run]:
    """A fresh run, two follow-ups forked from it, and a second fresh run of the same agent."""
    agent = Agent(model, [lookup])
    first = await agent.run("Look up k.")
    fork_a = await agent.run("Again.", history=first.transcript)
    fork_b = await agent.run("Once more.", history=first.transcript)
    fresh = await agent.run("Look up k.")
    return first, fork_a, fork_b, fresh


async def test_every_request_of_a_conversation_and_its_forks_carries_its_key(
    wire_server: WireServer,
) -> None:
    host = Host()
    first, fork_a, fork_b, fresh = await runs_of_one_agent(
        OpenAICompatibleModel(SERVER, client=client(wire_server, host))
    )
    key, other = first.transcript.conversation, fresh.transcript.conversation
    assert len({r.transcript.id for r in (first, fork_a, fork_b, fresh)}) == 4  # four branches
    # Two requests a run: a fork lands where its parent's KV is; a fresh conversation that
    # shares only the agent's opening gets its own key.
    assert host.header("X-Session-ID") == [key] * 6 + [other] * 2
    assert other != key


async def test_the_key_never_enters_the_prompt_bytes_nor_carries_a_credential(
    wire_server: WireServer,
) -> None:
    host = Host()
    first, *_ = await runs_of_one_agent(
        OpenAICompatibleModel(SERVER, client=client(wire_server, host))
    )
    key = first.transcript.conversation
    for request in host.requests:
        assert key.encode() not in request.content
        assert "prompt_cache_key" not in json.loads(request.content)
        assert API_KEY not in request.headers["X-Session-ID"]
        assert request.headers["Authorization"] == f"Bearer {API_KEY}"  # untouched

    # A conversation named with the model's own key is refused before anything is sent.
    model = OpenAICompatibleModel(SERVER, client=client(wire_server, host), api_key=API_KEY)
    rendered = model.render(Transcript([UserText("hi")]), ())
    sent = len(host.requests)
    with pytest.raises(ConfigurationError, match="contains the model's API key"):
        await model.send(rendered, session_id=f"ticket-{API_KEY}")
    with pytest.raises(ConfigurationError, match="is not allowed"):
        await model.send(rendered, session_id="a\r\nX-Injected: 1")
    assert len(host.requests) == sent


async def test_a_user_chosen_header_name_is_honoured_from_python_and_the_cli(
    wire_server: WireServer,
) -> None:
    host = Host()
    options = model_options(SERVER, ("session_header=X-Conversation",))
    model = resolve_model(
        f"openai-compatible:{SERVER}", client=client(wire_server, host), **options
    )
    run = await Agent(model, [lookup]).run("Look up k.")
    assert host.header("X-Conversation") == [run.transcript.conversation] * 2
    assert host.header("X-Session-ID") == [None, None]

    silent = Host()
    options = model_options(SERVER, ("session_header=null",))
    model = resolve_model(
        f"openai-compatible:{SERVER}", client=client(wire_server, silent), **options
    )
    await Agent(model, [lookup]).run("Look up k.")
    assert silent.header("X-Session-ID") == [None, None]
    assert all(run.transcript.conversation.encode() not in r.content for r in silent.requests)


@pytest.mark.parametrize(
    "name", ["Authorization", "x-api-key", "Content-Length", "bad header", "", "a:b", 7]
)
def test_a_header_that_is_no_routing_header_is_refused(name: Any) -> None:
    with pytest.raises(ConfigurationError, match="session_header"):
        OpenAICompatibleModel(SERVER, session_header=name)


@pytest.mark.parametrize(
    "name", ["Upgrade", "TE", "Expect", "Keep-Alive", "Trailer", "proxy-connection"]
)
def test_a_hop_by_hop_header_is_refused_as_the_routing_header(name: str) -> None:
    # A proxy drops or acts on these: the key would never reach the router.
    with pytest.raises(ConfigurationError, match="hop-by-hop"):
        OpenAICompatibleModel(SERVER, session_header=name)


Build = Callable[[AsyncOpenAI], Model]
HOSTS: list[tuple[str, Build, bool, str | None]] = [
    ("openai-chat", lambda c: OpenAIChatModel("gpt-5", client=c, cache_key=True), True, None),
    ("xai", lambda c: XAIModel("grok-4", client=c), False, "x-grok-conv-id"),
    ("openai-compatible", lambda c: OpenAICompatibleModel(SERVER, client=c), False, "X-Session-ID"),
    (
        "openai-compatible asked for prompt_cache_key",
        lambda c: OpenAICompatibleModel(SERVER, client=c, cache_key=True),
        True,
        "X-Session-ID",
    ),
    ("deepseek", lambda c: DeepSeekModel("deepseek-chat", client=c), False, None),
]
ROUTING_HEADERS = ("X-Session-ID", "x-grok-conv-id")


@pytest.mark.parametrize(
    ("build", "in_body", "header"), [h[1:] for h in HOSTS], ids=[h[0] for h in HOSTS]
)
async def test_each_host_gets_the_key_where_it_documents_it_and_nowhere_else(
    wire_server: WireServer, build: Build, in_body: bool, header: str | None
) -> None:
    host = Host()
    first, fork, _, _ = await runs_of_one_agent(build(client(wire_server, host)))
    key = first.transcript.conversation
    expected_body = key if in_body else None
    assert [b.get("prompt_cache_key") for b in host.bodies()[:4]] == [expected_body] * 4
    for name in ROUTING_HEADERS:
        expected = key if name == header else None
        assert host.header(name)[:4] == [expected] * 4, name
    assert fork.transcript.conversation == key


def test_xai_is_selected_by_name_with_its_own_key() -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("XAI_API_KEY", raising=False)
        patch.setenv("OPENAI_API_KEY", "sk-never-sent-to-xai")
        with pytest.raises(ConfigurationError, match="XAI_API_KEY"):
            resolve_model("xai:grok-4")
        patch.setenv("XAI_API_KEY", "xai-key-0123456789")
        model = resolve_model("xai:grok-4")
    assert model.name == "xai:grok-4"
    assert str(model.client.base_url) == "https://api.x.ai/v1/"  # type: ignore[attr-defined]
    assert model.client.api_key == "xai-key-0123456789"  # type: ignore[attr-defined]


async def test_openai_responses_sends_the_key_in_the_body_and_refuses_a_credential_in_it(
    wire_server: WireServer,
) -> None:
    seen: list[httpx2.Request] = []

    def respond(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        # OpenAI reference, "The response object": one message output item and usage.
        return httpx2.Response(
            200,
            json={
                "id": "resp_1",
                "object": "response",
                "created_at": 1_767_258_000,
                "status": "completed",
                "model": "gpt-5",
                "output": [
                    {
                        "id": "msg_1",
                        "type": "message",
                        "role": "assistant",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": "hi", "annotations": []}],
                    }
                ],
                "usage": {"input_tokens": 5, "output_tokens": 1, "total_tokens": 6},
            },
        )

    sdk = openai_client(wire_server, respond, api_key=API_KEY)
    model = OpenAIResponsesModel("gpt-5", client=sdk, cache_key=True)  # OpenAI's stand-in
    rendered = model.render(Transcript([UserText("hi")]), ())
    await model.send(rendered, session_id="ticket-4711")
    assert json.loads(seen[0].content)["prompt_cache_key"] == "ticket-4711"
    assert all(seen[0].headers.get(name) is None for name in ROUTING_HEADERS)
    with pytest.raises(ConfigurationError, match="contains the model's API key"):
        await model.send(rendered, session_id=API_KEY)
    assert len(seen) == 1


class TreeHost(Host):
    """The Chat Completions host of a parent and its sub-agent: the parent (its
    instructions name it) first asks the `explorer` tool, the child looks a key up; each
    submits once its last message is a tool result."""

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        chat = request.url.path.endswith("/chat/completions")
        if chat and body["messages"][-1]["role"] != "tool":
            self.requests.append(request)
            parent = "Plan" in body["messages"][0]["content"]
            if parent:
                return self.calling(body, "explorer", {"task": "k"})
            return self.calling(body, "lookup", {"key": "k"})
        return super().__call__(request)


async def test_a_sub_agent_sends_its_parents_key_where_the_router_reads_one(
    wire_server: WireServer,
) -> None:
    """NVIDIA Dynamo reads `X-Dynamo-Session-ID` and, for a sub-agent's requests,
    `X-Dynamo-Parent-Session-ID` (docs.nvidia.com/dynamo, "Session IDs")."""
    host = TreeHost()

    def model() -> Model:
        return OpenAICompatibleModel(
            SERVER,
            client=client(wire_server, host),
            session_header="X-Dynamo-Session-ID",
            parent_session_header="X-Dynamo-Parent-Session-ID",
        )

    child = Agent(model(), [lookup], name="explorer", instructions="Look things up.")
    parent = Agent(model(), [child.as_tool()], instructions="Plan with the explorer.")
    run = await parent.run("Plan.")

    key = run.transcript.conversation
    [row] = run.children
    assert row.run is not None
    child_key = row.run.transcript.conversation
    sessions = host.header("X-Dynamo-Session-ID")
    parents = host.header("X-Dynamo-Parent-Session-ID")
    # The parent's request, the child's two, the parent's last: only the child's name a parent.
    assert sessions == [key, child_key, child_key, key]
    assert parents == [None, key, key, None]
    assert child_key != key
    assert host.header("X-Session-ID") == [None] * 4
