"""A prompt over the context window is recognised on every provider, through its SDK, as
ContextWindowExceeded naming the prompt size and the window; the loop then prunes and
retries once. Error bodies are the shapes the providers return (quoted in
`providers/overflow.py`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
import httpx
import httpx2
import pytest
from google import genai
from google.genai import types
from openai import AsyncOpenAI

from warmloop import Agent, ProviderError, RequestFailed, Transcript, call, tool
from warmloop.errors import ContextWindowExceeded
from warmloop.maintenance.planner import MaintenancePolicy
from warmloop.maintenance.prune import PrunePolicy
from warmloop.messages import SystemText, UserText
from warmloop.providers.anthropic.model import AnthropicModel
from warmloop.providers.base import Model
from warmloop.providers.gemini.model import GeminiModel
from warmloop.providers.openai.chat import OpenAIChatModel, OpenAICompatibleModel
from warmloop.providers.openai.responses import OpenAIResponsesModel

ANTHROPIC = {
    "type": "error",
    "error": {
        "type": "invalid_request_error",
        "message": "prompt is too long: 208656 tokens > 200000 maximum",
    },
}
OPENAI = {
    "error": {
        "message": "This model's maximum context length is 128000 tokens. However, your "
        "messages resulted in 204308 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}
GEMINI = {
    "error": {
        "code": 400,
        "message": "The input token count (1200293) exceeds the maximum number of tokens "
        "allowed (1048576).",
        "status": "INVALID_ARGUMENT",
    }
}
LLAMA_SERVER = {
    "error": {
        "code": 400,
        "message": "the request exceeds the available context size, try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 14429,
        "n_ctx": 8192,
    }
}


def anthropic_model(body: dict[str, Any]) -> Model:
    http = httpx2.AsyncClient(
        transport=httpx2.MockTransport(lambda r: httpx2.Response(400, json=body))
    )
    return AnthropicModel(
        "claude-sonnet-4-6", client=anthropic.AsyncAnthropic(api_key="k", http_client=http)
    )


def openai_client(body: dict[str, Any], status: int = 400) -> AsyncOpenAI:
    transport = httpx2.MockTransport(lambda r: httpx2.Response(status, json=body))
    return AsyncOpenAI(
        api_key="k",
        base_url="http://127.0.0.1:9/v1",
        http_client=httpx2.AsyncClient(transport=transport),
        max_retries=0,
    )


def gemini_model(body: dict[str, Any]) -> Model:
    http = httpx.AsyncClient(
        transport=httpx.MockTransport(lambda r: httpx.Response(400, json=body))
    )
    client = genai.Client(api_key="k", http_options=types.HttpOptions(httpx_async_client=http))
    return GeminiModel("gemini-2.5-pro", client=client, retry_delay=0, max_retries=0)


CASES: dict[str, tuple[Callable[[], Model], int | None, int | None]] = {
    "anthropic": (lambda: anthropic_model(ANTHROPIC), 208_656, 200_000),
    "openai-chat": (
        lambda: OpenAIChatModel("gpt-4o", client=openai_client(OPENAI)),
        204_308,
        128_000,
    ),
    "openai-responses": (
        lambda: OpenAIResponsesModel("gpt-5", client=openai_client(OPENAI)),
        204_308,
        128_000,
    ),
    "gemini": (lambda: gemini_model(GEMINI), 1_200_293, 1_048_576),
    "llama-server": (
        lambda: OpenAICompatibleModel("http://127.0.0.1:9/v1", client=openai_client(LLAMA_SERVER)),
        14_429,
        8_192,
    ),
}


@pytest.mark.parametrize("provider", sorted(CASES))
async def test_an_overlong_prompt_is_context_window_exceeded_with_its_sizes(provider: str) -> None:
    make, prompt_tokens, window = CASES[provider]
    model = make()
    rendered = model.render(Transcript([SystemText("s"), UserText("u")]), ())
    with pytest.raises(ContextWindowExceeded) as info:
        await model.send(rendered, session_id="c")
    error = info.value
    assert (error.prompt_tokens, error.window) == (prompt_tokens, window)
    assert f"the prompt has {prompt_tokens:,} tokens" in str(error)
    assert "check the model name" not in str(error)  # not the generic rejection advice


@pytest.mark.parametrize("provider", sorted(CASES))
async def test_a_rejection_naming_the_window_is_learned_on_every_provider(provider: str) -> None:
    make, _, window = CASES[provider]
    with pytest.raises(RequestFailed) as failed:
        await Agent(make(), maintenance=None).run("Answer.")
    # The limit the provider named is a fact of the conversation from now on.
    assert failed.value.transcript.meta.context_window == window


async def test_other_rejections_stay_plain_provider_errors() -> None:
    body = {"error": {"message": "Unknown parameter: 'foo'", "type": "invalid_request_error"}}
    model = OpenAIChatModel("gpt-4o", client=openai_client(body))
    rendered = model.render(Transcript([SystemText("s"), UserText("u")]), ())
    with pytest.raises(ProviderError) as info:
        await model.send(rendered, session_id="c")
    assert not isinstance(info.value, ContextWindowExceeded)


@tool
def read(path: str) -> str:
    """Read a file."""
    return path * 6_000


def test_the_loop_prunes_and_retries_once_on_a_real_overflow_reply() -> None:
    """A Chat server that rejects any body over 12,000 bytes the way OpenAI does."""
    replies = iter([call("read", path=p) for p in "abcd"] + [call("submit", answer="ok")])
    sent: list[int] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(len(request.content))
        if len(request.content) > 12_000:
            return httpx2.Response(400, json=OPENAI)
        reply = next(replies)
        name, arguments = reply.calls[0]
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"c{len(sent)}",
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }
            ],
        }
        return httpx2.Response(
            200,
            json={
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "gpt-4o",
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
                "usage": {
                    "prompt_tokens": len(request.content) // 4,
                    "completion_tokens": 1,
                    "total_tokens": 1,
                },
            },
        )

    transport = httpx2.MockTransport(handler)
    client = AsyncOpenAI(
        api_key="k", http_client=httpx2.AsyncClient(transport=transport), max_retries=0
    )
    policy = MaintenancePolicy(prune=PrunePolicy(tail_tokens=1_000, tail_messages=2))
    model = OpenAIChatModel("gpt-4o", client=client)
    run = Agent(model, [read], maintenance=policy).run_sync("Read a to d.")
    assert run.outputs.model_dump() == {"answer": "ok"}
    assert any(e.reason == "overflow" for e in run.maintenance)
    assert any(size > 12_000 for size in sent)
    assert Transcript.load(run.transcript.dump()) == run.transcript
