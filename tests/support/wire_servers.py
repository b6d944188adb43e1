"""The `wire_server` fixture: a loopback server that keeps its connections alive, as every
real API does, and speaks each provider's documented wire, for the provider tests.

It answers over HTTP/1.1 keep-alive (a client's pooled connection is reused across
requests, and across runs), so a model whose client outlives an event loop meets a pooled
connection of that loop here, as it would in production. What it answers is a handler with
the signature of an httpx `MockTransport` handler (request in, response out): a test's own
handler, or `scripted(replies)`, which answers each request in the wire of the path it came
to: Anthropic Messages (`/v1/messages`, "Create a Message"), Chat Completions
(`.../chat/completions`, "The chat completion object"), Responses (`/v1/responses`, "The
response object"), Gemini (`/v1beta/models/{model}:generateContent`,
GenerateContentResponse); a request that asks for a stream (`"stream": true`, Gemini's
`:streamGenerateContent?alt=sse`) is answered with the same reply as that wire's documented
server-sent events (`wire_streams`). A handler's response that declares a Content-Length
past its body is cut short: the server sends the body it has and closes the connection.
`hold(predicate)` leaves the matching requests unanswered until the test ends (a stalled
server), setting `held` when one arrives. `hold_last_event()` sends every streamed reply
but its last event, then waits for `release_last` (set by the test) before the rest, so a
test can see what reached the caller before the server's last byte. `connections` counts
the TCP connections it accepted, `closed` those the client has closed since (`wait_closed`
waits for them), `most_open` the most that were open at once.
`serving()` is the same server outside a fixture (one a test module shares).

`connect(server, prefix)` builds the model a selection prefix names, pointed at the server
with the options that provider's selection takes (`base_url`, `api_key`);
`openai_client`, `anthropic_client` and `gemini_client` build an official SDK's client with
its default transport, pointed at the server answering with a test's handler (a Gemini
handler speaks `httpx`, the google-genai SDK's own, the others `httpx2`). A handler that
raises (a failed assertion on what it received) is answered with a 500 and fails the test
at teardown: what a handler asserts still holds.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anthropic
import httpx
import httpx2
import pytest
from google import genai
from google.genai import types
from openai import AsyncOpenAI

from tests.support.fake_servers import Failure, Reply, Said, ToolUse
from tests.support.loopback import serve_in_thread
from tests.support.wire_streams import event_stream
from warmloop.providers.base import Model
from warmloop.providers.select import resolve_model

Handler = Callable[[httpx2.Request], httpx2.Response]
HttpxHandler = Callable[[httpx.Request], httpx.Response]
Predicate = Callable[[str, dict[str, Any]], bool]

CLOSE_GUARD = 30.0
"""Seconds `wait_closed` waits: only a bound on a hang, never a measure."""
PROVIDERS = ("openai", "openai-chat", "deepseek", "openai-compatible", "anthropic", "gemini")
"""Every selection prefix whose SDK speaks HTTP to an API (`connect` builds each)."""
OPENAI_SDK = ("openai", "openai-chat", "deepseek", "openai-compatible")
MODEL_NAMES = {
    "openai": "gpt-5",
    "openai-chat": "gpt-5",
    "deepseek": "deepseek-chat",
    "anthropic": "claude-sonnet-4-6",
    "gemini": "gemini-2.5-flash",
}


@dataclass
class WireServer:
    """The server's state: its handler, what it received, how many connections it saw."""

    handler: Handler
    url: str = ""
    received: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    connections: int = 0
    closed: int = 0
    most_open: int = 0
    holding: Predicate | None = None
    held: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    errors: list[BaseException] = field(default_factory=list)
    holding_last: bool = False
    release_last: threading.Event = field(default_factory=threading.Event)
    last_unreleased: bool = False
    """A held last event went out without the test releasing it (the hang guard ran out)."""

    def __post_init__(self) -> None:
        self.changed = threading.Condition(self.lock)

    def wait_closed(self) -> bool:
        """Wait until the client has closed every connection it opened; whether it did (a
        close takes milliseconds: CLOSE_GUARD only bounds waiting on one that never comes)."""
        with self.changed:
            return self.changed.wait_for(lambda: self.closed == self.connections, CLOSE_GUARD)

    def serve(self, handler: Handler) -> str:
        """Answer with `handler` from now on; the base URL."""
        self.handler = handler
        return self.url

    def serve_httpx(self, handler: HttpxHandler) -> str:
        """Answer with a handler written for `httpx` (google-genai's HTTP library)."""

        def adapted(request: httpx2.Request) -> httpx2.Response:
            asked = httpx.Request(
                request.method, str(request.url), headers=request.headers, content=request.content
            )
            answer = handler(asked)
            return httpx2.Response(
                answer.status_code, headers=answer.headers.multi_items(), content=answer.read()
            )

        return self.serve(adapted)

    def hold(self, predicate: Predicate) -> None:
        """Never answer a request `predicate(path, body)` picks, until the test ends."""
        self.holding = predicate

    def hold_last_event(self) -> None:
        """Hold each streamed reply's last event until the test sets `release_last`."""
        self.holding_last = True

    def requests(self) -> list[dict[str, Any]]:
        """The bodies of the model requests received (on a wire's path), in order."""
        return [body for path, body in self.received if is_wire_path(path)]

    def bodies(self, ending: str = "") -> list[dict[str, Any]]:
        """The JSON bodies received on paths ending with `ending`, in order."""
        return [body for path, body in self.received if path.endswith(ending)]


