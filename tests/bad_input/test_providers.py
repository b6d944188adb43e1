"""Every provider through its official SDK with the HTTP transport mocked, against the faults
real APIs produce: 400, 401 (whose body echoes the key), 403, 404, 413, 429 with
retry-after (lasting, and passing), 500, 503 then fine, 529 (Anthropic's overloaded),
connection refused, read timeout, and 200s that are truncated, HTML, empty or without
usage. A fault the SDK cannot retry away is a RequestFailed saying what happened, with the
transcript as it was before the request; a passing one leaves exactly one turn.

Error bodies as documented: OpenAI "Error codes", Anthropic "Errors" (`overloaded_error`
is 529), Gemini troubleshooting "Error codes"; retry hints as `retry-after-ms` (OpenAI and
Anthropic SDKs) and `Retry-After` (RFC 9110, read by warmloop's Gemini retries).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anthropic
import httpx2
import pytest
from google import genai
from google.genai import types
from openai import AsyncOpenAI

from tests.bad_input.harness import (
    LIVENESS_SECONDS,
    SECRET,
    Outcome,
    check_outcome,
    exercise,
    expect,
)
from tests.support.fake_servers import ToolUse
from tests.support.wire_servers import WireServer, connect, scripted
from warmloop import Agent, Run, RunError, WarmloopError
from warmloop.providers.anthropic.model import AnthropicModel
from warmloop.providers.base import Model
from warmloop.providers.gemini.model import GeminiModel
from warmloop.providers.openai.chat import OpenAICompatibleModel
from warmloop.providers.openai.responses import OpenAIResponsesModel

Reply = httpx2.Response | Exception
SUBMIT_ARGS = {"answer": "done"}


def chat_ok() -> dict[str, Any]:
    function = {"name": "submit", "arguments": json.dumps(SUBMIT_ARGS)}
    calls = [{"id": "c1", "type": "function", "function": function}]
    message = {"role": "assistant", "content": None, "tool_calls": calls}
    usage = {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55}
    return {"id": "x", "object": "chat.completion", "created": 1, "model": "m"} | {
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": usage,
    }


def responses_ok() -> dict[str, Any]:
    item = {"type": "function_call", "id": "fc1", "call_id": "c1", "name": "submit"}
    item |= {"arguments": json.dumps(SUBMIT_ARGS), "status": "completed"}
    usage = {"input_tokens": 50, "input_tokens_details": {"cached_tokens": 0}}
    usage |= {"output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0}}
    return {"id": "r", "object": "response", "created_at": 1, "model": "gpt-5"} | {
        "status": "completed",
        "output": [item],
        "usage": usage | {"total_tokens": 55},
    }


def anthropic_ok() -> dict[str, Any]:
    block = {"type": "tool_use", "id": "toolu_1", "name": "submit", "input": SUBMIT_ARGS}
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "c"} | {
        "content": [block],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 50, "output_tokens": 5},
    }


def gemini_ok() -> dict[str, Any]:
    part = {"functionCall": {"name": "submit", "args": SUBMIT_ARGS}}
    content = {"role": "model", "parts": [part]}
    return {"candidates": [{"content": content, "finishReason": "STOP", "index": 0}]} | {
        "usageMetadata": {"promptTokenCount": 50, "candidatesTokenCount": 5}
    }


def openai_error(status: int, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": None}}


def anthropic_error(status: int, message: str) -> dict[str, Any]:
    kinds = {401: "authentication_error", 429: "rate_limit_error", 529: "overloaded_error"}
    return {"type": "error", "error": {"type": kinds.get(status, "api_error"), "message": message}}


def gemini_error(status: int, message: str) -> dict[str, Any]:
    return {"error": {"code": status, "message": message, "status": "ERROR"}}


@dataclass
class Endpoint:
    """A mocked API: serves `replies` in order (the last one from then on)."""

    replies: list[Reply]
    served: int = 0
    answered: int = 0  # 200s with a usable body

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.served += 1
        reply = self.replies[min(self.served, len(self.replies)) - 1]
        if isinstance(reply, Exception):
            raise reply
        return reply

    def http(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self))


@dataclass(frozen=True)
class Provider:
    build: Callable[[Endpoint], Model]
    ok: Callable[[], dict[str, Any]]
    error: Callable[[int, str], dict[str, Any]]
    retry_header: dict[str, str] = field(default_factory=dict)


PROVIDERS: dict[str, Provider] = {
    "chat": Provider(
        lambda e: OpenAICompatibleModel(
            "http://server.test/v1#m",
            context_window=32_768,  # told: the faults are the request's, not discovery's
            client=AsyncOpenAI(
                api_key=SECRET,
                base_url="http://server.test/v1",
                http_client=e.http(),
                max_retries=1,
            ),
        ),
        chat_ok,
        openai_error,
        {"retry-after-ms": "1"},
    ),
    "responses": Provider(
        lambda e: OpenAIResponsesModel(
            "gpt-5", client=AsyncOpenAI(api_key=SECRET, http_client=e.http(), max_retries=1)
        ),
        responses_ok,
        openai_error,
        {"retry-after-ms": "1"},
    ),
    "anthropic": Provider(
        lambda e: AnthropicModel(
            "claude-sonnet-4-6",
            client=anthropic.AsyncAnthropic(api_key=SECRET, http_client=e.http(), max_retries=1),
        ),
        anthropic_ok,
        anthropic_error,
        {"retry-after-ms": "1"},
    ),
    "gemini": Provider(
        lambda e: GeminiModel(
            "gemini-2.5-flash",
            client=genai.Client(
                api_key=SECRET, http_options=types.HttpOptions(httpx_async_client=e.http())
            ),
            max_retries=1,
            retry_delay=0,
        ),
        gemini_ok,
        gemini_error,
        {"Retry-After": "0"},
    ),
}


def status(code: int, text: str = "") -> Callable[[Provider], list[Reply]]:
    def replies(p: Provider) -> list[Reply]:
        body = p.error(code, text or f"status {code} for key {SECRET}")
        return [httpx2.Response(code, json=body, headers=p.retry_header)]

    return replies


def then_ok(code: int) -> Callable[[Provider], list[Reply]]:
    return lambda p: [*status(code)(p), httpx2.Response(200, json=p.ok())]


def raw(reply: Reply | Callable[[Provider], Reply]) -> Callable[[Provider], list[Reply]]:
    return lambda p: [reply(p) if callable(reply) else reply]


def without_usage(p: Provider) -> Reply:
    body = p.ok()
    for key in ("usage", "usageMetadata"):
        body.pop(key, None)
    return httpx2.Response(200, json=body)


FAULTS: dict[str, tuple[Callable[[Provider], list[Reply]], str]] = {
    "400": (status(400), "RequestFailed:400"),
    "401-echoing-the-key": (status(401), "RequestFailed:401"),
    "403": (status(403), "RequestFailed:403"),
    "404": (status(404), "RequestFailed:404"),
    "413": (status(413, "request too large"), "RequestFailed:413"),
    "429-lasting": (status(429), "RequestFailed:429"),
    "429-then-ok": (then_ok(429), "ok"),
    "500": (status(500), "RequestFailed:500"),
    "503-then-ok": (then_ok(503), "ok"),
    "529-overloaded": (status(529), "RequestFailed:529"),
    "connection-refused": (raw(httpx2.ConnectError("Connection refused")), "RequestFailed:"),
    "read-timeout": (raw(httpx2.ReadTimeout("timed out")), "RequestFailed:"),
    "200-truncated-json": (
        raw(
            httpx2.Response(
                200, content=b'{"id": "x", "cho', headers={"content-type": "application/json"}
            )
        ),
        "RequestFailed:not JSON",
    ),
    "200-html": (
        raw(httpx2.Response(200, text="<html>Bad Gateway</html>")),
        "RequestFailed:not JSON",
    ),
    "200-empty-body": (
        raw(httpx2.Response(200, content=b"", headers={"content-type": "application/json"})),
        "RequestFailed:not JSON",
    ),
    "200-empty-object": (raw(httpx2.Response(200, json={})), "RequestFailed:"),
    "200-without-usage": (raw(without_usage), "ok"),
    "200-carrying-an-error": (
        raw(httpx2.Response(200, json={"error": {"message": "the model is loading", "code": 503}})),
        "RequestFailed:the model is loading",
    ),
}
# Anthropic's Message requires usage; the Gemini SDK reads an empty body as an empty
# response, which has no candidate.
DIFFERENT = {
    ("anthropic", "200-without-usage"): "RequestFailed:no `usage`",
    ("gemini", "200-empty-body"): "RequestFailed:no candidate",
    ("gemini", "200-empty-object"): "RequestFailed:no candidate",
    # The Gemini SDK drops an `error` field it does not declare: the server's words are lost.
    ("gemini", "200-carrying-an-error"): "RequestFailed:no candidate",
}


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("provider", list(PROVIDERS))
async def test_provider_fault(provider: str, fault: str) -> None:
    chosen = PROVIDERS[provider]
    replies, expected = FAULTS[fault]
    expected = DIFFERENT.get((provider, fault), expected)
    endpoint = Endpoint(replies(chosen))
    outcome = await exercise(Agent(chosen.build(endpoint)), "Answer.")
    answered = 1 if expected == "ok" else None
    check_outcome(outcome, answered=answered)
    expect(outcome, expected)
    if expected.startswith("RequestFailed"):
        assert outcome.transcript is not None
        assert [m.kind for m in outcome.transcript] == ["system", "user"]


async def test_a_self_hosted_host_that_refuses_undocumented_fields_still_answers() -> None:
    # From recorded traffic (issue 19): a strict OpenAI-compatible host answers 400 to a body
    # field it does not know, and `prompt_cache_key` is one no such host documents. The key
    # travels in the `X-Session-ID` header instead, which unknown-header rules never reject.
    def strict(request: httpx2.Request) -> httpx2.Response:
        if "prompt_cache_key" in json.loads(request.content):
            error = {"message": "Unrecognized request argument supplied: prompt_cache_key"}
            return httpx2.Response(400, json={"error": error | {"type": "invalid_request_error"}})
        assert request.headers["X-Session-ID"]
        return httpx2.Response(200, json=chat_ok())

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(strict))
    client = AsyncOpenAI(api_key=SECRET, base_url="http://127.0.0.1:9/v1", http_client=http)
    model = OpenAICompatibleModel("http://127.0.0.1:9/v1#m", client=client, context_window=8192)
    outcome = await exercise(Agent(model), "Answer.")
    check_outcome(outcome, answered=1)
    expect(outcome, "ok")


# Round three (issue 30): a 429's Retry-After in the fleet. A hint of inf, nan or 1e309 is
# no wait a client can keep; a key's fleet-wide pause stays bounded; a NaN or infinite
# pause already stored never outlasts the next real one.

IMPOSSIBLE_HINTS = ["inf", "nan", "1e309", "-inf", "Infinity"]


@pytest.mark.parametrize("hint", IMPOSSIBLE_HINTS)
def test_an_impossible_retry_after_is_no_hint(hint: str) -> None:
    from warmloop.providers.failures import hinted_wait

    assert hinted_wait({"retry-after": hint}) is None
    assert hinted_wait({"retry-after-ms": hint}) is None


@pytest.mark.parametrize("stored", [float("inf"), float("nan"), 1e300])
def test_a_stored_pause_of_any_size_holds_a_key_back_an_hour_at_most(stored: float) -> None:
    from warmloop.fleet.window import MAX_PAUSE_SECONDS, Limit, wait_seconds

    wait = wait_seconds([], 1000.0, Limit(requests_per_minute=10), 1, stored)
    assert 0.0 <= wait <= MAX_PAUSE_SECONDS


def test_the_fleet_limiter_bounds_a_pause_and_lets_a_real_one_replace_a_nan() -> None:
    import asyncio
    import secrets

    pytest.importorskip("dbos", reason="the fleet needs DBOS: pip install 'warmloop[fleet]'")
    from tests.support.stores import _server_url, admin, with_database
    from warmloop.fleet.ratelimit import SharedLimiter
    from warmloop.fleet.window import MAX_PAUSE_SECONDS

    server = _server_url()
    name = "warmloop_fleet_" + secrets.token_hex(4)
    admin(server, f"CREATE DATABASE {name}")
    limiter = SharedLimiter(with_database(server, name), clock=lambda: 1000.0)
    try:

        def paused(key: str) -> float:
            row = limiter._db.execute(
                "SELECT paused_until FROM warmloop_limits.keys WHERE key = %s", (key,)
            ).fetchone()
            assert row is not None
            return float(row[0])

        asyncio.run(limiter.pause("forever", float("inf")))
        assert paused("forever") == 1000.0 + MAX_PAUSE_SECONDS
        asyncio.run(limiter.pause("nan", float("nan")))
        limiter._pause("nan", float("nan"))  # as an unchecked earlier warmloop stored it
        asyncio.run(limiter.pause("nan", 5.0))
        assert paused("nan") == 1005.0
    finally:
        limiter.close()
        admin(server, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


# Round three (issue 30): loops


async def test_a_responses_host_at_a_base_url_that_refuses_undocumented_fields_answers(
    wire_server: WireServer,
) -> None:
    # A Responses-compatible host (Bedrock's) reached through `openai:` with a base_url got
    # OpenAI's `prompt_cache_key` on every request; a strict host refuses a field it does not
    # document. Sent there only when asked (`cache_key=True`).
    answer = scripted([ToolUse("submit", SUBMIT_ARGS), ToolUse("submit", SUBMIT_ARGS)])

    def strict(request: httpx2.Request) -> httpx2.Response:
        if "prompt_cache_key" in json.loads(request.content):
            error = {"message": "Unrecognized request argument supplied: prompt_cache_key"}
            return httpx2.Response(400, json={"error": error | {"type": "invalid_request_error"}})
        return answer(request)

    wire_server.serve(strict)
    outcome = await exercise(Agent(connect(wire_server, "openai", api_key=SECRET)), "Answer.")
    check_outcome(outcome, answered=1)
    expect(outcome, "ok")
    asked = connect(wire_server, "openai", cache_key=True)
    wire_server.serve(answer)
    assert (await Agent(asked).run("Answer.")).outputs.model_dump()["answer"] == "done"
    assert "prompt_cache_key" in wire_server.bodies("/responses")[-1]


@pytest.mark.parametrize("how", ["OPENAI_BASE_URL", "client", "client-function"])
async def test_no_prompt_cache_key_goes_to_a_host_named_outside_base_url(
    how: str, wire_server: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # From recorded traffic (issue 45): only the `base_url=` argument was checked, so a
    # gateway named by OPENAI_BASE_URL or by a passed client still got OpenAI's
    # `prompt_cache_key`, which a strict host refuses. The client's own URL decides.
    from openai import AsyncOpenAI

    from warmloop.providers.select import resolve_model

    answer = scripted([ToolUse("submit", SUBMIT_ARGS)])
    wire_server.serve(answer)
    url = f"{wire_server.url}/v1"
    options: dict[str, Any] = {}
    if how == "OPENAI_BASE_URL":
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        options["api_key"] = SECRET
    elif how == "client":
        options["client"] = AsyncOpenAI(api_key=SECRET, base_url=url)
    else:
        options["client"] = lambda: AsyncOpenAI(api_key=SECRET, base_url=url)
    model = resolve_model("openai:gpt-5", **options)
    assert (await Agent(model).run("Answer.")).outputs.model_dump()["answer"] == "done"
    (body,) = wire_server.bodies("/responses")
    assert "prompt_cache_key" not in body


@pytest.mark.parametrize("how", ["base_url", "OPENAI_BASE_URL", "client"])
async def test_no_prompt_cache_key_goes_from_openai_chat_to_another_host(
    how: str, wire_server: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `openai-chat:` sent OpenAI's `prompt_cache_key` to any host, `base_url=` included
    # (issue 45's probe found it on `openai:`); the client's own host decides on both.
    from openai import AsyncOpenAI

    from warmloop.providers.select import resolve_model

    wire_server.serve(scripted([ToolUse("submit", SUBMIT_ARGS)]))
    url = f"{wire_server.url}/v1"
    options: dict[str, Any] = {"api_key": SECRET}
    if how == "base_url":
        options["base_url"] = url
    elif how == "OPENAI_BASE_URL":
        monkeypatch.setenv("OPENAI_BASE_URL", url)
    else:
        options = {"client": AsyncOpenAI(api_key=SECRET, base_url=url)}
    model = resolve_model("openai-chat:gpt-5", **options)
    assert (await Agent(model).run("Answer.")).outputs.model_dump()["answer"] == "done"
    (body,) = wire_server.bodies("/chat/completions")
    assert "prompt_cache_key" not in body
    keyed = resolve_model("openai-chat:gpt-5", api_key=SECRET, base_url=url, cache_key=True)
    wire_server.serve(scripted([ToolUse("submit", SUBMIT_ARGS)]))
    await Agent(keyed).run("Answer.")
    assert "prompt_cache_key" in wire_server.bodies("/chat/completions")[-1]


# Issue 32: streams


STREAM_FAULTS = ["cut", "stops", "malformed", "no-usage"]
"""A stream cut mid-event (the connection closes inside one), one that stops cleanly
between events before the one that closes it, one with a line whose data is not JSON, and
one without the documented usage (Anthropic's `message_start`/`message_delta` usage,
Responses' `response.completed` usage, Chat's usage chunk, Gemini's `usageMetadata`)."""
STREAM_OUTCOMES = {
    "cut": "RequestFailed:the connection closed before the whole reply arrived",
    "stops": "RequestFailed:the stream ended before its",
    "malformed": "RequestFailed:event's data is not JSON",
    # A documented Anthropic stream always carries usage; the SDK cannot build the
    # message without it. The other wires state their fallback: no usage is no tokens, as a
    # non-streamed reply without usage is read.
    "no-usage": "ok",
}
ANTHROPIC_NO_USAGE = "RequestFailed:malformed stream: the events do not make a message"


def broken_stream(fault: str, handler: Callable[[httpx2.Request], httpx2.Response]) -> Any:
    """`handler`'s streamed replies, broken by `fault` (see STREAM_FAULTS)."""

    def broken(request: httpx2.Request) -> httpx2.Response:
        response = handler(request)
        raw = response.read()
        if not response.headers.get("content-type", "").startswith("text/event-stream"):
            return response
        blocks = [block for block in raw.decode().split("\n\n") if block]
        headers = {"content-type": "text/event-stream"}
        if fault == "cut":  # ten bytes into the third event, then the connection closes
            sent = raw[: raw.index(blocks[2].encode()) + 10]
            return httpx2.Response(
                200, headers=headers | {"content-length": str(len(raw))}, content=sent
            )
        if fault == "stops":  # the first half of its events, none of them the closing one
            blocks = blocks[: len(blocks) // 2]
        elif fault == "malformed":
            blocks[2] = blocks[2].split("data: ")[0] + "data: {not json"
        elif fault == "no-usage":
            blocks = [b for b in (usage_dropped(block) for block in blocks) if b]
        return httpx2.Response(
            200, headers=headers, content=("\n\n".join(blocks) + "\n\n").encode()
        )

    return broken


def usage_dropped(block: str) -> str:
    head, _, data = block.rpartition("data: ")
    if data == "[DONE]":
        return block
    event = json.loads(data)
    if event.get("choices") == [] and "usage" in event:  # Chat's usage chunk
        return ""
    event.pop("usage", None)
    event.pop("usageMetadata", None)
    for key in ("message", "response"):
        if isinstance(event.get(key), dict):
            event[key].pop("usage", None)
    return head + "data: " + json.dumps(event)


async def streamed(agent: Agent) -> Outcome:
    """`exercise`, through `agent.iter`: how the run ended."""

    async def read() -> Run:
        async with agent.iter("Answer.") as events:
            async for _ in events:
                pass
        return events.run

    try:
        run = await asyncio.wait_for(read(), LIVENESS_SECONDS)
    except WarmloopError as exc:
        transcript = exc.transcript if isinstance(exc, RunError) else None
        return Outcome(error=exc, transcript=transcript)
    return Outcome(run=run, transcript=run.transcript)


@pytest.mark.parametrize("fault", STREAM_FAULTS)
@pytest.mark.parametrize("prefix", ["anthropic", "openai", "openai-chat", "gemini"])
async def test_a_broken_stream_is_a_clear_error_or_the_stated_fallback(
    wire_server: WireServer, prefix: str, fault: str
) -> None:
    reply = ToolUse("submit", SUBMIT_ARGS, text="Answering.", cache_read=7)
    wire_server.serve(broken_stream(fault, scripted([reply])))
    model = connect(wire_server, prefix, api_key=SECRET, max_retries=0)
    outcome = await streamed(Agent(model))
    check_outcome(outcome, answered=1 if outcome.error is None else 0)
    no_usage = ANTHROPIC_NO_USAGE if prefix == "anthropic" else STREAM_OUTCOMES[fault]
    expect(outcome, no_usage if fault == "no-usage" else STREAM_OUTCOMES[fault])
    if outcome.run is not None:  # the fallback: no usage read as no tokens
        assert outcome.run.requests[0].usage.cache_read_tokens == 0


class OnlyComments(BaseHTTPRequestHandler):
    """A server whose reply is an event stream of SSE comments (keep-alives), one every
    `EVERY` seconds and never an event, until the client goes or the test says stop."""

    protocol_version = "HTTP/1.1"
    stop = threading.Event()
    EVERY = 0.05

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        comment = b": keep-alive\n\n"
        try:
            while not self.stop.wait(self.EVERY):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(comment), comment))
                self.wfile.flush()
        except OSError:
            pass  # the client went: what the test waits for
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.mark.parametrize("prefix", ["openai-compatible", "openai"])
async def test_keep_alive_comments_never_hold_a_stream_past_its_timeout(prefix: str) -> None:
    # Probe (issue 45): with `timeout=5`, a server sending an SSE comment every second kept
    # `agent.iter` running forever, the timeout bounding only silence. Each event must come
    # within the timeout; comments are no event.
    server = ThreadingHTTPServer(("127.0.0.1", 0), OnlyComments)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    OnlyComments.stop.clear()
    try:
        if prefix == "openai":
            model: Model = OpenAIResponsesModel(
                "gpt-5", api_key=SECRET, base_url=url, timeout=0.5, max_retries=0
            )
        else:
            model = OpenAICompatibleModel(f"{url}#m", timeout=0.5, max_retries=0)
        outcome = await streamed(Agent(model))
    finally:
        OnlyComments.stop.set()
        server.shutdown()
        server.server_close()
    expect(outcome, "RequestFailed:sent no event for 0.5 s")
