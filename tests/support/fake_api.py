"""A loopback stand-in for the four model APIs, answering in their documented shapes.

Shapes, from the providers' API references:
- Anthropic Messages: the Message object; "Streaming Messages" (message_start,
  content_block_start/delta/stop, message_delta with usage, message_stop); "Cache
  diagnostics" (`diagnostics.cache_miss_reason` with `type` and
  `cache_missed_input_tokens`, null on a first turn or when nothing diverged).
- OpenAI Chat Completions: the chat completion object; the chunk object, with a final
  usage chunk (empty `choices`) when `stream_options.include_usage` is set, then `[DONE]`.
- OpenAI Responses: the response object (reasoning items with `encrypted_content`,
  function calls); streaming events `response.created`, `response.output_item.done`,
  `response.completed`.
- Gemini: GenerateContentResponse with `usageMetadata`; `streamGenerateContent?alt=sse`
  sends the chunks as server-sent events.

Every reply calls `read_file`, so a client always has a result to append. Usage is that of
a perfect prefix cache per routing key (keyless requests: per first conversation item)
with a 300-second TTL on the shared test clock: cached tokens are the common prefix with the
key's previous request, about four characters a token; none after more than 300 s idle.
The prompt text is built with the tests' own wire helper, not the audit's code.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.loopback import serve_in_thread
from tests.support.wire import wire_stream

TTL = 300.0
NOT_PROMPT = frozenset(
    {"stream", "stream_options", "diagnostics", "max_tokens", "include", "store"}
    | {"prompt_cache_key", "metadata", "user"}
)


class Clock:
    """The test clock: the recorder stamps requests with it, the fake API expires with it."""

    def __init__(self, start: float = 1_767_258_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def prompt_text(body: dict[str, Any]) -> str:
    data = {k: v for k, v in body.items() if k not in NOT_PROMPT}
    key = next(k for k in ("contents", "input", "messages") if k in data)
    return wire_stream(data, key)


def routing(body: dict[str, Any]) -> str:
    for key in ("prompt_cache_key", "user"):
        if isinstance(body.get(key), str):
            return str(body[key])
    metadata = body.get("metadata")
    if isinstance(metadata, dict) and "user_id" in metadata:
        return str(metadata["user_id"])
    items = body.get("contents") or body.get("input") or body.get("messages") or [None]
    return json.dumps(items[0], sort_keys=True)


def sse(events: list[dict[str, Any]], named: bool = False) -> list[bytes]:
    out = []
    for event in events:
        head = f"event: {event['type']}\n" if named else ""
        out.append(f"{head}data: {json.dumps(event)}\n\n".encode())
    return out


@dataclass
class FakeApi:
    """The server's state: the clock, the last prompt per key, Anthropic's fingerprints."""

    clock: Clock
    count: int = 0
    last: dict[str, tuple[float, str]] = field(default_factory=dict)
    fingerprints: dict[str, dict[str, Any]] = field(default_factory=dict)
    gate: threading.Event = field(default_factory=threading.Event)
    gate_opened_in_time: bool | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def usage(self, body: dict[str, Any]) -> tuple[int, int]:
        """(prompt tokens, cached tokens) as a perfect prefix cache with a TTL answers."""
        text = prompt_text(body)
        total = -(-len(text) // 4)
        key = routing(body)
        seen = self.last.get(key)
        cached = 0
        if seen is not None and self.clock() - seen[0] <= TTL:
            cached = min(common_prefix(seen[1], text) // 4, total)
        self.last[key] = (self.clock(), text)
        return total, cached

    def call(self) -> tuple[str, dict[str, str]]:
        self.count += 1
        return f"call_{self.count}", {"path": f"src/module_{self.count}.py"}

    def diagnostics(self, body: dict[str, Any], message_id: str, total: int) -> Any:
        sections = {
            "model": body.get("model"),
            "system": body.get("system"),
            "tools": body.get("tools"),
            "messages": prompt_text({"messages": body["messages"]}),
        }
        self.fingerprints[message_id] = {**sections, "total": total}
        asked = body.get("diagnostics")
        previous = self.fingerprints.get(str((asked or {}).get("previous_message_id")))
        if previous is None:
            return None
        for name in ("model", "system", "tools"):
            if previous[name] != sections[name]:
                return {
                    "cache_miss_reason": {
                        "type": f"{name}_changed",
                        "cache_missed_input_tokens": previous["total"],
                    }
                }
        if not str(sections["messages"]).startswith(str(previous["messages"])):
            return {
                "cache_miss_reason": {
                    "type": "messages_changed",
                    "cache_missed_input_tokens": previous["total"],
                }
            }
        return None

    # -- one builder per API: (JSON body, or the SSE events) --------------------------

    def anthropic(self, body: dict[str, Any]) -> Any:
        total, cached = self.usage(body)
        call_id, arguments = self.call()
        message_id = f"msg_{self.count:04d}"
        marked = "cache_control" in json.dumps(body)
        written = total - cached if marked else 0
        usage = {
            "input_tokens": total - cached - written,
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": cached,
            "output_tokens": 21,
        }
        diagnostics = self.diagnostics(body, message_id, total)
        block = {"type": "tool_use", "id": call_id, "name": "read_file", "input": arguments}
        message = {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [block],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": usage,
            "diagnostics": diagnostics,
        }
        if not body.get("stream"):
            return message
        start = {
            **message,
            "content": [],
            "stop_reason": None,
            "usage": {**usage, "output_tokens": 1},
        }
        delta = {"type": "input_json_delta", "partial_json": json.dumps(arguments)}
        return sse(
            [
                {"type": "message_start", "message": start},
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {**block, "input": {}},
                },
                {"type": "content_block_delta", "index": 0, "delta": delta},
                {"type": "content_block_stop", "index": 0},
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                    "usage": {"output_tokens": 21},
                },
                {"type": "message_stop"},
            ],
            named=True,
        )

    def chat(self, body: dict[str, Any]) -> Any:
        total, cached = self.usage(body)
        call_id, arguments = self.call()
        usage = {
            "prompt_tokens": total,
            "completion_tokens": 12,
            "total_tokens": total + 12,
            "prompt_tokens_details": {"cached_tokens": cached},
        }
        head = {
            "id": f"chatcmpl-{self.count}",
            "created": int(self.clock()),
            "model": body["model"],
        }
        function = {"name": "read_file", "arguments": json.dumps(arguments)}
        if not body.get("stream"):
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": call_id, "type": "function", "function": function}],
            }
            choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
            return {**head, "object": "chat.completion", "choices": [choice], "usage": usage}
        chunk = {**head, "object": "chat.completion.chunk"}
        first = {
            "id": call_id,
            "type": "function",
            "index": 0,
            "function": {**function, "arguments": ""},
        }
        events = [
            {
                **chunk,
                "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [first]}}],
            },
            {
                **chunk,
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "tool_calls": [
                                {"index": 0, "function": {"arguments": function["arguments"]}}
                            ]
                        },
                    }
                ],
            },
            {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
            {**chunk, "choices": [], "usage": usage},
        ]
        return [*sse(events), b"data: [DONE]\n\n"]

    def responses(self, body: dict[str, Any]) -> Any:
        total, cached = self.usage(body)
        call_id, arguments = self.call()
        n = self.count
        output = [
            {
                "id": f"rs_{n}",
                "type": "reasoning",
                "summary": [],
                "encrypted_content": f"gAAAAB-opaque-{n}-" + "Zm9v" * 16,
            },
            {
                "id": f"fc_{n}",
                "type": "function_call",
                "status": "completed",
                "call_id": call_id,
                "name": "read_file",
                "arguments": json.dumps(arguments),
            },
        ]
        response = {
            "id": f"resp_{n}",
            "object": "response",
            "created_at": int(self.clock()),
            "status": "completed",
            "model": body["model"],
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": total,
                "input_tokens_details": {"cached_tokens": cached},
                "output_tokens": 40,
                "output_tokens_details": {"reasoning_tokens": 28},
                "total_tokens": total + 40,
            },
        }
        if not body.get("stream"):
            return response
        opening = {**response, "status": "in_progress", "output": [], "usage": None}
        events = [{"type": "response.created", "sequence_number": 0, "response": opening}]
        for index, item in enumerate(output):
            events.append(
                {
                    "type": "response.output_item.done",
                    "sequence_number": index + 1,
                    "output_index": index,
                    "item": item,
                }
            )
        events.append({"type": "response.completed", "sequence_number": 3, "response": response})
        return sse(events, named=True)

    def gemini(self, body: dict[str, Any], stream: bool) -> Any:
        total, cached = self.usage(body)
        _, arguments = self.call()
        usage = {
            "promptTokenCount": total,
            "cachedContentTokenCount": cached,
            "candidatesTokenCount": 9,
            "totalTokenCount": total + 9,
        }
        part = {"functionCall": {"name": "read_file", "args": arguments}}
        candidate = {"content": {"role": "model", "parts": [part]}, "index": 0}
        reply = {
            "candidates": [{**candidate, "finishReason": "STOP"}],
            "usageMetadata": usage,
            "modelVersion": "gemini-2.5-flash",
            "responseId": f"r{self.count}",
        }
        if not stream:
            return reply
        partial = {**reply, "candidates": [candidate], "usageMetadata": {"promptTokenCount": total}}
        return sse([partial, reply])

    def slow_stream(self) -> Iterator[bytes]:
        """Two events with a wait between them: the second goes out only once the test has
        read the first through the proxy (or after 10 s)."""
        yield b'data: {"n": 1}\n\n'
        self.gate_opened_in_time = self.gate.wait(10)
        yield b'data: {"n": 2}\n\n'


def handler_for(api: FakeApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # as an API's server: no 40 ms wait on a delayed ACK

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            path = self.path.split("?", 1)[0]
            if path == "/slow-stream":
                self.events(api.slow_stream())
                return
            body = json.loads(raw)
            with api.lock:
                route: dict[str, Callable[[], Any]] = {
                    "/v1/messages": lambda: api.anthropic(body),
                    "/v1/chat/completions": lambda: api.chat(body),
                    "/v1/responses": lambda: api.responses(body),
                }
                if ":generateContent" in path or ":streamGenerateContent" in path:
                    reply = api.gemini(body, ":stream" in path)
                else:
                    reply = route[path]()
            if isinstance(reply, list):
                self.events(iter(reply))
            else:
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        def do_GET(self) -> None:
            data = b'{"data": []}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def events(self, chunks: Iterator[bytes]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for chunk in chunks:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")

    return Handler


class FakeServer:
    """The fake API on a free loopback port, served from a thread."""

    def __init__(self, clock: Clock) -> None:
        self.api = FakeApi(clock)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(self.api))
        self.server.daemon_threads = True
        self.thread = serve_in_thread(self.server)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.thread.join()
        self.server.server_close()