def _handler_class(state: WireServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: the client's pool reuses the connection
        disable_nagle_algorithm = True  # as an API's server: no 40 ms wait on a delayed ACK

        def setup(self) -> None:
            super().setup()
            with state.lock:
                state.connections += 1
                state.most_open = max(state.most_open, state.connections - state.closed)

        def finish(self) -> None:  # the client closed the connection (or the server did)
            super().finish()
            with state.changed:
                state.closed += 1
                state.changed.notify_all()

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self.answer(b"")

        def do_POST(self) -> None:
            self.answer(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

        def answer(self, raw: bytes) -> None:
            path = self.path.split("?", 1)[0]
            body = json.loads(raw) if raw else {}
            with state.lock:
                state.received.append((path, body))
            if state.holding is not None and state.holding(path, body):
                state.held.set()
                state.released.wait()
                self.close_connection = True
                return
            request = httpx2.Request(
                self.command, f"{state.url}{self.path}", headers=dict(self.headers), content=raw
            )
            try:
                response = state.handler(request)
                data = response.read()
            except Exception as failure:  # the test's handler failed: the test fails
                with state.lock:
                    state.errors.append(failure)
                response = httpx2.Response(500, json={"error": {"message": repr(failure)}})
                data = response.read()
            # A declared length past the body is a reply cut short: send what there is, close.
            length = max(len(data), int(response.headers.get("content-length") or 0))
            self.send_response(response.status_code)
            for name, value in response.headers.items():
                if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                    self.send_header(name, value)
            self.send_header("Content-Length", str(length))
            self.end_headers()
            cut_short = length > len(data)
            streamed = "event-stream" in response.headers.get("content-type", "")
            if state.holding_last and streamed:
                cut = data.rstrip(b"\n").rfind(b"\n\n") + 2
                self.wfile.write(data[:cut])
                self.wfile.flush()
                if not state.release_last.wait(timeout=30):  # a hang guard only
                    state.last_unreleased = True
                data = data[cut:]
            self.wfile.write(data)
            if cut_short:
                self.close_connection = True

    return Handler


class _Listening(ThreadingHTTPServer):
    request_queue_size = 1024
    """As an API's front end takes a burst: http.server's backlog of 5 reset connections
    when a proxy opened a hundred at once."""


@contextmanager
def serving() -> Iterator[WireServer]:
    """A keep-alive loopback server (see the module docstring), answering `scripted([])`
    until its handler is set; held requests are released when it stops."""
    state = WireServer(scripted([]))
    server = _Listening(("127.0.0.1", 0), _handler_class(state))
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = serve_in_thread(server)
    try:
        yield state
    finally:
        state.released.set()
        server.shutdown()
        thread.join()
        server.server_close()
    if state.errors:
        raise AssertionError(f"the wire server's handler failed: {state.errors[0]!r}") from (
            state.errors[0]
        )


@pytest.fixture
def wire_server() -> Iterator[WireServer]:
    """A keep-alive loopback server for one test (`serving`)."""
    with serving() as state:
        yield state


def connect(server: WireServer, prefix: str, **options: Any) -> Model:
    """The model `prefix` selects, pointed at `server` (a test key, the base URL its SDK
    appends the documented paths to)."""
    if prefix == "openai-compatible":
        return resolve_model(f"openai-compatible:{server.url}/v1#served-model", **options)
    base = server.url if prefix in ("anthropic", "gemini") else f"{server.url}/v1"
    options = {"api_key": "sk-test-key", "base_url": base, **options}
    return resolve_model(f"{prefix}:{MODEL_NAMES[prefix]}", **options)


def openai_client(server: WireServer, handler: Handler, **options: Any) -> AsyncOpenAI:
    """The OpenAI SDK's client, its default transport, at `server` answering with `handler`."""
    options = {"api_key": "sk-test", **options}
    return AsyncOpenAI(base_url=f"{server.serve(handler)}/v1", **options)


def anthropic_client(
    server: WireServer, handler: Handler, **options: Any
) -> anthropic.AsyncAnthropic:
    """The Anthropic SDK's client, its default transport, at `server` answering with `handler`."""
    options = {"api_key": "sk-test", **options}
    return anthropic.AsyncAnthropic(base_url=server.serve(handler), **options)


def gemini_client(server: WireServer, handler: HttpxHandler, **options: Any) -> genai.Client:
    """The google-genai SDK's client, its default transport, at `server` answering with
    `handler` (written for `httpx`)."""
    options = {"api_key": "test-key", **options}
    http_options = types.HttpOptions(base_url=server.serve_httpx(handler))
    return genai.Client(http_options=http_options, **options)


# -- scripted answers, in each wire ---------------------------------------------------

WIRE_PATHS = ("/messages", "/chat/completions", "/responses")


def is_wire_path(path: str) -> bool:
    """Whether `path` is where one of the four wires takes a model request (streamed or
    not)."""
    return path.endswith(WIRE_PATHS) or path.endswith(
        (":generateContent", ":streamGenerateContent")
    )


def scripted(replies: Sequence[Reply | Said]) -> Handler:
    """Answer request n with reply n in the wire of its path (a 400 past the script);
    GETs (a server's model list) with an empty list, other paths (an engine's own
    discovery routes) with a 404."""

    def reply(n: int, body: str) -> Reply | Said:
        return replies[n - 1] if n <= len(replies) else Failure(400, f"no reply {n}")

    return _answering(reply)


def by_request(choose: Callable[[str], Reply | Said]) -> Handler:
    """Answer each model request with `choose(its body)`, as `scripted` answers: a reply
    chosen by what was asked, whatever order the requests come in (concurrent runs)."""
    return _answering(lambda n, body: choose(body))


def _answering(choose: Callable[[int, str], Reply | Said]) -> Handler:
    """A handler: GETs answered with an empty list, paths of no wire with a 404, model
    request n with `choose(n, its body)` in the wire of its path."""
    lock = threading.Lock()
    count = 0

    def handler(request: httpx2.Request) -> httpx2.Response:
        nonlocal count
        path = request.url.path
        if request.method == "GET":
            return httpx2.Response(200, json={"object": "list", "data": []})
        if not is_wire_path(path):
            return httpx2.Response(404, json={"error": {"message": f"no route {path}"}})
        with lock:
            count += 1
            n = count
        reply = choose(n, request.content.decode())
        if isinstance(reply, Failure):
            error = {"type": "invalid_request_error", "message": reply.message}
            return httpx2.Response(reply.status, json={"type": "error", "error": error})
        body = json.loads(request.content)
        whole = _wire_reply(path, body, reply, n)
        if body.get("stream") is True or path.endswith(":streamGenerateContent"):
            headers = {"content-type": "text/event-stream"}
            return httpx2.Response(200, headers=headers, content=event_stream(path, whole))
        return httpx2.Response(200, json=whole)

    return handler


def _wire_reply(path: str, body: dict[str, Any], reply: ToolUse | Said, n: int) -> dict[str, Any]:
    """Reply n in the wire of `path`: the reply's text (when it has any) before its call (a
    `Said` has none), and usage whose prompt holds the reply's cache reads and writes."""
    called = isinstance(reply, ToolUse)
    name = reply.name if isinstance(reply, ToolUse) else ""
    given = reply.arguments if isinstance(reply, ToolUse) else {}
    arguments = json.dumps(given)
    tokens = len(json.dumps(body)) // 4 + 1  # the prompt's size, as a keep-alive prices it
    read, written = reply.cache_read, reply.cache_write
    if path.endswith("/messages"):
        block = {"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": given}
        text = [{"type": "text", "text": reply.text}] if reply.text else []
        usage: dict[str, Any] = {"input_tokens": tokens, "output_tokens": 10}
        if read or written:
            usage |= {"cache_read_input_tokens": read, "cache_creation_input_tokens": written}
        return {
            "id": f"msg_{n}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model"),
            "content": [*text, block] if called else text,
            "stop_reason": "tool_use" if called else "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }
    if path.endswith("/chat/completions"):
        call = {
            "id": f"call_{n}",
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if called:
            message["tool_calls"] = [call]
        prompt = tokens + read + written
        chat_usage: dict[str, Any] = {
            "prompt_tokens": prompt,
            "completion_tokens": 10,
            "total_tokens": prompt + 10,
        }
        if read or written:
            details = {"cached_tokens": read, "cache_write_tokens": written}
            chat_usage["prompt_tokens_details"] = details
        finish = "tool_calls" if called else "stop"
        return {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": chat_usage,
        }
    if path.endswith("/responses"):
        item = {
            "id": f"fc_{n}",
            "type": "function_call",
            "status": "completed",
            "call_id": f"call_{n}",
            "name": name,
            "arguments": arguments,
        }
        said = {
            "id": f"msg_{n}",
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
        }
        cached: dict[str, Any] = {"cached_tokens": read}
        if written:
            cached["cache_write_tokens"] = written
        prompt = tokens + read + written
        return {
            "id": f"resp_{n}",
            "object": "response",
            "created_at": 0,
            "status": "completed",
            "model": body.get("model"),
            "output": [*([said] if reply.text else []), *([item] if called else [])],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": prompt,
                "input_tokens_details": cached,
                "output_tokens": 10,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": prompt + 10,
            },
        }
    if ":generateContent" in path or ":streamGenerateContent" in path:
        part = {"functionCall": {"name": name, "args": given}}
        parts = [*([{"text": reply.text}] if reply.text else []), *([part] if called else [])]
        metadata: dict[str, Any] = {
            "promptTokenCount": tokens + read,
            "candidatesTokenCount": 10,
            "totalTokenCount": tokens + read + 10,
        }
        if read:
            metadata["cachedContentTokenCount"] = read
        return {
            "candidates": [
                {"content": {"role": "model", "parts": parts}, "index": 0, "finishReason": "STOP"}
            ],
            "usageMetadata": metadata,
            "modelVersion": "gemini-2.5-flash",
            "responseId": f"r{n}",
        }
    raise AssertionError(f"no wire is served at {path}")
